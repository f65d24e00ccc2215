//! Messages: the conversation's timeline, plus the hidden columns the turn
//! loop needs to rebuild a provider transcript and to resume after a crash
//! (the model's call id, which model step a message came from, the serving
//! tool server, a provider signature, and when a tool started and finished).

use super::error::StoreError;
use app::models::{ApprovalOutcome, ApprovalStatus, Message, Role, ToolCall};

/// A message to append.
#[derive(Clone, Debug)]
pub(crate) struct NewMessage {
    pub(crate) role: Role,
    pub(crate) content: String,
    pub(crate) tool_call: Option<ToolCall>,
    /// The model's id for a tool call.
    pub(crate) call_id: Option<String>,
    /// The model step (one LLM answer) this message came from.
    pub(crate) step: Option<String>,
    /// Provider data to send back with a call (Gemini's thought signature).
    pub(crate) signature: Option<String>,
    /// The pipeline node that wrote it, and which run of that node.
    pub(crate) node: Option<NodeTag>,
}

/// The pipeline node a message belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NodeTag {
    /// The node's name (shown in the UI).
    pub(crate) name: String,
    /// The run key (path plus loop iterations), which scopes the node's own
    /// steps within a turn.
    pub(crate) run: String,
}

impl NewMessage {
    /// A plain text message.
    pub(crate) fn text(role: Role, content: impl Into<String>) -> Self {
        NewMessage {
            role,
            content: content.into(),
            tool_call: None,
            call_id: None,
            step: None,
            signature: None,
            node: None,
        }
    }

    /// A user's message; `client_id` is the id its client gave it (A2A
    /// `messageId`), kept in `call_id`, which a user's message has no
    /// other use for.
    pub(crate) fn user(content: impl Into<String>, client_id: Option<String>) -> Self {
        NewMessage {
            call_id: client_id,
            ..NewMessage::text(Role::User, content)
        }
    }

    /// The same message, tagged with a pipeline node.
    pub(crate) fn in_node(mut self, node: Option<&NodeTag>) -> Self {
        self.node = node.cloned();
        self
    }
}

/// A message with the turn loop's hidden columns.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StoredMessage {
    pub(crate) message: Message,
    pub(crate) call_id: Option<String>,
    pub(crate) step: Option<String>,
    pub(crate) signature: Option<String>,
    pub(crate) started_at: Option<String>,
    pub(crate) finished_at: Option<String>,
    /// The node run it belongs to (pipelines only).
    pub(crate) node_run: Option<String>,
}

impl StoredMessage {
    /// A user's message as [`Store::messages`](super::facade::Store::messages)
    /// reads it back: its one hidden column is the id its client gave it
    /// (kept in `call_id`); it has no step, signature, node run or times.
    pub(crate) fn of_user(message: Message) -> StoredMessage {
        StoredMessage {
            call_id: message.client_id.clone(),
            message,
            step: None,
            signature: None,
            started_at: None,
            finished_at: None,
            node_run: None,
        }
    }

    /// A tool call the turn has not answered yet.
    pub(crate) fn is_unanswered_call(&self) -> bool {
        self.message
            .tool_call
            .as_ref()
            .is_some_and(|t| t.result.is_none())
    }
}

/// The columns of a new message computed from it, whichever backend
/// writes it.
pub(super) struct Encoded {
    /// The list item's preview (`None` for a message without text).
    pub(crate) preview: Option<String>,
    pub(crate) tool_call: Option<String>,
    pub(crate) server: Option<String>,
    pub(crate) node: Option<String>,
    pub(crate) node_run: Option<String>,
}

impl NewMessage {
    /// The message as both backends store it: a NUL (U+0000), which
    /// PostgreSQL's text cannot hold, becomes U+FFFD. A user's text with
    /// one is refused before it gets here (`engine::commands::decide`); a model's or
    /// a tool's is kept this way rather than failing the turn after the
    /// tool ran.
    pub(super) fn storable(mut self) -> Self {
        if self.content.contains('\0') {
            self.content = self.content.replace('\0', "\u{FFFD}");
        }
        self
    }

    pub(super) fn encoded(&self) -> Result<Encoded, StoreError> {
        let (node, node_run) = match &self.node {
            Some(t) => (Some(t.name.clone()), Some(t.run.clone())),
            None => (None, None),
        };
        Ok(Encoded {
            preview: (!self.content.is_empty()).then(|| {
                self.content
                    .chars()
                    .take(app::models::PREVIEW_CHARS)
                    .collect()
            }),
            tool_call: self
                .tool_call
                .as_ref()
                .map(serde_json::to_string)
                .transpose()
                .map_err(|e| StoreError::Corrupt(e.to_string()))?,
            server: self.tool_call.as_ref().and_then(|t| t.server.clone()),
            node,
            node_run,
        })
    }
}

impl Encoded {
    /// The message as stored under `id` at `ts`.
    pub(super) fn message(self, m: NewMessage, id: String, ts: String) -> Message {
        Message {
            id,
            client_id: m.call_id.filter(|_| m.role == Role::User),
            role: m.role,
            content: m.content,
            tool_call: m.tool_call,
            node: self.node,
            created_at: ts,
        }
    }
}

/// The stored tool call `raw` with its result set, as JSON to store;
/// `None` when there is no call or it already has a result (a result is
/// written once).
pub(super) fn with_result(
    message_id: &str,
    raw: Option<String>,
    result: &str,
    is_error: bool,
) -> Result<Option<String>, StoreError> {
    let Some(raw) = raw else { return Ok(None) };
    let mut call: ToolCall = serde_json::from_str(&raw)
        .map_err(|e| StoreError::Corrupt(format!("message {message_id}: {e}")))?;
    if call.result.is_some() {
        return Ok(None);
    }
    call.result = Some(result.to_string());
    call.is_error = Some(is_error);
    serde_json::to_string(&call)
        .map(Some)
        .map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// A message's columns as stored, whichever backend read them.
pub(super) struct RawMessage {
    pub(crate) id: String,
    pub(crate) role: String,
    pub(crate) content: String,
    pub(crate) tool_call: Option<String>,
    pub(crate) created_at: String,
    pub(crate) started_at: Option<String>,
    pub(crate) finished_at: Option<String>,
    pub(crate) approval: Option<RawOutcome>,
    pub(crate) node: Option<String>,
    /// `call_id`: on a user's message, the id its client gave it.
    pub(crate) client_id: Option<String>,
}

/// The columns of the approval a call ran under.
pub(super) struct RawOutcome {
    pub(crate) uuid: String,
    pub(crate) status: String,
    pub(crate) reason: Option<String>,
    pub(crate) decided_by: Option<String>,
    pub(crate) decided_at: Option<String>,
    pub(crate) requested_by: Option<String>,
    pub(crate) decided_via: Option<String>,
    /// JSON, when an approver edited the arguments.
    pub(crate) edited_args: Option<String>,
}

/// Milliseconds between two stored timestamps.
pub(super) fn millis_between(start: &str, end: &str) -> Option<u64> {
    let s = chrono::DateTime::parse_from_rfc3339(start).ok()?;
    let e = chrono::DateTime::parse_from_rfc3339(end).ok()?;
    u64::try_from((e - s).num_milliseconds()).ok()
}

impl RawMessage {
    pub(super) fn decode(self) -> Result<Message, StoreError> {
        let role = Role::parse(&self.role)
            .ok_or_else(|| StoreError::Corrupt(format!("unknown message role {:?}", self.role)))?;
        let tool_call = self
            .tool_call
            .map(|t| serde_json::from_str::<ToolCall>(&t))
            .transpose()
            .map_err(|e| StoreError::Corrupt(format!("message {}: tool_call: {e}", self.id)))?
            .map(|mut tc| {
                if let (Some(s), Some(e)) = (&self.started_at, &self.finished_at) {
                    tc.duration_ms = millis_between(s, e);
                }
                if let Some(a) = self.approval {
                    tc.approval = Some(ApprovalOutcome {
                        uuid: a.uuid,
                        status: ApprovalStatus::parse(&a.status).unwrap_or(ApprovalStatus::Pending),
                        reason: a.reason,
                        requested_by: a.requested_by,
                        decided_by: a.decided_by,
                        decided_via: a.decided_via,
                        decided_at: a.decided_at,
                        edited_arguments: a.edited_args.and_then(|s| serde_json::from_str(&s).ok()),
                    });
                }
                tc
            });
        Ok(Message {
            id: self.id,
            client_id: self.client_id.filter(|_| role == Role::User),
            role,
            content: self.content,
            tool_call,
            node: self.node,
            created_at: self.created_at,
        })
    }
}
