//! Questions as rows (QUESTIONS.md §2-§3): what a tool asked the human, its
//! status, and, for a 2026-07-28 round, what the retry needs (the request's
//! key, the server's opaque `requestState`, the responses the agent gave by
//! itself), stored before anything is shown, so an answer given after a
//! restart retries the call once.
//!
//! Rows of one round share `round`; the call is retried when none of them
//! is pending. A question asked on a live session (`era = session`) is
//! answered on that session; after a restart it can only be `cancelled`.
//!
//! Like approvals, every transition is a conditional `UPDATE … WHERE status
//! = 'pending'` in the caller's transaction: two answers cannot both win.

use super::audit::Event;
use super::error::StoreError;
use crate::domain::channel::Channel;
use crate::domain::ids::new_id;
use crate::domain::ids::now;
use app::models::{Question, QuestionCall, QuestionKind, QuestionStatus};
use serde_json::{Map, Value};

/// A remote task a cancelled proxy question or approval waited on:
/// `(agent, task id)`.
pub(crate) type RemoteTask = (String, String);

/// How the question reached us.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Era {
    /// An MRTR round (2026-07-28): the call returned and is retried.
    Round,
    /// `elicitation/create` on a live session: the call waits in flight.
    Session,
    /// A sub-agent's task waits for the answer (A2A `input-required` with
    /// a `question`): the delegation rests, and the answer is sent on.
    Proxy,
}

impl Era {
    fn as_str(self) -> &'static str {
        match self {
            Era::Round => "round",
            Era::Session => "session",
            Era::Proxy => "proxy",
        }
    }

    /// Whether the call rests (nothing in flight) until the answers come:
    /// a round's retry or a proxy's relay is then the resumed turn's.
    pub(crate) fn rests(self) -> bool {
        matches!(self, Era::Round | Era::Proxy)
    }
}

/// What a proxy question's `state` says once its answer was sent on.
pub(super) const RELAYED: &str = "relayed";

/// Where a sub-agent's question waits: its task, and its own uuid for
/// the question, which the answer names.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct ProxyRef {
    pub(crate) agent: String,
    pub(crate) task_id: String,
    pub(crate) uuid: String,
}

/// A question row as both backends read and write it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct QuestionRow {
    pub(crate) seq: i64,
    pub(crate) uuid: String,
    pub(crate) conversation_id: String,
    pub(crate) message_id: String,
    pub(crate) round: String,
    pub(crate) era: String,
    pub(crate) status: String,
    /// JSON: the call, kind, message, schema, url, key, elicitation id, chain.
    pub(crate) body: String,
    pub(crate) state: Option<String>,
    /// JSON object: the round's responses the agent gave by itself.
    pub(crate) answered: Option<String>,
    pub(crate) action: Option<String>,
    /// JSON object: the accepted content.
    pub(crate) content: Option<String>,
    pub(crate) asked_at: String,
    pub(crate) expires_at: Option<String>,
    pub(crate) answered_by: Option<String>,
    pub(crate) answered_via: Option<String>,
    pub(crate) answered_at: Option<String>,
    /// Who sent the conversation's latest message when it was asked.
    pub(crate) requested_by: Option<String>,
}

/// What the row's `body` holds.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Body {
    tool_call: QuestionCall,
    kind: QuestionKind,
    message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    elicitation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    chain: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    remote: Option<ProxyRef>,
}

/// A question as the engine uses it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StoredQuestion {
    pub(crate) question: Question,
    pub(crate) message_id: String,
    pub(crate) round: String,
    pub(crate) era: Era,
    /// Its key in the MRTR round.
    pub(crate) key: Option<String>,
    pub(crate) elicitation_id: Option<String>,
    pub(crate) state: Option<String>,
    pub(crate) answered: Map<String, Value>,
    pub(crate) action: Option<String>,
    pub(crate) content: Option<Map<String, Value>>,
    /// A sub-agent's question: where it waits.
    pub(crate) remote: Option<ProxyRef>,
    /// A proxy question whose answer was sent on.
    pub(crate) relayed: bool,
}

/// A question to store.
#[derive(Clone, Debug)]
pub(crate) struct NewQuestion {
    pub(crate) conversation_id: String,
    pub(crate) message_id: String,
    pub(crate) call: QuestionCall,
    pub(crate) ask: crate::domain::tools::Ask,
    pub(crate) expires_in: std::time::Duration,
    pub(crate) chain: Vec<String>,
    /// A sub-agent's question: where it waits.
    pub(crate) remote: Option<ProxyRef>,
}

/// An MRTR round's shared part.
#[derive(Clone, Debug, Default)]
pub(crate) struct Round {
    pub(crate) state: Option<String>,
    pub(crate) answered: Map<String, Value>,
}

/// An answer to record.
#[derive(Clone, Debug)]
pub(crate) struct AnswerRecord {
    pub(crate) uuid: String,
    pub(crate) status: QuestionStatus,
    pub(crate) action: String,
    pub(crate) content: Option<Map<String, Value>>,
    /// The principal's name, or `agent` for an expiry.
    pub(crate) by: String,
    /// How the answer arrived (stored as `answered_via`).
    pub(crate) via: crate::domain::channel::Channel,
}

/// What recording an answer did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Answered {
    /// Recorded; `resume`: it was the last open question of a round, so the
    /// call is to be retried (the conversation's turn is marked running).
    Done { resume: bool },
    /// Someone else answered first.
    Lost(QuestionStatus),
    /// No such question.
    Missing,
}

pub(super) fn row_of(new: &NewQuestion, era: Era, round: &str, shared: &Round) -> QuestionRow {
    let expires_at = super::approvals::shifted(&now(), new.expires_in, 1);
    let body = Body {
        tool_call: new.call.clone(),
        kind: new.ask.kind,
        message: new.ask.message.clone(),
        schema: new.ask.schema.clone(),
        url: new.ask.url.clone(),
        key: new.ask.key.clone(),
        elicitation_id: new.ask.elicitation_id.clone(),
        chain: new.chain.clone(),
        remote: new.remote.clone(),
    };
    QuestionRow {
        seq: 0,
        uuid: new_id(),
        conversation_id: new.conversation_id.clone(),
        message_id: new.message_id.clone(),
        round: round.to_string(),
        era: era.as_str().to_string(),
        status: QuestionStatus::Pending.as_str().to_string(),
        body: serde_json::to_string(&body).unwrap_or_default(),
        state: shared.state.clone(),
        answered: (!shared.answered.is_empty())
            .then(|| Value::Object(shared.answered.clone()).to_string()),
        action: None,
        content: None,
        asked_at: now(),
        expires_at: Some(expires_at),
        answered_by: None,
        answered_via: None,
        answered_at: None,
        requested_by: None,
    }
}

/// A stored row, decoded.
pub(crate) fn decode(row: QuestionRow) -> Result<StoredQuestion, StoreError> {
    let corrupt = |what: &str| StoreError::Corrupt(format!("question {}: {what}", row.uuid));
    let body: Body = serde_json::from_str(&row.body).map_err(|_| corrupt("unreadable body"))?;
    let status = QuestionStatus::parse(&row.status).ok_or_else(|| corrupt("unknown status"))?;
    let era = match row.era.as_str() {
        "round" => Era::Round,
        "session" => Era::Session,
        "proxy" => Era::Proxy,
        _ => return Err(corrupt("unknown era")),
    };
    let relayed = era == Era::Proxy && row.state.as_deref() == Some(RELAYED);
    let object = |text: &Option<String>| -> Option<Map<String, Value>> {
        text.as_deref()
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
            .and_then(|v| match v {
                Value::Object(m) => Some(m),
                _ => None,
            })
    };
    Ok(StoredQuestion {
        question: Question {
            uuid: row.uuid.clone(),
            conversation_id: row.conversation_id.clone(),
            tool_call: body.tool_call,
            kind: body.kind,
            message: body.message,
            schema: body.schema,
            url: body.url,
            status,
            asked_at: row.asked_at.clone(),
            answered_by: row.answered_by.clone(),
            answered_via: row.answered_via.clone(),
            answered_at: row.answered_at.clone(),
            expires_at: row.expires_at.clone(),
            chain: body.chain,
            requested_by: row.requested_by.clone(),
        },
        message_id: row.message_id.clone(),
        round: row.round.clone(),
        era,
        key: body.key,
        elicitation_id: body.elicitation_id,
        state: row.state.clone(),
        answered: object(&row.answered).unwrap_or_default(),
        action: row.action.clone(),
        content: object(&row.content),
        remote: body.remote,
        relayed,
    })
}

/// What a notification says about a question.
pub(super) fn facts(q: &StoredQuestion) -> Value {
    let q = &q.question;
    serde_json::json!({
        "uuid": q.uuid,
        "conversation_id": q.conversation_id,
        "tool": q.tool_call.tool,
        "server": q.tool_call.server,
        "kind": q.kind,
        "message": q.message,
        "url": q.url,
        "expires_at": q.expires_at,
        "requested_by": q.requested_by,
        "chain": q.chain,
    })
}

/// `question.asked`: audited, and told to the targets that want it.
pub(super) fn asked(
    tx: &dyn super::tx::Tx,
    routes: &super::outbox::Routes,
    q: &StoredQuestion,
) -> Result<(), StoreError> {
    super::outbox::announce_question(tx, routes, "question.asked", facts(q))?;
    tx.audit(&Event {
        actor: "agent",
        event: "question.asked",
        conversation_id: Some(&q.question.conversation_id),
        approval_uuid: None,
        details: serde_json::json!({
            "question": q.question.uuid,
            "kind": q.question.kind,
            "tool": q.question.tool_call.tool,
            "server": q.question.tool_call.server,
            "era": q.era.as_str(),
        }),
    })
}

/// Why a conversation's pending questions are cancelled without an answer.
pub(super) enum Cancel<'a> {
    /// A cancelled task (A2A `CancelTask`), by this principal: every
    /// pending question goes with it, so none resumes the conversation.
    Task { by: &'a str },
    /// Recovery: a question asked on a session that is gone (the process
    /// that held it stopped) can never be answered there. Its call was in
    /// flight, so the crash rules record it as interrupted, never re-run.
    /// A round's question (2026-07-28) still waits: it needs no session.
    Restart,
}

/// Cancels a conversation's pending questions (`cancelled`, audited), as
/// `why` says. Returns the sub-agents' tasks that waited on a cancelled
/// proxy question (agent, task id): they are cancelled down the chain.
pub(super) fn cancel_pending(
    tx: &dyn super::tx::Tx,
    conversation_id: &str,
    why: Cancel<'_>,
) -> Result<Vec<RemoteTask>, StoreError> {
    let (by, via, reason) = match why {
        Cancel::Task { by } => (by, Channel::Cancel, "the task was cancelled"),
        Cancel::Restart => (
            "agent",
            Channel::Restart,
            "the agent restarted while the question waited on a live MCP session",
        ),
    };
    let mut remote = Vec::new();
    for row in tx.pending_questions_of(conversation_id)? {
        if matches!(why, Cancel::Restart) && row.era != Era::Session.as_str() {
            continue;
        }
        if tx.answer_question(&row.uuid, "cancelled", "cancel", None, by, via.as_str())? {
            if let Ok(Some(r)) = serde_json::from_str::<Body>(&row.body).map(|b| b.remote) {
                remote.push((r.agent, r.task_id));
            }
            tx.audit(&Event {
                actor: by,
                event: "question.answered",
                conversation_id: Some(conversation_id),
                approval_uuid: None,
                details: serde_json::json!({
                    "question": row.uuid,
                    "action": "cancel",
                    "via": via,
                    "reason": reason,
                }),
            })?;
        }
    }
    Ok(remote)
}
