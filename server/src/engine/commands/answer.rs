//! A person's answer to a question a tool asked (QUESTIONS.md §2), and the
//! call going on after it: a 2026-07-28 round is retried by the resumed
//! turn; a call waiting on a live session hears the answer on it.
//!
//! Who may answer: whoever sent the conversation's latest message, or any
//! approver (separation of duties does not apply: a question asks for
//! information, and a destructive call that follows needs its approval).

use crate::domain::principal::{Principal, Role};
use crate::domain::tools::CallContext;
use crate::engine::calls::question::status_of;
use crate::engine::error::EngineError;
use crate::engine::handle::Engine;
use crate::engine::reply::Reply;
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
    /// Records an answer and lets the call go on: the checks (which
    /// action, who may answer, whether the content fits), the write under
    /// the conversation's lock when a retry follows, then the call going on.
    pub(crate) async fn answer(
        &self,
        uuid: &str,
        answer: Answer,
        ctx: CallContext,
    ) -> Result<Reply, EngineError> {
        let found = self.pending_question(uuid).await?;
        let q = &found.question;
        let status = answer_status(&answer.action)?;
        let signed_in = self.inner.config.auth.mode != crate::config::AuthMode::None;
        who_may_answer(signed_in, q, &ctx.principal)?;
        let content = answer_content(status, q, &answer)?;
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
        let done = self
            .inner
            .store
            .answer_question(AnswerRecord {
                uuid: uuid.to_string(),
                status,
                action: answer.action.clone(),
                content,
                by: ctx.principal.name.clone(),
                via: ctx.via,
            })
            .await?;
        let resume = match recorded(done, uuid) {
            Ok(resume) => resume,
            Err(e) => {
                if let Some(g) = guard {
                    g.release().await;
                }
                return Err(e);
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
                self.after_answer(&conversation_id, watch).await
            }
        }
    }

    /// The question `uuid`, while it is still pending.
    async fn pending_question(
        &self,
        uuid: &str,
    ) -> Result<crate::store::questions::StoredQuestion, EngineError> {
        let found = self
            .inner
            .store
            .question(uuid)
            .await?
            .ok_or_else(|| EngineError::NotFound(format!("question {uuid:?} not found")))?;
        if found.question.status != QuestionStatus::Pending {
            return Err(EngineError::AlreadyAnswered {
                uuid: uuid.to_string(),
                status: found.question.status,
            });
        }
        Ok(found)
    }

    /// Where the conversation stands after an answer that retried nothing:
    /// another question of the round still waits, or the call goes on on
    /// its live session and the answer waits for what it does next, as a
    /// round's retry would.
    async fn after_answer(
        &self,
        conversation_id: &str,
        watch: Option<(
            tokio::sync::broadcast::Receiver<Question>,
            crate::events::Subscription,
        )>,
    ) -> Result<Reply, EngineError> {
        let store = &self.inner.store;
        let next = store.pending_question_of(conversation_id).await?;
        if let (None, Some((asked, events))) = (&next, watch) {
            return self.goes_on(conversation_id, asked, events).await;
        }
        let conversation = crate::engine::commands::load(store, conversation_id).await?;
        Ok(Reply {
            result: where_it_stands(&conversation, next.map(|n| n.question)),
            conversation,
        })
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

/// The status an answer's `action` moves the question to.
fn answer_status(action: &str) -> Result<QuestionStatus, EngineError> {
    status_of(action).ok_or_else(|| {
        EngineError::Invalid(format!(
            "`action` must be accept, decline or cancel, not {action:?}"
        ))
    })
}

/// Who may answer: when principals are signed in, whoever sent the
/// conversation's latest message, or an approver.
fn who_may_answer(signed_in: bool, q: &Question, p: &Principal) -> Result<(), EngineError> {
    if signed_in && !p.allow(Role::Approver) && q.requested_by.as_deref() != Some(p.name.as_str()) {
        return Err(EngineError::Forbidden(format!(
            "{} may not answer this question: only whoever sent the conversation's latest message, or an approver, may",
            p.name
        )));
    }
    Ok(())
}

impl Engine {
    /// Whether `p` may answer `q` ([`who_may_answer`]).
    pub(crate) fn may_answer(&self, q: &Question, p: &Principal) -> bool {
        let signed_in = self.inner.config.auth.mode != crate::config::AuthMode::None;
        who_may_answer(signed_in, q, p).is_ok()
    }
}

/// The content recorded: a form question's accepted fields, with their
/// defaults, checked against its schema; nothing otherwise (content that
/// comes with anything else is refused).
fn answer_content(
    status: QuestionStatus,
    q: &Question,
    answer: &Answer,
) -> Result<Option<Map<String, Value>>, EngineError> {
    match (status, q.kind) {
        (QuestionStatus::Answered, QuestionKind::Form) => {
            let schema = q.schema.clone().unwrap_or(Value::Null);
            let content = crate::domain::form::with_defaults(
                &schema,
                answer.content.clone().unwrap_or_default(),
            );
            crate::domain::form::check(&schema, &content).map_err(EngineError::Invalid)?;
            Ok(Some(content))
        }
        (_, _) if answer.content.is_some() => Err(EngineError::Invalid(
            "`content` goes only with `accept` on a form question".into(),
        )),
        _ => Ok(None),
    }
}

/// What the write did, as the caller hears it: `Ok(resume)` when it was
/// recorded (`resume`: the round is complete, its call is retried).
fn recorded(done: Answered, uuid: &str) -> Result<bool, EngineError> {
    match done {
        Answered::Done { resume } => Ok(resume),
        Answered::Lost(status) => Err(EngineError::AlreadyAnswered {
            uuid: uuid.to_string(),
            status,
        }),
        Answered::Missing => Err(EngineError::NotFound(format!(
            "question {uuid:?} not found"
        ))),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::principal::Roles;
    use app::models::QuestionCall;

    fn question(kind: QuestionKind) -> Question {
        Question {
            uuid: "q1".into(),
            conversation_id: "c1".into(),
            tool_call: QuestionCall {
                tool: "t".into(),
                server: None,
                arguments: serde_json::json!({}),
            },
            kind,
            message: "Which one?".into(),
            schema: Some(serde_json::json!({
                "type": "object",
                "properties": {"name": {"type": "string"}, "n": {"type": "integer", "default": 3}},
                "required": ["name"]
            })),
            url: None,
            status: QuestionStatus::Pending,
            asked_at: "2026-01-01T00:00:00Z".into(),
            answered_by: None,
            answered_via: None,
            answered_at: None,
            expires_at: None,
            chain: Vec::new(),
            requested_by: Some("alice".into()),
        }
    }

    fn principal(name: &str, roles: &[&str]) -> Principal {
        Principal {
            name: name.into(),
            roles: Roles::from_names(roles.iter().copied()),
            ..Principal::default()
        }
    }

    fn answer(action: &str, content: Option<serde_json::Value>) -> Answer {
        Answer {
            action: action.into(),
            content: content.and_then(|c| c.as_object().cloned()),
        }
    }

    fn invalid<T: std::fmt::Debug>(r: Result<T, EngineError>) -> String {
        match r {
            Err(EngineError::Invalid(m)) => m,
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn the_action_names_the_status() {
        assert_eq!(answer_status("accept").ok(), Some(QuestionStatus::Answered));
        assert_eq!(
            answer_status("decline").ok(),
            Some(QuestionStatus::Declined)
        );
        assert_eq!(
            answer_status("cancel").ok(),
            Some(QuestionStatus::Cancelled)
        );
        assert_eq!(
            invalid(answer_status("maybe")),
            "`action` must be accept, decline or cancel, not \"maybe\""
        );
    }

    #[test]
    fn the_requester_or_an_approver_answers() {
        let q = question(QuestionKind::Form);
        assert!(who_may_answer(true, &q, &principal("alice", &["requester"])).is_ok());
        assert!(who_may_answer(true, &q, &principal("bob", &["approver"])).is_ok());
        assert!(who_may_answer(false, &q, &principal("bob", &[])).is_ok());
        match who_may_answer(true, &q, &principal("bob", &["requester"])) {
            Err(EngineError::Forbidden(m)) => {
                assert!(m.starts_with("bob may not answer this question"), "{m}")
            }
            other => panic!("expected Forbidden, got {other:?}"),
        }
    }

    #[test]
    fn a_forms_content_is_completed_and_checked() {
        let q = question(QuestionKind::Form);
        let accepted = answer("accept", Some(serde_json::json!({"name": "x"})));
        let content = answer_content(QuestionStatus::Answered, &q, &accepted)
            .expect("fits")
            .expect("content");
        assert_eq!(
            serde_json::Value::Object(content),
            serde_json::json!({"name": "x", "n": 3})
        );
        let wrong = answer("accept", Some(serde_json::json!({"name": 5})));
        invalid(answer_content(QuestionStatus::Answered, &q, &wrong));
        assert_eq!(
            answer_content(QuestionStatus::Declined, &q, &answer("decline", None)).ok(),
            Some(None)
        );
    }

    #[test]
    fn content_goes_only_with_accepting_a_form() {
        let with = answer("decline", Some(serde_json::json!({"name": "x"})));
        let m = invalid(answer_content(
            QuestionStatus::Declined,
            &question(QuestionKind::Form),
            &with,
        ));
        assert_eq!(m, "`content` goes only with `accept` on a form question");
        let url = answer("accept", Some(serde_json::json!({"name": "x"})));
        invalid(answer_content(
            QuestionStatus::Answered,
            &question(QuestionKind::Url),
            &url,
        ));
        assert_eq!(
            answer_content(
                QuestionStatus::Answered,
                &question(QuestionKind::Url),
                &answer("accept", None)
            )
            .ok(),
            Some(None)
        );
    }

    #[test]
    fn the_write_is_heard_as_recorded_or_refused() {
        assert_eq!(
            recorded(Answered::Done { resume: true }, "q1").ok(),
            Some(true)
        );
        assert_eq!(
            recorded(Answered::Done { resume: false }, "q1").ok(),
            Some(false)
        );
        assert!(matches!(
            recorded(Answered::Lost(QuestionStatus::Expired), "q1"),
            Err(EngineError::AlreadyAnswered {
                status: QuestionStatus::Expired,
                ..
            })
        ));
        assert!(matches!(
            recorded(Answered::Missing, "q1"),
            Err(EngineError::NotFound(_))
        ));
    }
}
