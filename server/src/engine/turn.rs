//! One turn: the model, the tools, and the pause at a destructive call.

use super::gate::Gate;
use super::history::{condensed, transcript};
use super::scope::{LocalAction, Scope};
use super::{Ctx, Engine, EngineError, Reply};
use crate::domain::tools::{ToolError, ToolInfo, ToolOutput};
use crate::llm::{ChatMessage, ChatRequest, ChatResponse, ToolSpec};
use crate::store::approvals::NewApproval;
use crate::store::{NewMessage, Settle, StepMessage, StoreError, StoredMessage};
use app::models::{
    ApprovalStatus, ConversationStatus, EventKind, PendingApproval, ProcessResult, Role, ToolCall,
};
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

/// What handling one call did.
pub(super) enum Handled {
    /// The turn pauses: the call waits for this approval.
    Paused(Box<PendingApproval>),
    /// The call ran here and this result was recorded (with its note).
    Ran(CallResult),
    /// Anything else (answered otherwise, delegated, declined…).
    Other,
}

/// A call's result as recorded.
pub(super) struct CallResult {
    text: String,
    is_error: bool,
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

impl Engine {
    /// Runs the turn of `conversation_id` until it answers or pauses, as a
    /// detached task that owns `guard` (the conversation's lock), and builds
    /// the reply. `first`: the conversation was created for this turn with
    /// this message, so it has no earlier pipeline run to check, and simple
    /// mode starts from it without reading the conversation back.
    pub(crate) async fn run_turn(
        &self,
        conversation_id: String,
        ctx: Ctx,
        guard: super::locks::LockGuard,
        first: Option<StoredMessage>,
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
        let task = tokio::spawn(tracing::Instrument::instrument(
            async move {
                let started = std::time::Instant::now();
                engine.inner.turns.start(&id);
                let outcome = engine.drive(&id, &ctx, first).await;
                engine.inner.turns.end(&id);
                let how = match &outcome {
                    Ok(TurnOutcome::Done(..)) => "completed",
                    Ok(TurnOutcome::Waiting(_)) => "waiting_approval",
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
                        if let Err(e) = engine.inner.store.end_turn(&id).await {
                            tracing::error!(conversation = %id, error = %e, "could not clear the running flag");
                        }
                    }
                    Ok(_) => {}
                }
                guard.release().await;
                match &outcome {
                    Ok(TurnOutcome::Done(..)) | Err(_) => engine.emit_status(&id, None, false),
                    // The approval request already said so.
                    Ok(TurnOutcome::Waiting(_)) => {}
                }
                outcome
            },
            span,
        ));
        let outcome = task.await.map_err(|e| EngineError::Task(e.to_string()))??;
        self.reply(&conversation_id, outcome).await
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
                },
                snapshot,
            ),
            TurnOutcome::Waiting(a) => (
                ProcessResult {
                    response: format!("Approval needed: {}", a.description),
                    waiting_approval: true,
                    approval: Some(*a),
                },
                None,
            ),
        };
        let conversation = match snapshot {
            Some(c) => *c,
            None => super::decide::load(&self.inner.store, conversation_id).await?,
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
    ) -> Result<TurnOutcome, EngineError> {
        if self.inner.pipeline.is_some() {
            return self.drive_pipeline(conversation_id, ctx).await;
        }
        if first.is_none()
            && let Some(problem) = super::pipeline::paused_elsewhere(self, conversation_id).await?
        {
            return Err(problem);
        }
        let user = first.as_ref().map(|m| m.message.content.as_str());
        let scope = self.simple_scope(conversation_id, user).await?;
        let known = first.map(|m| vec![m]);
        let end = self.run_scope(conversation_id, &scope, ctx, known).await?;
        Ok(match end {
            ScopeEnd::Waiting(a) => TurnOutcome::Waiting(a),
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
                    .handle_call(conversation_id, call, scope, ctx, fresh)
                    .await?
                {
                    Handled::Paused(paused) => return Ok(ScopeEnd::Waiting(paused)),
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
                    .is_some_and(|t| t.name == super::scope::EXIT_LOOP)
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
            let messages = if scope.node.is_some() {
                let mut m = condensed(&stored[..start]);
                m.push(ChatMessage::User(
                    turn.first()
                        .map(|u| u.message.content.clone())
                        .unwrap_or_default(),
                ));
                let own: Vec<StoredMessage> = mine.iter().map(|m| (*m).clone()).collect();
                m.extend(transcript(&own));
                m
            } else {
                transcript(&stored)
            };
            let req = ChatRequest {
                system: scope.system.clone(),
                messages,
                tools: tools
                    .iter()
                    .filter(|t| t.available)
                    .map(|t| ToolSpec {
                        name: t.name.clone(),
                        description: t.description.clone(),
                        parameters: t.input_schema.clone(),
                    })
                    .collect(),
                max_tokens: self.inner.config.llm.max_tokens,
            };
            let described = llm.describe();
            let (provider, model) = described.split_once(':').unwrap_or(("", &described));
            // The GenAI semantic-convention names beside the short ones, so
            // tracing back ends that chart model usage find them.
            let model_span = tracing::info_span!(
                "llm",
                sid = %ctx.session_id,
                provider,
                model,
                "gen_ai.system" = provider,
                "gen_ai.request.model" = model,
                tools = req.tools.len(),
                outcome = tracing::field::Empty,
                input_tokens = tracing::field::Empty,
                output_tokens = tracing::field::Empty,
                "gen_ai.usage.input_tokens" = tracing::field::Empty,
                "gen_ai.usage.output_tokens" = tracing::field::Empty,
            );
            // The model's answer is not waited for once cancelled (asking
            // it again later has no side effect).
            let answer = tokio::select! {
                a = tracing::Instrument::instrument(llm.complete(&req), model_span.clone()) => a,
                _ = cancelled.cancelled() => {
                    return Err(EngineError::Cancelled(conversation_id.to_string()));
                }
            };
            model_span.record("outcome", if answer.is_ok() { "ok" } else { "error" });
            if let Some(usage) = answer.as_ref().ok().and_then(|a| a.usage) {
                for (field, n) in [
                    ("input_tokens", usage.input),
                    ("output_tokens", usage.output),
                    ("gen_ai.usage.input_tokens", usage.input),
                    ("gen_ai.usage.output_tokens", usage.output),
                ] {
                    model_span.record(field, n);
                }
                crate::telemetry::metrics::get().llm_tokens(provider, usage.input, usage.output);
            }
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
                    let conversation = super::decide::load(store, conversation_id).await?;
                    return Err(EngineError::Llm {
                        error,
                        conversation: Box::new(conversation),
                    });
                }
            }
        }
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
            scope.system = super::pipeline::resolve(&scope.system, &state);
        }
        Ok(scope)
    }

    /// The router's tools plus the scope's own.
    fn scope_tools(&self, scope: &Scope) -> Vec<ToolInfo> {
        let mut tools = self.inner.tools.tools();
        tools.extend(scope.local.iter().map(|t| t.info.clone()));
        tools
    }

    /// The text that ends a scope with `on_reject: stop`, if one of its
    /// calls was rejected.
    pub(super) async fn rejected_in(
        &self,
        mine: &[&StoredMessage],
    ) -> Result<Option<String>, EngineError> {
        let ids: Vec<String> = mine
            .iter()
            .filter(|m| {
                m.message
                    .tool_call
                    .as_ref()
                    .is_some_and(|t| t.is_error == Some(true))
            })
            .map(|m| m.message.id.clone())
            .collect();
        if ids.is_empty() {
            return Ok(None);
        }
        let found = self.inner.store.first_declined(ids).await?;
        Ok(found.map(|a| {
            let reason = a
                .reason
                .as_deref()
                .map(str::trim)
                .filter(|r| !r.is_empty())
                .map(|r| format!(" (reason: {r})"))
                .unwrap_or_default();
            format!(
                "Stopped: the operator rejected `{}`{reason}, and this node is set to `on_reject: stop`, so the pipeline ends here.",
                a.approval.tool_name
            )
        }))
    }

    /// Stores one model answer: its text, then one tool message per call.
    /// Calls that cannot run (bad arguments, unknown tool) get their error
    /// result right away, so the model hears about them on the next step.
    /// An answer without calls ends the turn: the running flag is cleared in
    /// the same transaction and the text is returned.
    async fn record_step(
        &self,
        conversation_id: &str,
        resp: ChatResponse,
        tools: &[ToolInfo],
        scope: &Scope,
        step: &str,
    ) -> Result<Step, StoreError> {
        let final_text = resp.tool_calls.is_empty().then(|| {
            let t = resp.text.clone().unwrap_or_default();
            if t.is_empty() {
                "(the model returned an empty answer)".to_string()
            } else {
                t
            }
        });
        let step = step.to_string();
        let mut rows: Vec<StepMessage> = Vec::new();
        let text = resp.text.clone().unwrap_or_default();
        if !text.is_empty() || resp.tool_calls.is_empty() {
            let content = if text.is_empty() {
                "(the model returned an empty answer)".to_string()
            } else {
                text
            };
            rows.push(StepMessage {
                message: NewMessage {
                    step: Some(step.clone()),
                    ..NewMessage::text(Role::Assistant, content)
                }
                .in_node(scope.node.as_ref()),
                immediate: None,
            });
        }
        for c in resp.tool_calls {
            let info = tools.iter().find(|t| t.name == c.name);
            let immediate = if let Some(e) = &c.arguments_error {
                Some((
                    format!("Invalid arguments, the tool was not run: {e}"),
                    true,
                ))
            } else if info.is_none() {
                let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
                Some((
                    format!(
                        "{}; the available tools are: {}",
                        ToolError::Unknown(c.name.clone()),
                        names.join(", ")
                    ),
                    true,
                ))
            } else {
                None
            };
            rows.push(StepMessage {
                message: NewMessage {
                    tool_call: Some(ToolCall {
                        name: c.name.clone(),
                        arguments: c.arguments.clone(),
                        server: info.map(|i| i.server.clone()),
                        ..Default::default()
                    }),
                    call_id: Some(c.id.clone()),
                    step: Some(step.clone()),
                    signature: c.signature.clone(),
                    ..NewMessage::text(Role::Tool, "")
                }
                .in_node(scope.node.as_ref()),
                immediate,
            });
        }
        let ends_turn = final_text.is_some();
        let clear_running = ends_turn && scope.owns_status();
        // With the turn's end, its reply is read where it was written.
        let recorded = self
            .inner
            .store
            .record_step(conversation_id, rows, clear_running)
            .await?;
        self.inner
            .events
            .emit(EventKind::MessageAdded, conversation_id, |e| {
                e.running = Some(!clear_running);
                e.node = scope.node_name();
            });
        Ok(match final_text {
            Some(t) => Step::Final(t, recorded.conversation.map(Box::new)),
            None => Step::Calls(recorded.messages),
        })
    }

    /// Stores a pending approval and publishes it. In simple mode the
    /// conversation pauses in the same transaction; a pipeline pauses once
    /// every branch has stopped. `settle` runs in that transaction too (a
    /// proxy approval marks the delegation step done there).
    pub(super) async fn request_approval(
        &self,
        conversation_id: &str,
        new: NewApproval,
        scope: &Scope,
        settle: Option<Settle>,
    ) -> Result<PendingApproval, EngineError> {
        let owns = scope.owns_status();
        let tool = new.tool_name.clone();
        let created = self.inner.store.request_approval(new, owns, settle).await?;
        tracing::info!(conversation = %conversation_id, approval = %created.approval.uuid, tool = %tool, remote = created.approval.remote_agent_name.as_deref().unwrap_or("-"), "approval requested");
        self.inner
            .events
            .emit(EventKind::ApprovalRequested, conversation_id, |e| {
                e.status = Some(ConversationStatus::WaitingApproval);
                e.running = Some(!owns);
                e.tool = Some(tool.clone());
                e.approval = Some(created.approval.uuid.clone());
                e.node = scope.node_name();
            });
        Ok(created.approval)
    }

    /// Handles the first unanswered call of the turn: says whether the turn
    /// must pause, or the result it recorded when the call ran. `fresh`: the call was recorded by this turn's own step,
    /// under its lease, so no approval can exist for it yet (one round trip
    /// less per call on PostgreSQL).
    pub(super) async fn handle_call(
        &self,
        conversation_id: &str,
        call: &StoredMessage,
        scope: &Scope,
        ctx: &Ctx,
        fresh: bool,
    ) -> Result<Handled, EngineError> {
        let store = &self.inner.store;
        let Some(tc) = call.message.tool_call.clone() else {
            return Ok(Handled::Other);
        };
        let message_id = call.message.id.clone();
        let info = self
            .scope_tools(scope)
            .into_iter()
            .find(|t| t.name == tc.name);
        let approval = if fresh {
            None
        } else {
            store.approval_for_message(&message_id).await?
        };
        // Only a call nobody has ruled on yet meets the gate.
        let gate = match approval {
            None => self.gate(&tc, info.as_ref(), scope),
            Some(_) => Gate::Run,
        };
        if let Some(LocalAction::A2a { agent, url }) =
            scope.local_tool(&tc.name).map(|t| t.action.clone())
        {
            let target = super::delegate::Target {
                agent: &agent,
                url: &url,
            };
            let paused = self
                .handle_delegation(
                    conversation_id,
                    &message_id,
                    &tc,
                    approval,
                    gate,
                    target,
                    scope,
                    ctx,
                )
                .await?;
            return Ok(paused.map_or(Handled::Other, |a| Handled::Paused(Box::new(a))));
        }
        match approval {
            None if matches!(gate, Gate::Deny { .. }) => {
                if let Gate::Deny { rule, reason } = gate {
                    self.deny(conversation_id, &message_id, &tc, (rule, reason), scope)
                        .await?;
                }
                Ok(Handled::Other)
            }
            None if matches!(gate, Gate::Ask { .. }) => {
                let Gate::Ask {
                    rule,
                    approvers,
                    quorum,
                    expires_in,
                } = gate
                else {
                    return Ok(Handled::Other);
                };
                let description = describe_call(&tc.name, tc.server.as_deref(), &tc.arguments);
                let new = NewApproval {
                    conversation_id: conversation_id.to_string(),
                    message_id,
                    tool_name: tc.name.clone(),
                    server: tc.server.clone(),
                    tool_args: tc.arguments.clone(),
                    description,
                    remote: None,
                    traceparent: crate::telemetry::current_traceparent(),
                    rule: Some(rule),
                    approvers,
                    quorum,
                    expires_in,
                };
                Ok(Handled::Paused(Box::new(
                    self.request_approval(conversation_id, new, scope, None)
                        .await?,
                )))
            }
            None => self
                .execute(conversation_id, &message_id, &tc, (None, None), scope, ctx)
                .await
                .map(|ran| ran.map_or(Handled::Other, Handled::Ran)),
            Some(a) => match a.status {
                ApprovalStatus::Pending => Ok(Handled::Paused(Box::new(a.approval))),
                ApprovalStatus::Approved => {
                    // Edited before approving: the tool runs with the
                    // approver's arguments, and the model hears so.
                    let (run, note) = match &a.approval.edited_args {
                        Some(edited) => {
                            let changes = super::edit::diff(&tc.arguments, edited);
                            let note = format!(
                                "An approver ({}) edited the arguments before approving ({}); the tool ran with {edited}.",
                                a.approval.edited_by.as_deref().unwrap_or("?"),
                                changes.join("; ")
                            );
                            let mut run = tc.clone();
                            run.arguments = edited.clone();
                            (run, Some(note))
                        }
                        None => (tc.clone(), None),
                    };
                    self.execute(
                        conversation_id,
                        &message_id,
                        &run,
                        (Some(a.approval.uuid.clone()), note),
                        scope,
                        ctx,
                    )
                    .await
                    .map(|ran| ran.map_or(Handled::Other, Handled::Ran))
                }
                ApprovalStatus::Expired => {
                    // The expiry answered the call in its transaction; this
                    // covers a result write that was lost.
                    let text = super::gate::expired_text(a.reason.as_deref());
                    store
                        .answer_call(conversation_id, &message_id, text, true)
                        .await?;
                    Ok(Handled::Other)
                }
                ApprovalStatus::Rejected | ApprovalStatus::Cancelled => {
                    let text = declined_text(a.reason.as_deref());
                    store
                        .answer_call(conversation_id, &message_id, text, true)
                        .await?;
                    self.inner
                        .events
                        .emit(EventKind::ToolCallFinished, conversation_id, |e| {
                            e.tool = Some(tc.name.clone());
                            e.detail = Some("declined".into());
                            e.node = scope.node_name();
                        });
                    Ok(Handled::Other)
                }
                ApprovalStatus::Executing
                | ApprovalStatus::InDoubt
                | ApprovalStatus::Executed
                | ApprovalStatus::Failed => {
                    // Only reachable if a result write was lost; never run again.
                    let text = super::recovery::IN_DOUBT_TEXT.to_string();
                    store
                        .answer_call(conversation_id, &message_id, text, true)
                        .await?;
                    Ok(Handled::Other)
                }
            },
        }
    }

    /// Runs one call, write-ahead: `executing`/started is committed before
    /// the tool runs; the result and `executed`/`failed` commit together.
    /// `(approval, note)`: the approval the call runs under, and what the
    /// model is told before the result (an approver's edit).
    async fn execute(
        &self,
        conversation_id: &str,
        message_id: &str,
        tc: &ToolCall,
        (approval, note): (Option<String>, Option<String>),
        scope: &Scope,
        ctx: &Ctx,
    ) -> Result<Option<CallResult>, EngineError> {
        let store = &self.inner.store;
        let may_run = store
            .claim_call(conversation_id, message_id, approval.clone())
            .await?;
        if !may_run {
            // Another writer moved the approval on; never run twice.
            return Ok(None);
        }
        tracing::info!(tool = %tc.name, approval = approval.as_deref().unwrap_or("-"), "tool call started");
        self.inner
            .events
            .emit(EventKind::ToolCallStarted, conversation_id, |e| {
                e.running = Some(true);
                e.tool = Some(tc.name.clone());
                e.approval = approval.clone();
                e.node = scope.node_name();
            });
        let started = std::time::Instant::now();
        let tool_span = tracing::info_span!(
            "tool",
            sid = %ctx.session_id,
            tool = %tc.name,
            server = tc.server.as_deref().unwrap_or("local"),
            outcome = tracing::field::Empty,
        );
        let called =
            tracing::Instrument::instrument(self.call_tool(tc, scope, ctx), tool_span.clone())
                .await;
        let (text, is_error) = match called {
            Ok(out) => (out.text, out.is_error),
            Err(e) => (e.to_string(), true),
        };
        tool_span.record("outcome", if is_error { "error" } else { "ok" });
        tracing::info!(tool = %tc.name, is_error, ms = started.elapsed().as_millis() as u64, "tool call finished");
        crate::telemetry::metrics::get().tool_call(
            &tc.name,
            tc.server.as_deref().unwrap_or("local"),
            !is_error,
        );
        let text = match note {
            Some(n) => format!("{n}\n{text}"),
            None => text,
        };
        self.finish_call(
            conversation_id,
            message_id,
            tc,
            &text,
            is_error,
            approval,
            scope,
        )
        .await?;
        Ok(Some(CallResult { text, is_error }))
    }

    /// Calls a tool: the scope's own (`exit_loop`, sub-agents) or the router's.
    async fn call_tool(
        &self,
        tc: &ToolCall,
        scope: &Scope,
        ctx: &Ctx,
    ) -> Result<ToolOutput, ToolError> {
        let Some(local) = scope.local_tool(&tc.name) else {
            return self
                .inner
                .tools
                .call(&tc.name, tc.arguments.clone(), ctx)
                .await;
        };
        match &local.action {
            LocalAction::ExitLoop => Ok(ToolOutput {
                text: "The loop ends after this step.".into(),
                is_error: false,
            }),
            // Delegations go through `delegate.rs` (proxy approvals).
            LocalAction::A2a { agent, .. } => Err(ToolError::Failed {
                tool: tc.name.clone(),
                message: format!("the sub-agent `{agent}` is called through a delegation"),
            }),
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
