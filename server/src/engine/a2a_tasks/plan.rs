//! What a `SendMessage` means for the task it names: a new task, the next
//! turn, a decision on the approval it waits on, or an answer to its
//! question; anything else there is refused with an explanation, never
//! silently dropped.
//!
//! A message with a `taskId` continues that task: a waiting task takes a
//! decision (approve/reject words or `{"approved": bool}`); anything else
//! there is `-32602`. A terminal task (1.0/0.3) is `-32004`; the seed's
//! legacy clients continue the conversation instead, as the seed did. A
//! message with only a known `contextId` is the next turn of that
//! conversation.

use super::error::TaskError;
use super::view::{context_of, view};
use crate::a2a::wire::{Dialect, Incoming};
use crate::engine::commands::answer::Answer;
use crate::engine::commands::decide::DecisionRequest;
use crate::engine::handle::Engine;
use app::models::Conversation;

/// What a `SendMessage` does.
#[derive(Clone, Debug)]
pub(crate) enum Plan {
    /// A new conversation with this first message.
    New(Incoming),
    /// The next turn of a conversation.
    Turn { id: String, m: Incoming },
    /// A decision on a waiting conversation's pending approval.
    Decide {
        id: String,
        uuid: String,
        decision: DecisionRequest,
    },
    /// An answer to the question a waiting conversation's tool asked
    /// (QUESTIONS.md §4: a data part `{"question_answer": {...}}`).
    Answer {
        id: String,
        uuid: String,
        answer: Answer,
    },
}

impl Plan {
    /// The same plan on conversation `id` (a new one becomes its first turn).
    pub(crate) fn on(self, id: &str) -> Plan {
        match self {
            Plan::New(m) => Plan::Turn {
                id: id.to_string(),
                m,
            },
            p => p,
        }
    }

    pub(crate) fn conversation(&self) -> Option<&str> {
        match self {
            Plan::New(_) => None,
            Plan::Turn { id, .. } | Plan::Decide { id, .. } | Plan::Answer { id, .. } => Some(id),
        }
    }
}

/// Reads a conversation or says the task does not exist.
pub(crate) async fn load(engine: &Engine, id: &str) -> Result<Conversation, TaskError> {
    engine
        .store()
        .get_conversation(id.to_string())
        .await?
        .ok_or_else(|| TaskError::task_not_found(id))
}

/// Decides what a message means for the task it names.
pub(crate) async fn plan(engine: &Engine, m: &Incoming, d: Dialect) -> Result<Plan, TaskError> {
    let target = match (&m.task_id, &m.context_id) {
        (Some(t), ctx_id) => {
            let c = load(engine, t).await?;
            if let Some(cid) = ctx_id
                && *cid != context_of(&c)
            {
                return Err(TaskError::Params(format!(
                    "contextId {cid:?} does not match task {t:?} (its contextId is {:?})",
                    context_of(&c)
                )));
            }
            let st = view(&c, engine.runs(&c), Some(0)).state;
            if st.is_terminal() && d != Dialect::Legacy {
                return Err(TaskError::Unsupported(format!(
                    "task {t:?} is {}: it takes no more messages; send a message with contextId {t:?} and no taskId to go on in the same conversation",
                    st.wire(Dialect::V03)
                )));
            }
            Some(c)
        }
        (None, Some(cid)) => {
            let found = engine.store().by_context(cid).await?;
            match found {
                Some(id) => Some(load(engine, &id).await?),
                None => None,
            }
        }
        (None, None) => None,
    };
    let Some(c) = target else {
        nonempty(m)?;
        return Ok(Plan::New(m.clone()));
    };
    if let Some(a) = &c.pending_approval {
        return match crate::a2a::wire::decision_in_full(m) {
            // The caller decided another approval than the one waiting now
            // (ours expired and the model asked again): never applied here.
            Some(d) if d.approval_uuid.as_ref().is_some_and(|u| *u != a.uuid) => {
                Err(TaskError::Params(format!(
                    "task {:?} now waits on approval {} (`{}`), not on {}: that one ended here; decide the new one",
                    c.id,
                    a.uuid,
                    a.tool_name,
                    d.approval_uuid.unwrap_or_default()
                )))
            }
            Some(d) => Ok(Plan::Decide {
                id: c.id.clone(),
                uuid: a.uuid.clone(),
                decision: DecisionRequest {
                    approve: d.approved,
                    reason: d.reason,
                    arguments: d.arguments,
                    grant: None,
                    upstream_receipt: d.receipt,
                },
            }),
            None => Err(TaskError::Params(format!(
                "task {:?} is waiting for approval of `{}` ({}): answer \"approve\" or \"reject\" (or a data part {{\"approved\": true|false}})",
                c.id, a.tool_name, a.description
            ))),
        };
    }
    if let Some(q) = &c.pending_question {
        return match crate::a2a::wire::question_answer(m) {
            Some(a) if a.uuid != q.uuid => Err(TaskError::Params(format!(
                "task {:?} now waits on question {}, not on {}: that one ended here; answer the new one",
                c.id, q.uuid, a.uuid
            ))),
            Some(a) => Ok(Plan::Answer {
                id: c.id.clone(),
                uuid: a.uuid,
                answer: Answer {
                    action: a.action,
                    content: a.content,
                },
            }),
            None => Err(TaskError::Params(format!(
                "task {:?} waits for the answer to a question from `{}` ({}): send a data part {{\"question_answer\": {{\"uuid\": \"{}\", \"action\": \"accept\"|\"decline\"|\"cancel\", \"content\": {{...}}}}}}",
                c.id, q.tool_call.tool, q.message, q.uuid
            ))),
        };
    }
    nonempty(m)?;
    Ok(Plan::Turn {
        id: c.id.clone(),
        m: m.clone(),
    })
}

fn nonempty(m: &Incoming) -> Result<&str, TaskError> {
    if m.text.trim().is_empty() {
        Err(TaskError::Params(
            "the message has no text: send at least one non-empty text part".into(),
        ))
    } else {
        Ok(&m.text)
    }
}
