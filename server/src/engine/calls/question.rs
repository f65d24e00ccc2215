//! Questions a call asks the human (QUESTIONS.md), on the engine's side:
//!
//! - an MRTR round (2026-07-28) is stored with the call resting, the turn
//!   pauses (`waiting_input`), and the answered round is retried once by
//!   the resumed turn ([`Engine::retry_round`]), with the server's state;
//! - a question on a live session is stored, shown, and waited for inside
//!   the running call ([`TurnAsker`]), polled so that an answer posted to
//!   another replica reaches it too; its expiry answers `cancel`.

use crate::domain::tools::{Ask, AskAnswer, Asker, CallContext, InputRequired, Resume};
use crate::engine::handle::Engine;
use crate::store::questions::{AnswerRecord, Era, NewQuestion, Round, StoredQuestion};
use app::models::{EventKind, Question, QuestionCall, QuestionStatus, ToolCall};
use serde_json::{Map, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often a waiting live-session question looks at its row (answers
/// given on this replica wake it at once).
const POLL: Duration = Duration::from_secs(1);

/// What the model is told before a result when a question expired.
pub(crate) const EXPIRED_NOTE: &str =
    "The tool's question expired before anyone answered; the tool was told \"cancel\".";

/// The questions of one round as stored rows.
pub(super) fn new_questions(
    conversation_id: &str,
    message_id: &str,
    tc: &ToolCall,
    asks: Vec<Ask>,
    expires_in: Duration,
) -> Vec<NewQuestion> {
    asks.into_iter()
        .map(|ask| NewQuestion {
            conversation_id: conversation_id.to_string(),
            message_id: message_id.to_string(),
            call: call_of(tc),
            ask,
            expires_in,
            chain: Vec::new(),
            remote: None,
        })
        .collect()
}

fn call_of(tc: &ToolCall) -> QuestionCall {
    QuestionCall {
        tool: tc.name.clone(),
        server: tc.server.clone(),
        arguments: tc.arguments.clone(),
    }
}

/// The retry of an answered round: every answer under its key (an expired
/// question answers `cancel`), the responses the agent gave by itself, and
/// the server's state, verbatim.
pub(super) fn resume_of(round: &[StoredQuestion]) -> (Resume, bool) {
    let mut responses: Map<String, Value> = round
        .first()
        .map(|q| q.answered.clone())
        .unwrap_or_default();
    let mut expired = false;
    for q in round {
        let Some(key) = &q.key else { continue };
        expired |= q.question.status == QuestionStatus::Expired;
        responses.insert(key.clone(), answer_of(q).to_json());
    }
    let state = round.first().and_then(|q| q.state.clone());
    (Resume { responses, state }, expired)
}

/// What the tool (or the sub-agent) hears of a question that ended: the
/// answer as given; an expiry, a cancel, or none at all is `cancel`.
pub(super) fn answer_of(q: &StoredQuestion) -> AskAnswer {
    match q.question.status {
        QuestionStatus::Answered => AskAnswer {
            action: q.action.clone().unwrap_or_else(|| "accept".into()),
            content: q.content.clone(),
        },
        QuestionStatus::Declined => AskAnswer::decline(),
        QuestionStatus::Expired | QuestionStatus::Cancelled | QuestionStatus::Pending => {
            AskAnswer {
                action: "cancel".into(),
                content: None,
            }
        }
    }
}

/// The status an answer's action leaves a question in.
pub(crate) fn status_of(action: &str) -> Option<QuestionStatus> {
    match action {
        "accept" => Some(QuestionStatus::Answered),
        "decline" => Some(QuestionStatus::Declined),
        "cancel" => Some(QuestionStatus::Cancelled),
        _ => None,
    }
}

impl Engine {
    /// Stores an MRTR round and pauses the call on its first question.
    pub(super) async fn ask_round(
        &self,
        conversation_id: &str,
        message_id: &str,
        tc: &ToolCall,
        round: InputRequired,
        approval_uuid: Option<String>,
    ) -> Result<Question, crate::engine::error::EngineError> {
        let expires_in = self.question_lifetime(tc.server.as_deref());
        let questions = new_questions(conversation_id, message_id, tc, round.asks, expires_in);
        let shared = Round {
            state: round.state,
            answered: round.answered,
        };
        let stored = self
            .inner
            .store
            .ask_round(questions, shared, approval_uuid, Era::Round)
            .await?;
        let first = stored
            .into_iter()
            .next()
            .map(|q| q.question)
            .ok_or_else(|| {
                crate::engine::error::EngineError::Task("a round without questions".into())
            })?;
        self.announce_question(&first, false);
        Ok(first)
    }

    /// Whether a call in `scope` may ask the humans: in simple mode; inside
    /// pipeline nodes nothing can pause on a question, so it is declined.
    pub(super) fn asks_humans(&self, scope: &crate::engine::scope::Scope) -> bool {
        scope.node.is_none() && self.inner.pipeline.is_none()
    }

    /// How long a question of `server` waits.
    pub(crate) fn question_lifetime(&self, server: Option<&str>) -> Duration {
        let config = &self.inner.config;
        let server = server.and_then(|s| config.mcp_servers.iter().find(|m| m.name == s));
        config.questions.lifetime(server)
    }

    /// Tells the live views that a question waits; `in_flight`: it waits
    /// inside a running call (a live session), so the request waiting on
    /// the turn is answered now. A round's (or a proxy's) turn ends by
    /// itself and answers once it has let go of the conversation: a
    /// reply before that would let an immediate answer find it busy.
    pub(crate) fn announce_question(&self, q: &Question, in_flight: bool) {
        tracing::info!(question = %q.uuid, conversation = %q.conversation_id, tool = %q.tool_call.tool, "a tool asks the human");
        self.inner
            .events
            .emit(EventKind::QuestionAsked, &q.conversation_id, |e| {
                e.question = Some(q.uuid.clone());
                e.tool = Some(q.tool_call.tool.clone());
                e.status = Some(app::models::ConversationStatus::WaitingInput);
            });
        if in_flight {
            let _ = self.inner.asked.send(q.clone());
        }
    }

    /// An asker for a call of this turn (a question on a live session).
    pub(super) fn asker(
        &self,
        conversation_id: &str,
        message_id: &str,
        tc: &ToolCall,
        notes: Arc<Mutex<Vec<String>>>,
    ) -> crate::domain::tools::AskerRef {
        crate::domain::tools::AskerRef(Arc::new(TurnAsker {
            engine: self.clone(),
            conversation_id: conversation_id.to_string(),
            message_id: message_id.to_string(),
            call: call_of(tc),
            expires_in: self.question_lifetime(tc.server.as_deref()),
            notes,
        }))
    }
}

/// Asks the humans for one call of a running turn.
struct TurnAsker {
    engine: Engine,
    conversation_id: String,
    message_id: String,
    call: QuestionCall,
    expires_in: Duration,
    /// What the model is told before the result (an expired question).
    notes: Arc<Mutex<Vec<String>>>,
}

impl Asker for TurnAsker {
    fn ask(&self, ask: Ask) -> crate::domain::BoxFuture<'_, AskAnswer> {
        Box::pin(async move {
            let store = &self.engine.inner.store;
            let new = NewQuestion {
                conversation_id: self.conversation_id.clone(),
                message_id: self.message_id.clone(),
                call: self.call.clone(),
                ask,
                expires_in: self.expires_in,
                chain: Vec::new(),
                remote: None,
            };
            let q = match store.ask_live(new).await {
                Ok(q) => q,
                Err(e) => {
                    tracing::error!(error = %e, "could not store a question; declined");
                    return AskAnswer::decline();
                }
            };
            self.engine.announce_question(&q.question, true);
            let uuid = q.question.uuid.clone();
            let deadline = tokio::time::Instant::now() + self.expires_in;
            // A cancel of the turn (A2A CancelTask) ends the wait: the
            // question is cancelled and the tool hears so.
            let stop = self.engine.inner.turns.token(&self.conversation_id);
            loop {
                let woken = self.engine.inner.answered.notified();
                match store.question(&uuid).await {
                    Ok(Some(now)) if now.question.status != QuestionStatus::Pending => {
                        if now.question.status == QuestionStatus::Expired {
                            self.note(EXPIRED_NOTE);
                        }
                        return answer_of(&now);
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!(error = %e, question = %uuid, "could not read a question")
                    }
                }
                if tokio::time::Instant::now() >= deadline {
                    self.engine.expire_question(&uuid).await;
                    continue;
                }
                tokio::select! {
                    _ = woken => {}
                    _ = tokio::time::sleep(POLL) => {}
                    _ = stop.cancelled() => {
                        let _ = store
                            .answer_question(AnswerRecord {
                                uuid: uuid.clone(),
                                status: QuestionStatus::Cancelled,
                                action: "cancel".into(),
                                content: None,
                                by: "agent".into(),
                                via: crate::domain::channel::Channel::Cancel,
                            })
                            .await;
                    }
                }
            }
        })
    }
}

impl TurnAsker {
    fn note(&self, text: &str) {
        self.notes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(text.to_string());
    }
}

impl Engine {
    /// Expires one question (`cancel` for the tool), audited. A round it
    /// completes is retried by the caller ([`Engine::expire_questions`]).
    pub(crate) async fn expire_question(&self, uuid: &str) -> bool {
        let done = self
            .inner
            .store
            .answer_question(AnswerRecord {
                uuid: uuid.to_string(),
                status: QuestionStatus::Expired,
                action: "cancel".into(),
                content: None,
                by: "agent".into(),
                via: crate::domain::channel::Channel::Expiry,
            })
            .await;
        match done {
            Ok(crate::store::questions::Answered::Done { resume }) => {
                self.inner.answered.notify_waiters();
                resume
            }
            Ok(_) => false,
            Err(e) => {
                tracing::warn!(error = %e, question = %uuid, "could not expire a question");
                false
            }
        }
    }

    /// The sweeper's look at questions past their expiry: a live-session
    /// question's waiting call hears `cancel`; a round's call is retried
    /// with it, under the conversation's lock.
    pub(crate) async fn expire_questions(&self) {
        let due = match self.inner.store.due_questions(100).await {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(error = %e, "could not look for expired questions");
                return;
            }
        };
        for q in due {
            let id = q.question.conversation_id.clone();
            match q.era {
                Era::Session => {
                    self.expire_question(&q.question.uuid).await;
                }
                Era::Round | Era::Proxy => {
                    let Ok(guard) = self.lock(&id).await else {
                        continue;
                    };
                    if self.expire_question(&q.question.uuid).await {
                        self.emit_answered(&q.question, "expired");
                        let engine = self.clone();
                        let ctx = CallContext::default();
                        let turn = async move {
                            let ran = engine.run_turn(id, ctx, guard, None, None, None).await;
                            if let Err(e) = ran {
                                tracing::warn!(error = %e, "the turn after an expired question failed");
                            }
                        };
                        let what = "turn after an expired question";
                        self.inner.tasks.spawn_background(what, turn);
                    } else {
                        guard.release().await;
                    }
                }
            }
        }
    }

    pub(crate) fn emit_answered(&self, q: &Question, how: &str) {
        self.inner
            .events
            .emit(EventKind::QuestionAnswered, &q.conversation_id, |e| {
                e.question = Some(q.uuid.clone());
                e.tool = Some(q.tool_call.tool.clone());
                e.detail = Some(how.to_string());
            });
    }
}
