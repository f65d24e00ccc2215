//! A turn as a task: spawned on the engine's owner holding the
//! conversation's lock (`run_turn`), driven to its end (the pipeline when
//! one is configured, else the simple tool loop in simple mode's scope),
//! counted, and answered with the conversation (`reply`).
//!
//! This is the one place that chooses between the pipeline and the simple
//! tool loop, so the tool loop (`turn/`) never imports the pipeline.

use crate::domain::tools::CallContext;
use crate::engine::error::EngineError;
use crate::engine::handle::Engine;
use crate::engine::outcome::TurnOutcome;
use crate::engine::reply::Reply;
use crate::engine::scope::Scope;
use crate::engine::turn::tool_loop::ScopeEnd;
use crate::store::approvals::Approval;
use crate::store::{StoreError, StoredMessage};
use app::models::ProcessResult;

/// What the turn's task ended with: its outcome, or why it has none (it
/// panicked, or shutdown stopped it, which leaves the store as a crash at
/// that point would: the crash rules settle it at the next start).
fn ended(
    joined: Result<Option<Result<TurnOutcome, EngineError>>, tokio::task::JoinError>,
) -> Result<TurnOutcome, EngineError> {
    match joined {
        Ok(Some(outcome)) => outcome,
        Ok(None) => Err(EngineError::Task("the agent is shutting down".into())),
        Err(e) => Err(EngineError::Task(e.to_string())),
    }
}

impl Engine {
    /// Runs the turn of `conversation_id` until it answers or pauses, as a
    /// task of the engine's owner that owns `guard` (the conversation's
    /// lock), and builds the reply. `first`: the conversation was created
    /// for this turn with this message, so it has no earlier pipeline run to
    /// check, and simple mode starts from it without reading the
    /// conversation back.
    pub(crate) async fn run_turn(
        &self,
        conversation_id: String,
        ctx: CallContext,
        guard: crate::engine::locks::LockGuard,
        first: Option<StoredMessage>,
        decided: Option<Approval>,
        trace: Option<String>,
    ) -> Result<Reply, EngineError> {
        let engine = self.clone();
        let id = conversation_id.clone();
        // The turn keeps the request's span (and so its `sid=`) in every log
        // line, and adds the conversation id. After a decision, `trace` (the
        // approval's) puts it in the trace of the request that asked.
        let span =
            tracing::info_span!("turn", sid = %ctx.session_id, conversation = %conversation_id);
        if let Some(tp) = &trace {
            crate::telemetry::parent_from_traceparent(&span, tp);
        }
        let mut asked = self.inner.asked.subscribe();
        let body = async move { engine.on_task(id, ctx, guard, first, decided).await };
        let task = self
            .inner
            .tasks
            .spawn("turn", tracing::Instrument::instrument(body, span));
        // A question on a live MCP session waits inside the running turn:
        // the request that started it is answered with the question now,
        // and the turn goes on by itself once someone answers.
        let mut task = task;
        let outcome = loop {
            tokio::select! {
                joined = &mut task => break ended(joined)?,
                asked = asked.recv() => match asked {
                    Ok(q) if q.conversation_id == conversation_id => {
                        break TurnOutcome::Asking(Box::new(q));
                    }
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                        break ended((&mut task).await)?;
                    }
                },
            }
        };
        self.reply(&conversation_id, outcome).await
    }

    /// The turn's own task: drives it, counts how it ended, clears the
    /// running flag an error may have left, gives the conversation back and
    /// says so. Shutdown may stop it at any await point (see [`ended`]).
    async fn on_task(
        self,
        id: String,
        ctx: CallContext,
        guard: crate::engine::locks::LockGuard,
        first: Option<StoredMessage>,
        decided: Option<Approval>,
    ) -> Result<TurnOutcome, EngineError> {
        let started = std::time::Instant::now();
        self.inner.turns.start(&id);
        let outcome = self.drive(&id, &ctx, first, decided).await;
        self.inner.turns.end(&id);
        let how = match &outcome {
            Ok(TurnOutcome::Done(..)) => "completed",
            Ok(TurnOutcome::Waiting(_)) => "waiting_approval",
            Ok(TurnOutcome::Asking(_)) => "waiting_input",
            Err(EngineError::Cancelled(_)) => "cancelled",
            Err(_) => "failed",
        };
        crate::telemetry::metrics::get().turn(how, started.elapsed());
        // Every way out of `drive` that succeeds clears the running
        // flag in its last write; an error may not have.
        match &outcome {
            // Another replica took the turn over: it is its to end.
            Err(EngineError::Store(StoreError::LeaseLost(_))) => {
                tracing::warn!(conversation = %id, "the turn's lease was taken over by another replica; stopped");
            }
            Err(_) => {
                if let Err(e) = self.inner.store.end_turn(&id).await {
                    tracing::error!(conversation = %id, error = %e, "could not clear the running flag");
                }
            }
            Ok(_) => {}
        }
        guard.release().await;
        match &outcome {
            Ok(TurnOutcome::Done(..)) | Err(_) => self.emit_status(&id, None, false),
            // The approval request (or the question) already said so.
            Ok(TurnOutcome::Waiting(_) | TurnOutcome::Asking(_)) => {}
        }
        outcome
    }

    /// Builds the reply of a finished or paused turn.
    pub(crate) async fn reply(
        &self,
        conversation_id: &str,
        outcome: TurnOutcome,
    ) -> Result<Reply, EngineError> {
        let (result, snapshot) = match outcome {
            TurnOutcome::Done(text, snapshot) => (
                ProcessResult {
                    response: text,
                    waiting_approval: false,
                    approval: None,
                    waiting_input: false,
                    question: None,
                },
                snapshot,
            ),
            TurnOutcome::Waiting(a) => (
                ProcessResult {
                    response: format!("Approval needed: {}", a.description),
                    waiting_approval: true,
                    approval: Some(*a),
                    waiting_input: false,
                    question: None,
                },
                None,
            ),
            TurnOutcome::Asking(q) => (
                ProcessResult {
                    response: format!("`{}` asks: {}", q.tool_call.tool, q.message),
                    waiting_approval: false,
                    approval: None,
                    waiting_input: true,
                    question: Some(*q),
                },
                None,
            ),
        };
        let conversation = match snapshot {
            Some(c) => *c,
            None => crate::engine::commands::load(&self.inner.store, conversation_id).await?,
        };
        Ok(Reply {
            conversation,
            result,
        })
    }

    /// Runs the turn: the pipeline when one is configured, else the simple
    /// tool loop.
    async fn drive(
        &self,
        conversation_id: &str,
        ctx: &CallContext,
        first: Option<StoredMessage>,
        decided: Option<Approval>,
    ) -> Result<TurnOutcome, EngineError> {
        if self.inner.pipeline.is_some() {
            return self.drive_pipeline(conversation_id, ctx).await;
        }
        if first.is_none()
            && let Some(problem) =
                crate::engine::pipeline::paused_elsewhere(self, conversation_id).await?
        {
            return Err(problem);
        }
        let user = first.as_ref().map(|m| m.message.content.as_str());
        let scope = self.simple_scope(conversation_id, user).await?;
        let known = first.map(|m| vec![m]);
        let end = self
            .run_scope(conversation_id, &scope, ctx, known, decided)
            .await?;
        Ok(match end {
            ScopeEnd::Waiting(a) => TurnOutcome::Waiting(a),
            ScopeEnd::Asking(q) => TurnOutcome::Asking(q),
            ScopeEnd::Done(t) | ScopeEnd::ExitLoop(t) | ScopeEnd::Stopped(t) => {
                TurnOutcome::Done(t, None)
            }
            ScopeEnd::Answered(t, c) => TurnOutcome::Done(t, Some(c)),
        })
    }

    /// Simple mode's scope: the top-level prompt and model, or those of a
    /// lone `llm` root node (with its `a2a` tools), `{user_message}`
    /// resolved (`user`: the turn's message when the caller has it).
    async fn simple_scope(
        &self,
        conversation_id: &str,
        user: Option<&str>,
    ) -> Result<Scope, EngineError> {
        let root = self.inner.simple_root.as_ref();
        let prompt = root
            .and_then(|r| r.prompt.clone())
            .unwrap_or_else(|| self.inner.config.prompt.clone());
        let llm = self.model_for(root.and_then(|r| r.model.as_deref()))?;
        let mut scope = Scope::simple(prompt, llm);
        scope.local = self.sub_agent_tools();
        if scope.system.contains('{') {
            let user = match user {
                Some(text) => text.to_string(),
                None => self.inner.store.last_user_text(conversation_id).await?,
            };
            let state = std::collections::BTreeMap::from([(
                crate::config::USER_MESSAGE_KEY.to_string(),
                user,
            )]);
            scope.system = crate::engine::pipeline::resolve(&scope.system, &state);
        }
        Ok(scope)
    }
}
