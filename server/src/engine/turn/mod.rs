//! One turn: the tool loop (model → tools → model … → answer), pausing at
//! a destructive call. It runs a whole turn (simple mode) or one pipeline
//! node (`scope`).
//!
//! - `model`: the transcript as a model request, and the model call;
//! - `step`: a model answer recorded as one step (text, then its calls);
//! - `scope`: where a loop runs and with which tools;
//! - `history`: the stored timeline as a model transcript.
//!
//! Each pass of the loop derives what to do next from the stored messages:
//! an unanswered call goes to `calls::handle_call`, otherwise the model is
//! asked.

pub(super) mod history;
mod model;
pub(super) mod scope;
mod step;

use crate::engine::calls::{CallResult, Handled};
use crate::engine::{Ctx, Engine, EngineError, Reply};
use crate::store::approvals::Approval;
use crate::store::{NewMessage, StoreError, StoredMessage};
use app::models::{EventKind, PendingApproval, ProcessResult, Role};
use scope::Scope;
use serde_json::Value;

/// How a tool loop ended.
#[derive(Clone, Debug)]
pub(crate) enum ScopeEnd {
    /// The model answered with text.
    Done(String),
    /// Simple mode: the model answered with text, and the conversation as
    /// the final write left it (read in that write's transaction, so the
    /// reply needs no read of its own).
    Answered(String, Box<app::models::Conversation>),
    /// A destructive call waits for an operator.
    Waiting(Box<PendingApproval>),
    /// A call asked the human something and waits for the answer.
    Asking(Box<app::models::Question>),
    /// The model called `exit_loop` (its text, if any).
    ExitLoop(String),
    /// A call was rejected and the node says `on_reject: stop`.
    Stopped(String),
}

/// What one recorded model step asks for next.
enum Step {
    /// A final answer: its text, and the conversation as the write that
    /// ended the turn left it (when it did).
    Final(String, Option<Box<app::models::Conversation>>),
    /// Calls to handle: the step's messages as stored.
    Calls(Vec<StoredMessage>),
}

/// `stored` with the result of call `message_id` as its commit wrote it
/// (`store::messages::with_result`: the result and whether it failed,
/// nothing else the loop reads). `None` if the call is not in it: the loop
/// then reads, and never sees the call unanswered (it would run again).
fn answered(
    mut stored: Vec<StoredMessage>,
    message_id: &str,
    result: CallResult,
) -> Option<Vec<StoredMessage>> {
    let call = stored
        .iter_mut()
        .find(|m| m.message.id == message_id)
        .and_then(|m| m.message.tool_call.as_mut())?;
    call.result = Some(result.text);
    call.is_error = Some(result.is_error);
    Some(stored)
}

/// How a turn ended.
#[derive(Clone, Debug)]
pub(crate) enum TurnOutcome {
    /// The model answered with text; the conversation as the turn's last
    /// write left it, when that write read it back.
    Done(String, Option<Box<app::models::Conversation>>),
    /// A destructive call waits for an operator.
    Waiting(Box<PendingApproval>),
    /// A tool asked the human something (QUESTIONS.md).
    Asking(Box<app::models::Question>),
}

/// The result text of a call the operator rejected.
pub(crate) fn declined_text(reason: Option<&str>) -> String {
    match reason.map(str::trim).filter(|r| !r.is_empty()) {
        Some(r) => {
            format!("The operator rejected this action, so it was not run. Their reason: {r}")
        }
        None => "The operator rejected this action, so it was not run.".to_string(),
    }
}

/// A readable one-line description of a call, for the approval card.
pub(crate) fn describe_call(tool: &str, server: Option<&str>, args: &Value) -> String {
    let args_text = match args {
        Value::Object(m) if !m.is_empty() => m
            .iter()
            .map(|(k, v)| {
                let mut s = v.to_string();
                if s.chars().count() > 120 {
                    s = format!("{}…", s.chars().take(120).collect::<String>());
                }
                format!("{k}={s}")
            })
            .collect::<Vec<_>>()
            .join(", "),
        Value::Object(_) | Value::Null => String::new(),
        other => other.to_string(),
    };
    match server {
        Some(s) => format!("Run `{tool}({args_text})` on {s}"),
        None => format!("Run `{tool}({args_text})`"),
    }
}

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
        ctx: Ctx,
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
        ctx: Ctx,
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
        ctx: &Ctx,
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

    /// The tool loop of one scope: model → tools → model … until the model
    /// answers, a call waits for approval, or the scope ends otherwise.
    /// Re-reads the conversation before each step, so it resumes from
    /// whatever the last commit left, except where this turn made that
    /// commit itself under its lease (simple mode): `known`, the messages
    /// of a conversation created for this turn, and after each recorded
    /// step or call result the loop goes on from what it wrote.
    pub(crate) async fn run_scope(
        &self,
        conversation_id: &str,
        scope: &Scope,
        ctx: &Ctx,
        known: Option<Vec<StoredMessage>>,
        decided: Option<Approval>,
    ) -> Result<ScopeEnd, EngineError> {
        let store = &self.inner.store;
        let cancelled = self.inner.turns.token(conversation_id);
        // The step this loop just recorded: its calls were written here and
        // nobody has ruled on them, so they need no read of an approval.
        let mut recorded: Option<String> = None;
        // The messages as this turn's last commit left them (simple mode):
        // the turn holds the conversation's lease, so nothing else wrote
        // since, and the next pass needs no read. Any other pass reads.
        // (The engine's view: the call times it never reads are not kept.)
        let mut known = known.filter(|_| scope.node.is_none());
        // The approval a decision just moved on (simple mode): handed to
        // its call instead of read again.
        let mut decided = decided.filter(|_| scope.node.is_none());
        loop {
            // A cancel is seen between steps: a tool that started finishes
            // and its result is kept.
            if cancelled.is_cancelled() {
                return Err(EngineError::Cancelled(conversation_id.to_string()));
            }
            let stored = match known.take() {
                Some(stored) => stored,
                None => store.messages(conversation_id).await?,
            };
            let start = stored
                .iter()
                .rposition(|m| m.message.role == Role::User)
                .unwrap_or(0);
            let turn = &stored[start..];
            let mine: Vec<&StoredMessage> = turn.iter().filter(|m| scope.owns(m)).collect();

            if let Some(call) = mine.iter().find(|m| m.is_unanswered_call()) {
                let fresh = recorded.is_some() && call.step == recorded;
                let message_id = call.message.id.clone();
                match self
                    .handle_call(
                        conversation_id,
                        call,
                        scope,
                        ctx,
                        fresh,
                        decided.take_if(|a| a.message_id == message_id),
                    )
                    .await?
                {
                    Handled::Paused(paused) => return Ok(ScopeEnd::Waiting(paused)),
                    Handled::Asked(q) => return Ok(ScopeEnd::Asking(q)),
                    // Its result is the one write since `stored` (the
                    // call was recorded by this turn, so nobody else could
                    // rule on it): the next pass goes on without a read.
                    Handled::Ran(result) if fresh && scope.node.is_none() => {
                        known = answered(stored, &message_id, result);
                    }
                    Handled::Ran(_) | Handled::Other => {}
                }
                continue;
            }
            if scope.stop_on_reject
                && let Some(text) = self.rejected_in(&mine).await?
            {
                return Ok(ScopeEnd::Stopped(text));
            }
            let last_text = || {
                mine.iter()
                    .rev()
                    .find(|m| m.message.role == Role::Assistant)
                    .map(|m| m.message.content.clone())
            };
            if mine.iter().any(|m| {
                m.message
                    .tool_call
                    .as_ref()
                    .is_some_and(|t| t.name == self::scope::EXIT_LOOP)
            }) {
                return Ok(ScopeEnd::ExitLoop(
                    last_text().unwrap_or_else(|| "Exited the loop.".into()),
                ));
            }
            if let Some(last) = mine
                .iter()
                .rev()
                .find(|m| m.message.role != Role::System)
                .filter(|m| m.message.role == Role::Assistant)
            {
                if scope.owns_status() {
                    store.end_turn(conversation_id).await?;
                }
                return Ok(ScopeEnd::Done(last.message.content.clone()));
            }
            let steps = count_steps(&mine);
            let max = self.inner.config.llm.max_steps as usize;
            if steps >= max {
                let note = format!(
                    "Stopped: the model made {steps} calls in this turn without finishing (llm.max_steps is {max}). \
                     Send another message to let it go on."
                );
                let m = NewMessage::text(Role::System, note.clone()).in_node(scope.node.as_ref());
                store
                    .add_note(conversation_id, m, scope.owns_status())
                    .await?;
                return Ok(ScopeEnd::Done(note));
            }
            let Some(llm) = scope.llm.clone() else {
                return Err(EngineError::Task(
                    "this node has no model to ask".to_string(),
                ));
            };
            self.inner
                .events
                .emit(EventKind::ModelCalled, conversation_id, |e| {
                    e.running = Some(true);
                    e.node = scope.node_name();
                    e.detail = Some(format!("step {} of at most {max}", steps + 1));
                });
            let tools = self.scope_tools(scope);
            let messages = model::request_messages(scope, &stored, start, &mine);
            let answer = self
                .ask_model(&llm, scope, ctx, messages, &tools, &cancelled)
                .await
                .ok_or_else(|| EngineError::Cancelled(conversation_id.to_string()))?;
            match answer {
                Ok(resp) => {
                    let step = crate::domain::ids::new_id();
                    // A final answer ends the scope without another read.
                    match self
                        .record_step(conversation_id, resp, &tools, scope, &step)
                        .await?
                    {
                        Step::Final(text, Some(c)) => return Ok(ScopeEnd::Answered(text, c)),
                        Step::Final(text, None) => return Ok(ScopeEnd::Done(text)),
                        Step::Calls(written) => {
                            recorded = Some(step);
                            if scope.node.is_none() {
                                let mut next = stored;
                                next.extend(written);
                                known = Some(next);
                            }
                        }
                    }
                }
                Err(error) => {
                    tracing::warn!(conversation = %conversation_id, node = scope.node_name().as_deref().unwrap_or("-"), error = %error, "model call failed");
                    let text = match &scope.node {
                        Some(t) => format!("The model call of node `{}` failed: {error}", t.name),
                        None => format!("The model call failed: {error}"),
                    };
                    let note = NewMessage::text(Role::System, text).in_node(scope.node.as_ref());
                    store.fail_turn(conversation_id, note).await?;
                    let conversation =
                        crate::engine::commands::load(store, conversation_id).await?;
                    return Err(EngineError::Llm {
                        error,
                        conversation: Box::new(conversation),
                    });
                }
            }
        }
    }
}

/// Model steps taken in this scope: distinct `step` ids.
fn count_steps(turn: &[&StoredMessage]) -> usize {
    let mut seen: Vec<&str> = Vec::new();
    for m in turn {
        if let Some(s) = m.step.as_deref()
            && !seen.contains(&s)
        {
            seen.push(s);
        }
    }
    seen.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn descriptions_show_tool_server_and_arguments() {
        assert_eq!(
            describe_call(
                "resources_add",
                Some("resources"),
                &json!({"name": "apples", "value": 12})
            ),
            "Run `resources_add(name=\"apples\", value=12)` on resources"
        );
        assert_eq!(describe_call("x", None, &json!({})), "Run `x()`");
        let long = describe_call("x", None, &json!({"s": "a".repeat(500)}));
        assert!(long.chars().count() < 200, "{long}");
    }

    #[test]
    fn declined_text_carries_the_reason() {
        assert!(declined_text(Some("too risky")).ends_with("Their reason: too risky"));
        assert!(!declined_text(Some("  ")).contains("reason"));
    }
}
