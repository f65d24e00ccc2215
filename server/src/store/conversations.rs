//! Conversations: the page a list asks for and the page it gets, and the
//! decoders of a conversation's columns and a list item's that both
//! backends share. The statements are in `sqlite/conversations.rs` and
//! `postgres/conversations.rs`.

use super::error::StoreError;
use app::models::{
    Conversation, ConversationItem, ConversationStatus, MessagePreview, Role, Summary,
};

/// Which page of `list` to read.
#[derive(Clone, Debug, Default)]
pub(crate) struct PageRequest {
    /// At most this many (the caller validates the range).
    pub(crate) limit: u32,
    /// Only conversations older than this cursor (an opaque position).
    pub(crate) before: Option<i64>,
    pub(crate) status: Option<ConversationStatus>,
    /// Only conversations with a message containing this text (any case).
    pub(crate) text: Option<String>,
}

/// One page, newest first: whole conversations or list items.
#[derive(Clone, Debug)]
pub(crate) struct Page<T = Conversation> {
    pub(crate) conversations: Vec<T>,
    /// The position to pass as `before` for the next page; `None` on the last page.
    pub(crate) next: Option<i64>,
}

/// A conversation just inserted (`id`, `session_id`, at `ts`), as both
/// backends return it.
pub(super) fn fresh(id: String, session_id: &str, ts: String) -> Conversation {
    Conversation {
        id,
        session_id: session_id.to_string(),
        status: ConversationStatus::Active,
        messages: Vec::new(),
        pending_approval: None,
        pending_question: None,
        pipeline_state: None,
        context_id: None,
        created_at: ts.clone(),
        updated_at: ts,
        running: false,
    }
}

impl<T> Page<T> {
    /// A page from up to `fetch` rows `(seq, value)` read newest first,
    /// where `fetch` is one more than the page holds: a last row says there
    /// is a next page, which starts after the page's last `seq`.
    pub(super) fn of_rows(
        mut rows: Vec<(i64, Result<T, StoreError>)>,
        fetch: i64,
    ) -> Result<Page<T>, StoreError> {
        let has_more = rows.len() as i64 == fetch;
        if has_more {
            rows.pop();
        }
        let next = if has_more {
            rows.last().map(|(seq, _)| *seq)
        } else {
            None
        };
        let conversations = rows
            .into_iter()
            .map(|(_, c)| c)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Page {
            conversations,
            next,
        })
    }
}

/// A `LIKE` pattern (with `\` as the escape) matching `text` anywhere,
/// its own `%` and `_` taken literally.
pub(super) fn like_pattern(text: &str) -> String {
    let escaped = text
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    format!("%{escaped}%")
}

/// A list item's columns as stored, whichever backend read them.
pub(super) struct ItemRow {
    pub(crate) id: String,
    pub(crate) session_id: String,
    pub(crate) status: String,
    pub(crate) created_at: String,
    pub(crate) updated_at: String,
    pub(crate) context_id: Option<String>,
    pub(crate) message_count: i64,
    pub(crate) title: Option<String>,
    pub(crate) last_role: Option<String>,
    pub(crate) last_content: Option<String>,
    pub(crate) has_pipeline_run: bool,
}

impl ItemRow {
    /// The item, or a corruption error naming the conversation.
    pub(super) fn decode(self) -> Result<ConversationItem, StoreError> {
        let last_message = match (self.last_role, self.last_content) {
            (Some(role), Some(content)) => Some(MessagePreview {
                role: Role::parse(&role).ok_or_else(|| {
                    StoreError::Corrupt(format!("conversation {}: unknown role {role:?}", self.id))
                })?,
                content,
            }),
            _ => None,
        };
        Ok(ConversationItem {
            status: status_of(&self.id, &self.status)?,
            id: self.id,
            session_id: self.session_id,
            created_at: self.created_at,
            updated_at: self.updated_at,
            context_id: self.context_id,
            message_count: self.message_count.max(0) as u64,
            title: self.title,
            last_message,
            pending_approval: None,
            has_pipeline_run: self.has_pipeline_run,
        })
    }
}

/// A stored status, or a corruption error naming the conversation.
fn status_of(id: &str, status: &str) -> Result<ConversationStatus, StoreError> {
    ConversationStatus::parse(status)
        .ok_or_else(|| StoreError::Corrupt(format!("conversation {id}: unknown status {status:?}")))
}

/// The summary of kept `(status, count)` rows.
pub(super) fn summary_of(counts: Vec<(String, i64)>) -> Result<Summary, StoreError> {
    let mut s = Summary::default();
    for (status, n) in counts {
        let n = n.max(0) as u64;
        s.total += n;
        match ConversationStatus::parse(&status) {
            Some(ConversationStatus::Active) => s.active += n,
            Some(ConversationStatus::WaitingApproval) => s.waiting_approval += n,
            Some(ConversationStatus::WaitingInput) => s.waiting_input += n,
            Some(ConversationStatus::Completed) => s.completed += n,
            Some(ConversationStatus::Failed) => s.failed += n,
            Some(ConversationStatus::Cancelled) => s.cancelled += n,
            None => {
                return Err(StoreError::Corrupt(format!(
                    "unknown conversation status {status:?}"
                )));
            }
        }
    }
    Ok(s)
}

/// A page of tasks in one state: `(seq, id)` newest first, and the count
/// of all of them.
#[derive(Clone, Debug, Default)]
pub(crate) struct TasksInState {
    pub(crate) page: Vec<(i64, String)>,
    pub(crate) total: u64,
}

/// A conversation's own columns as stored, whichever backend read them.
pub(super) struct HeadRow {
    pub(crate) id: String,
    pub(crate) session_id: String,
    pub(crate) status: String,
    pub(crate) pipeline_state: Option<String>,
    pub(crate) created_at: String,
    pub(crate) updated_at: String,
    pub(crate) context_id: Option<String>,
    pub(crate) running: bool,
}

impl HeadRow {
    /// The conversation without messages, or a corruption error naming it.
    pub(super) fn decode(self) -> Result<Conversation, StoreError> {
        let id = self.id;
        let status = status_of(&id, &self.status)?;
        let pipeline_state = self
            .pipeline_state
            .map(|s| serde_json::from_str(&s))
            .transpose()
            .map_err(|e| StoreError::Corrupt(format!("conversation {id}: pipeline_state: {e}")))?;
        Ok(Conversation {
            id,
            session_id: self.session_id,
            status,
            messages: Vec::new(),
            pending_approval: None,
            pending_question: None,
            pipeline_state,
            context_id: self.context_id,
            created_at: self.created_at,
            updated_at: self.updated_at,
            running: self.running,
        })
    }
}
