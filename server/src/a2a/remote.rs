//! What the engine sees of a remote agent: the [`RemoteAgents`] port it
//! sends through (so tests can stand in for the network), the message it
//! sends ([`Outgoing`]) and the reply it reads ([`RemoteReply`]).

use super::error::A2aError;
use super::read_card::ReadCard;
use crate::domain::BoxFuture;
use crate::domain::tools::CallContext;
use serde_json::Value;

/// A message to a remote agent: a new task, or the continuation of one
/// that waits for a decision.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Outgoing {
    pub(crate) text: String,
    /// The remote task to continue.
    pub(crate) task_id: Option<String>,
    /// The operator's decision on the remote's request: (approved, reason).
    pub(crate) decision: Option<(bool, Option<String>)>,
    /// Arguments an approver here edited before approving (POLICY.md §3):
    /// the remote checks them against its own schema and rules.
    pub(crate) arguments: Option<serde_json::Value>,
    /// The remote approval this decision answers (see [`RemoteAsk`]).
    pub(crate) approval_uuid: Option<String>,
    /// The answer to the remote's question (QUESTIONS.md §4), sent as a
    /// data part `{"question_answer": {uuid, action, content}}`.
    pub(crate) question_answer: Option<Value>,
    /// This agent's receipt for an approving decision (RECEIPTS.md §1),
    /// sent under [`super::wire::RECEIPT_EXTENSION`].
    pub(crate) receipt: Option<String>,
}

impl Outgoing {
    /// A new task with `text`.
    pub(crate) fn new(text: impl Into<String>) -> Outgoing {
        Outgoing {
            text: text.into(),
            task_id: None,
            decision: None,
            arguments: None,
            approval_uuid: None,
            question_answer: None,
            receipt: None,
        }
    }

    /// The answer to the question `uuid` a remote task waits on: `action`
    /// (`accept`, `decline`, `cancel`) and, with `accept`, the content.
    pub(crate) fn answer(
        task_id: &str,
        uuid: &str,
        action: &str,
        content: Option<serde_json::Map<String, Value>>,
    ) -> Outgoing {
        let mut answer = serde_json::json!({"uuid": uuid, "action": action});
        if let Some(c) = content {
            answer["content"] = Value::Object(c);
        }
        Outgoing {
            text: action.to_string(),
            task_id: Some(task_id.to_string()),
            decision: None,
            arguments: None,
            approval_uuid: None,
            question_answer: Some(answer),
            receipt: None,
        }
    }

    /// The answer to a remote task waiting for approval.
    pub(crate) fn decision(task_id: &str, approved: bool, reason: Option<String>) -> Outgoing {
        Outgoing {
            text: if approved { "approve" } else { "reject" }.into(),
            task_id: Some(task_id.to_string()),
            decision: Some((approved, reason)),
            arguments: None,
            approval_uuid: None,
            question_answer: None,
            receipt: None,
        }
    }
}

/// How a remote agent answered.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum RemoteReply {
    /// The task completed (or the agent answered with a message).
    Done(String),
    /// The task waits for a decision (`input-required`).
    NeedsApproval(RemoteAsk),
    /// The task waits for the answer to a tool's question
    /// (`input-required` with a `question` data part, QUESTIONS.md §4).
    NeedsAnswer(RemoteQuestion),
}

/// What a remote task's question asks (its `question` data part).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RemoteQuestion {
    pub(crate) task_id: String,
    /// The remote's own question, answered by this uuid.
    pub(crate) uuid: String,
    pub(crate) kind: app::models::QuestionKind,
    pub(crate) message: String,
    pub(crate) schema: Option<Value>,
    pub(crate) url: Option<String>,
    /// The remote tool that asked.
    pub(crate) tool: Option<String>,
    /// The agents behind the remote that the question came through, nearest first.
    pub(crate) chain: Vec<String>,
}

/// What a waiting remote task asks for. The structured fields come from the
/// remote's `data` part (`{approval_uuid, tool, arguments, description,
/// chain}`); an agent that sends only text gets its text as description.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RemoteAsk {
    pub(crate) task_id: String,
    pub(crate) tool: Option<String>,
    pub(crate) arguments: Value,
    pub(crate) description: String,
    /// The agents behind the remote that the request came through, nearest first.
    pub(crate) chain: Vec<String>,
    /// The remote's own approval (`approval_uuid` of its data part), sent
    /// back with the decision so a remote that has moved on to another
    /// approval refuses it instead of applying it there.
    pub(crate) approval_uuid: Option<String>,
}

/// Sends messages to remote agents.
pub(crate) trait RemoteAgents: Send + Sync {
    fn send<'a>(
        &'a self,
        url: &'a str,
        message: &'a Outgoing,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<RemoteReply, A2aError>>;

    /// Cancels a remote task (when the task waiting on it is cancelled here).
    fn cancel<'a>(
        &'a self,
        url: &'a str,
        task_id: &'a str,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<(), A2aError>>;

    /// Where a remote task stands now (`GetTask`), read as a send's answer
    /// would be: a proxy approval checks that the remote still waits on it.
    fn get<'a>(
        &'a self,
        url: &'a str,
        task_id: &'a str,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<RemoteReply, A2aError>>;

    /// Reads the card of the agent at `url` as a call would (a signing key
    /// pinned for it is checked): `Untrusted` when it cannot be trusted.
    fn check_card<'a>(&'a self, url: &'a str, sid: &'a str) -> BoxFuture<'a, Result<(), A2aError>>;

    /// A card of the agent at `url` whose signature verified since the
    /// last call, once.
    fn take_verified(&self, url: &str) -> Option<ReadCard>;

    /// The cards an admin accepted (content digest by configured URL):
    /// trusted without a verifying signature.
    fn set_accepted(&self, accepted: std::collections::HashMap<String, String>);
}
