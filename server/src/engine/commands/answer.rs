//! A person's answer to a question a tool asked (QUESTIONS.md §2), and the
//! call going on after it: a 2026-07-28 round is retried by the resumed
//! turn; a call waiting on a live session hears the answer on it.
//!
//! Who may answer: whoever sent the conversation's latest message, or any
//! approver (separation of duties does not apply: a question asks for
//! information, and a destructive call that follows needs its approval).

use crate::domain::principal::Role;
use crate::engine::calls::question::status_of;
use crate::engine::{Ctx, Engine, EngineError, Reply};
use crate::store::questions::{AnswerRecord, Answered, Era};
use app::models::{ProcessResult, QuestionKind, QuestionStatus};
use serde_json::{Map, Value};

/// An answer as posted.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Answer {
    /// `accept`, `decline` or `cancel`.
    pub(crate) action: String,
    pub(crate) content: Option<Map<String, Value>>,
}

impl Engine {
    /// Records an answer and lets the call go on.
    pub(crate) async fn answer(
        &self,
        uuid: &str,
        answer: Answer,
        ctx: Ctx,
    ) -> Result<Reply, EngineError> {
        let store = &self.inner.store;
        let found = store
            .question(uuid)
            .await?
            .ok_or_else(|| EngineError::NotFound(format!("question {uuid:?} not found")))?;
        let q = &found.question;
        if q.status != QuestionStatus::Pending {
            return Err(EngineError::AlreadyAnswered {
                uuid: uuid.to_string(),
                status: q.status,
            });
        }
        let Some(status) = status_of(&answer.action) else {
            return Err(EngineError::Invalid(format!(
                "`action` must be accept, decline or cancel, not {:?}",
                answer.action
            )));
        };
        let signed_in = self.inner.config.auth.mode != crate::config::AuthMode::None;
        if signed_in
            && !ctx.principal.allow(Role::Approver)
            && q.requested_by.as_deref() != Some(ctx.principal.name.as_str())
        {
            return Err(EngineError::Forbidden(format!(
                "{} may not answer this question: only whoever sent the conversation's latest message, or an approver, may",
                ctx.principal.name
            )));
        }
        let content = match (status, q.kind) {
            (QuestionStatus::Answered, QuestionKind::Form) => {
                let content = answer.content.clone().unwrap_or_default();
                let schema = q.schema.clone().unwrap_or(Value::Null);
                crate::domain::form::check(&schema, &content).map_err(EngineError::Invalid)?;
                Some(content)
            }
            (_, _) if answer.content.is_some() => {
                return Err(EngineError::Invalid(
                    "`content` goes only with `accept` on a form question".into(),
                ));
            }
            _ => None,
        };
        let conversation_id = q.conversation_id.clone();
        // A round's retry runs under the conversation's lock; a live
        // session's call already holds it (its turn is running).
        let guard = match found.era {
            Era::Round => Some(self.lock(&conversation_id).await?),
            Era::Session => None,
        };
        let via = if ctx.via.is_empty() { "rest" } else { ctx.via };
        let done = store
            .answer_question(AnswerRecord {
                uuid: uuid.to_string(),
                status,
                action: answer.action.clone(),
                content,
                by: ctx.principal.name.clone(),
                via: via.to_string(),
            })
            .await?;
        let resume = match done {
            Answered::Done { resume } => resume,
            Answered::Lost(status) => {
                if let Some(g) = guard {
                    g.release().await;
                }
                return Err(EngineError::AlreadyAnswered {
                    uuid: uuid.to_string(),
                    status,
                });
            }
            Answered::Missing => {
                if let Some(g) = guard {
                    g.release().await;
                }
                return Err(EngineError::NotFound(format!(
                    "question {uuid:?} not found"
                )));
            }
        };
        tracing::info!(question = %uuid, conversation = %conversation_id, action = %answer.action, "question answered");
        self.inner.answered.notify_waiters();
        self.emit_answered(q, status.as_str());
        match guard {
            Some(guard) if resume => {
                self.run_turn(conversation_id, ctx, guard, None, None, None)
                    .await
            }
            guard => {
                if let Some(g) = guard {
                    g.release().await;
                }
                // Another question of the round still waits, or the call
                // goes on on its live session.
                let next = store.pending_question_of(&conversation_id).await?;
                let conversation = crate::engine::commands::load(store, &conversation_id).await?;
                let result = match next {
                    Some(n) => ProcessResult {
                        response: format!(
                            "`{}` asks: {}",
                            n.question.tool_call.tool, n.question.message
                        ),
                        waiting_approval: false,
                        approval: None,
                        waiting_input: true,
                        question: Some(n.question),
                    },
                    None => ProcessResult {
                        response: "Answered; the tool goes on.".into(),
                        waiting_approval: false,
                        approval: None,
                        waiting_input: false,
                        question: None,
                    },
                };
                Ok(Reply {
                    conversation,
                    result,
                })
            }
        }
    }
}
