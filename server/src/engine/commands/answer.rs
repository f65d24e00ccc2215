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
use crate::events::Delivery;
use crate::store::questions::{AnswerRecord, Answered, Era};
use app::models::{Conversation, ProcessResult, Question, QuestionKind, QuestionStatus};
use serde_json::{Map, Value};
use std::time::Duration;

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
                let schema = q.schema.clone().unwrap_or(Value::Null);
                let content = crate::domain::form::with_defaults(
                    &schema,
                    answer.content.clone().unwrap_or_default(),
                );
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
        // A round's retry (or a proxy's relay) runs under the
        // conversation's lock; a live
        // session's call already holds it (its turn is running).
        let guard = match found.era {
            Era::Round | Era::Proxy => Some(self.lock(&conversation_id).await?),
            Era::Session => None,
        };
        // Watched from before the answer, so that what the call does next
        // on its live session (ask again, end the turn) is not missed.
        let watch = (found.era == Era::Session).then(|| {
            (
                self.inner.asked.subscribe(),
                self.inner.events.subscribe(None),
            )
        });
        let done = store
            .answer_question(AnswerRecord {
                uuid: uuid.to_string(),
                status,
                action: answer.action.clone(),
                content,
                by: ctx.principal.name.clone(),
                via: ctx.via,
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
                // goes on on its live session: the answer waits for what
                // it does next, as a round's retry would.
                let next = store.pending_question_of(&conversation_id).await?;
                if let (None, Some((asked, events))) = (&next, watch) {
                    return self.goes_on(&conversation_id, asked, events).await;
                }
                let conversation = crate::engine::commands::load(store, &conversation_id).await?;
                Ok(Reply {
                    result: where_it_stands(&conversation, next.map(|n| n.question)),
                    conversation,
                })
            }
        }
    }

    /// After an answer on a live session: waits (at most [`GOES_ON`]) until
    /// the turn ends or the call asks again, here or on another replica,
    /// and replies with where the conversation stands then.
    async fn goes_on(
        &self,
        conversation_id: &str,
        mut asked: tokio::sync::broadcast::Receiver<Question>,
        mut events: crate::events::Subscription,
    ) -> Result<Reply, EngineError> {
        let store = &self.inner.store;
        let deadline = tokio::time::Instant::now() + GOES_ON;
        loop {
            let c = crate::engine::commands::load(store, conversation_id).await?;
            let pending = c.pending_question.clone();
            if !self.runs(&c) || pending.is_some() || tokio::time::Instant::now() >= deadline {
                return Ok(Reply {
                    result: where_it_stands(&c, pending),
                    conversation: c,
                });
            }
            // Woken by this conversation's next event or question, or by
            // the poll (a turn on another replica ends there).
            let poll = tokio::time::sleep(POLL);
            tokio::pin!(poll);
            loop {
                tokio::select! {
                    q = asked.recv() => match q {
                        Ok(q) if q.conversation_id != conversation_id => continue,
                        _ => break,
                    },
                    d = events.next() => match d {
                        Some(Delivery::Event(p)) if p.event.conversation_id != conversation_id => continue,
                        _ => break,
                    },
                    _ = &mut poll => break,
                    _ = tokio::time::sleep_until(deadline) => break,
                }
            }
        }
    }
}

/// How long an answer on a live session waits for the call to go on.
const GOES_ON: Duration = Duration::from_secs(55);
/// How often it looks at the conversation meanwhile.
const POLL: Duration = Duration::from_secs(1);

/// A conversation's state as an answer's result: the question it waits on,
/// the approval, the turn's last reply, or that the call goes on.
fn where_it_stands(c: &Conversation, question: Option<Question>) -> ProcessResult {
    if let Some(q) = question {
        return ProcessResult {
            response: format!("`{}` asks: {}", q.tool_call.tool, q.message),
            waiting_approval: false,
            approval: None,
            waiting_input: true,
            question: Some(q),
        };
    }
    if let Some(a) = c.pending_approval.clone() {
        return ProcessResult {
            response: format!("Approval needed: {}", a.description),
            waiting_approval: true,
            approval: Some(a),
            waiting_input: false,
            question: None,
        };
    }
    let last = c
        .messages
        .last()
        .filter(|m| !c.running && m.role == app::models::Role::Assistant && !m.content.is_empty());
    ProcessResult {
        response: last.map_or_else(
            || "Answered; the tool goes on.".into(),
            |m| m.content.clone(),
        ),
        waiting_approval: false,
        approval: None,
        waiting_input: false,
        question: None,
    }
}
