//! Delegation to sub-agents, with approvals proxied across agents.
//!
//! A call to a sub-agent (`a2a_<name>` tool or `a2a` node) is a tool call
//! like any other: it may need local approval first (`destructiveHint`),
//! and sending it is a side effect written ahead (the call is marked
//! started, its approval `executing`). What differs is the answer: a
//! remote task that waits for a decision (`input-required`) becomes a
//! **proxy approval** on the same call, carrying the remote task id, the
//! sub-agent's name and the chain of agents the request came through. The
//! call then rests (nothing is in flight, so a restart changes nothing)
//! until an operator decides here; the decision is sent to the remote task
//! (same task id), whose next answer either completes the call or asks
//! again (another proxy approval). A rejection is forwarded too, so the
//! remote agent's model hears it; only a cancelled proxy ends the call
//! locally.
//!
//! A remote task that waits for the answer to a tool's question (a
//! `question` data part, QUESTIONS.md §4) becomes a **proxy question**
//! the same way: stored with the remote task and the remote question's
//! uuid, shown here with the chain, and its answer (or its expiry, as
//! `cancel`) sent to the remote task once, marked `relayed` in the
//! transaction that marks the call started. Inside a pipeline node,
//! where nothing can pause on a question, the remote hears `decline`.
//!
//! State is derived from the rows, as in the rest of the turn loop: the
//! call's latest approval (or its latest question) says what to do next.

use super::Handled;
use super::gate::Gate;
use crate::a2a::{Outgoing, RemoteQuestion, RemoteReply};
use crate::domain::tools::Ask;
use crate::engine::turn::declined_text;
use crate::engine::turn::scope::{LocalAction, Scope};
use crate::engine::{Ctx, Engine, EngineError};
use crate::store::approvals::{Approval, NewApproval, RemoteRef};
use crate::store::questions::{Era, NewQuestion, ProxyRef, Round, StoredQuestion};
use app::models::{ApprovalStatus, EventKind, QuestionCall, ToolCall};
use serde_json::Value;

/// How many questions in a row a pipeline node's sub-agent may ask, each
/// declined at once, before the call gives up.
const AUTO_DECLINES: usize = 10;

/// What a send to a sub-agent settles when the call is marked started.
enum Claim {
    /// The call's gate approval, if any (`approved` → `executing`).
    Gate(Option<String>),
    /// The proxy question whose answer is being sent (→ `relayed`).
    Relay(String),
}

/// The sub-agent a call goes to.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Target<'a> {
    pub(crate) agent: &'a str,
    pub(crate) url: &'a str,
}

impl Engine {
    /// Handles an unanswered call to a sub-agent, given its latest approval:
    /// whether the turn pauses (on an approval or a question).
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn handle_delegation(
        &self,
        conversation_id: &str,
        message_id: &str,
        tc: &ToolCall,
        latest: Option<Approval>,
        gate: Gate,
        target: Target<'_>,
        scope: &Scope,
        ctx: &Ctx,
    ) -> Result<Handled, EngineError> {
        let first = || {
            let text = tc
                .arguments
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            Outgoing::new(text)
        };
        let Some(a) = latest else {
            if let Gate::Deny { rule, reason } = gate {
                self.deny(conversation_id, message_id, tc, (rule, reason), scope)
                    .await?;
                return Ok(Handled::Other);
            }
            if let Gate::Ask {
                rule,
                approvers,
                quorum,
                expires_in,
            } = gate
            {
                let new = NewApproval {
                    conversation_id: conversation_id.to_string(),
                    message_id: message_id.to_string(),
                    tool_name: tc.name.clone(),
                    server: tc.server.clone(),
                    tool_args: tc.arguments.clone(),
                    description: format!(
                        "Delegate to the sub-agent `{}`: {}",
                        target.agent,
                        first().text
                    ),
                    remote: None,
                    traceparent: crate::telemetry::current_traceparent(),
                    rule: Some(rule),
                    approvers,
                    quorum,
                    expires_in,
                };
                let pending = self
                    .request_approval(conversation_id, new, scope, None)
                    .await?;
                return Ok(Handled::Paused(Box::new(pending)));
            }
            if first().text.trim().is_empty() {
                let text = format!(
                    "Invalid arguments, the sub-agent `{}` was not called: `message` (a non-empty string) is required",
                    target.agent
                );
                self.finish_call(conversation_id, message_id, tc, &text, true, None, scope)
                    .await?;
                return Ok(Handled::Other);
            }
            return self
                .delegate(
                    conversation_id,
                    message_id,
                    tc,
                    Claim::Gate(None),
                    first(),
                    target,
                    scope,
                    ctx,
                )
                .await;
        };
        let remote_task = a.approval.remote_task_id.clone();
        match (a.status, remote_task) {
            (ApprovalStatus::Pending, _) => Ok(Handled::Paused(Box::new(a.approval))),
            (ApprovalStatus::Approved, None) => {
                let gate = Some(a.approval.uuid.clone());
                // An approver may have edited the message (POLICY.md §3).
                let out = match a
                    .approval
                    .edited_args
                    .as_ref()
                    .and_then(|e| e.get("message"))
                    .and_then(Value::as_str)
                {
                    Some(m) => Outgoing::new(m),
                    None => first(),
                };
                self.delegate(
                    conversation_id,
                    message_id,
                    tc,
                    Claim::Gate(gate),
                    out,
                    target,
                    scope,
                    ctx,
                )
                .await
            }
            (ApprovalStatus::Approved, Some(task)) => {
                let mut out = Outgoing::decision(&task, true, a.reason.clone());
                // Edited here: the sub-agent checks them against its own
                // schema and rules.
                out.arguments = a.approval.edited_args.clone();
                out.approval_uuid = a.remote_approval.clone();
                let gate = Some(a.approval.uuid.clone());
                self.delegate(
                    conversation_id,
                    message_id,
                    tc,
                    Claim::Gate(gate),
                    out,
                    target,
                    scope,
                    ctx,
                )
                .await
            }
            // Expired here: the sub-agent hears a rejection saying so, and
            // its own approval ends with ours (POLICY.md §2).
            (ApprovalStatus::Rejected | ApprovalStatus::Expired, Some(task)) => {
                let mut out = Outgoing::decision(&task, false, a.reason.clone());
                out.approval_uuid = a.remote_approval.clone();
                self.delegate(
                    conversation_id,
                    message_id,
                    tc,
                    Claim::Gate(None),
                    out,
                    target,
                    scope,
                    ctx,
                )
                .await
            }
            (ApprovalStatus::Expired, None) => {
                let text = super::gate::expired_text(a.reason.as_deref());
                self.finish_call(conversation_id, message_id, tc, &text, true, None, scope)
                    .await?;
                Ok(Handled::Other)
            }
            (ApprovalStatus::Rejected | ApprovalStatus::Cancelled, _) => {
                let text = declined_text(a.reason.as_deref());
                self.finish_call(conversation_id, message_id, tc, &text, true, None, scope)
                    .await?;
                Ok(Handled::Other)
            }
            (
                ApprovalStatus::Executing
                | ApprovalStatus::InDoubt
                | ApprovalStatus::Executed
                | ApprovalStatus::Failed,
                _,
            ) => {
                // Only reachable if a result write was lost; never send again.
                let text = crate::engine::recovery::IN_DOUBT_TEXT;
                self.finish_call(conversation_id, message_id, tc, text, true, None, scope)
                    .await?;
                Ok(Handled::Other)
            }
        }
    }

    /// Sends the answer of a sub-agent's question on (its expiry or a
    /// cancel as `cancel`), once: the remote task's next answer is the
    /// call's result, or another approval or question.
    pub(super) async fn relay_answer(
        &self,
        conversation_id: &str,
        message_id: &str,
        tc: &ToolCall,
        q: StoredQuestion,
        scope: &Scope,
        ctx: &Ctx,
    ) -> Result<Handled, EngineError> {
        let action = scope.local_tool(&tc.name).map(|t| t.action.clone());
        let (Some(remote), Some(LocalAction::A2a { agent, url })) = (q.remote.clone(), action)
        else {
            let text = "The sub-agent's question was answered, but the sub-agent is no longer configured here: the answer was not sent.";
            self.finish_call(conversation_id, message_id, tc, text, true, None, scope)
                .await?;
            return Ok(Handled::Other);
        };
        let answer = super::question::answer_of(&q);
        let out = Outgoing::answer(
            &remote.task_id,
            &remote.uuid,
            &answer.action,
            answer.content,
        );
        let target = Target {
            agent: &agent,
            url: &url,
        };
        let claim = Claim::Relay(q.question.uuid.clone());
        self.delegate(
            conversation_id,
            message_id,
            tc,
            claim,
            out,
            target,
            scope,
            ctx,
        )
        .await
    }

    /// Sends `out` to the sub-agent, write-ahead, and records its answer:
    /// the call's result, or a proxy approval or question when the remote
    /// task waits.
    #[allow(clippy::too_many_arguments)]
    async fn delegate(
        &self,
        conversation_id: &str,
        message_id: &str,
        tc: &ToolCall,
        claim: Claim,
        out: Outgoing,
        target: Target<'_>,
        scope: &Scope,
        ctx: &Ctx,
    ) -> Result<Handled, EngineError> {
        let store = &self.inner.store;
        let (may_run, gate) = match claim {
            Claim::Gate(gate) => (
                store
                    .claim_call(conversation_id, message_id, gate.clone())
                    .await?,
                gate,
            ),
            Claim::Relay(uuid) => (
                store
                    .claim_relay(conversation_id, message_id, &uuid)
                    .await?,
                None,
            ),
        };
        if !may_run {
            return Ok(Handled::Other);
        }
        tracing::info!(agent = %target.agent, task = out.task_id.as_deref().unwrap_or("-"), "delegating to a sub-agent");
        self.inner
            .events
            .emit(EventKind::ToolCallStarted, conversation_id, |e| {
                e.running = Some(true);
                e.tool = Some(tc.name.clone());
                e.approval = gate.clone();
                e.node = scope.node_name();
            });
        let agent_ctx = self.ctx_for_agent(target.agent, ctx);
        let span = tracing::info_span!(
            "a2a.delegate",
            sid = %ctx.session_id,
            agent = %target.agent,
            tool = %tc.name,
            outcome = tracing::field::Empty,
        );
        let send = || {
            tracing::Instrument::instrument(
                self.inner.a2a.send(target.url, &out, &agent_ctx),
                span.clone(),
            )
        };
        let mut sent = send().await;
        // What the card read (if one was) showed is recorded; a held card
        // an admin accepted on another replica lets the call go on.
        if self
            .note_card(target.agent, target.url, sent.as_ref().err())
            .await
        {
            sent = send().await;
        }
        // Inside a pipeline node nothing can pause on a question: the
        // remote hears `decline`, as a tool's question there would.
        let mut declined = 0;
        while let Ok(RemoteReply::NeedsAnswer(q)) = &sent
            && !self.asks_humans(scope)
        {
            if declined == AUTO_DECLINES {
                sent = Err(crate::a2a::A2aError::Protocol(format!(
                    "it asked {AUTO_DECLINES} questions in a row, each declined here (a pipeline node cannot wait for an answer)"
                )));
                break;
            }
            declined += 1;
            let out = Outgoing::answer(&q.task_id, &q.uuid, "decline", None);
            sent = tracing::Instrument::instrument(
                self.inner.a2a.send(target.url, &out, &agent_ctx),
                span.clone(),
            )
            .await;
        }
        let waits = matches!(
            sent,
            Ok(RemoteReply::NeedsApproval(_) | RemoteReply::NeedsAnswer(_))
        );
        span.record(
            "outcome",
            match &sent {
                Ok(RemoteReply::Done(_)) => "completed",
                Ok(_) => "input_required",
                Err(_) => "error",
            },
        );
        if !waits {
            crate::telemetry::metrics::get().tool_call(&tc.name, target.agent, sent.is_ok());
        }
        match sent {
            Ok(RemoteReply::Done(text)) => {
                self.finish_call(conversation_id, message_id, tc, &text, false, gate, scope)
                    .await?;
                Ok(Handled::Other)
            }
            Err(e) => {
                let mut text = format!("sub-agent {} unavailable: {e}", target.agent);
                if let crate::a2a::A2aError::Untrusted { card: Some(_), .. } = &e {
                    text.push_str(&format!(
                        " (an admin can accept the card held: POST /tools/a2a_{}/accept)",
                        target.agent
                    ));
                }
                tracing::warn!(agent = %target.agent, error = %e, "sub-agent call failed");
                self.finish_call(conversation_id, message_id, tc, &text, true, gate, scope)
                    .await?;
                Ok(Handled::Other)
            }
            Ok(RemoteReply::NeedsAnswer(q)) => {
                self.ask_proxy(conversation_id, message_id, tc, q, gate, target)
                    .await
            }
            Ok(RemoteReply::NeedsApproval(ask)) => {
                let mut chain = vec![target.agent.to_string()];
                chain.extend(ask.chain.iter().cloned());
                let tool = ask.tool.clone().unwrap_or_else(|| "input".into());
                let new = NewApproval {
                    conversation_id: conversation_id.to_string(),
                    message_id: message_id.to_string(),
                    tool_name: tool,
                    server: Some(target.agent.to_string()),
                    tool_args: ask.arguments.clone(),
                    description: ask.description.clone(),
                    remote: Some(RemoteRef {
                        task_id: ask.task_id.clone(),
                        agent: target.agent.to_string(),
                        chain,
                        approval: ask.approval_uuid.clone(),
                    }),
                    traceparent: crate::telemetry::current_traceparent(),
                    rule: Some("proxy".into()),
                    approvers: Vec::new(),
                    quorum: 1,
                    // A proxy approval waits as long as ours would.
                    expires_in: self.policy().expires_in,
                };
                // The send is done: the gate (if any) is executed and the
                // call rests until the proxy approval is decided.
                let settle = crate::store::Settle::Delegated {
                    message_id: message_id.to_string(),
                    gate,
                };
                let pending = self
                    .request_approval(conversation_id, new, scope, Some(settle))
                    .await?;
                Ok(Handled::Paused(Box::new(pending)))
            }
        }
    }

    /// Stores a sub-agent's question on the call (which rests, its gate
    /// done, like a round's) and pauses the turn on it.
    async fn ask_proxy(
        &self,
        conversation_id: &str,
        message_id: &str,
        tc: &ToolCall,
        q: RemoteQuestion,
        gate: Option<String>,
        target: Target<'_>,
    ) -> Result<Handled, EngineError> {
        let mut chain = vec![target.agent.to_string()];
        chain.extend(q.chain.iter().cloned());
        let new = NewQuestion {
            conversation_id: conversation_id.to_string(),
            message_id: message_id.to_string(),
            call: QuestionCall {
                tool: q.tool.clone().unwrap_or_else(|| tc.name.clone()),
                server: Some(target.agent.to_string()),
                arguments: Value::Object(Default::default()),
            },
            ask: Ask {
                key: None,
                kind: q.kind,
                message: q.message,
                schema: q.schema,
                url: q.url,
                elicitation_id: None,
            },
            // A proxy question waits as long as ours would.
            expires_in: self.inner.config.questions.lifetime(None),
            chain,
            remote: Some(ProxyRef {
                agent: target.agent.to_string(),
                task_id: q.task_id,
                uuid: q.uuid,
            }),
        };
        let stored = self
            .inner
            .store
            .ask_round(vec![new], Round::default(), gate, Era::Proxy)
            .await?;
        let Some(first) = stored.into_iter().next() else {
            return Err(EngineError::Task("a proxy question was not stored".into()));
        };
        self.announce_question(&first.question, false);
        Ok(Handled::Asked(Box::new(first.question)))
    }

    /// Records a call's result and settles its gate approval (`executing`
    /// → `executed` or `failed`); shared by tool calls and delegations.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn finish_call(
        &self,
        conversation_id: &str,
        message_id: &str,
        tc: &ToolCall,
        text: &str,
        is_error: bool,
        gate: Option<String>,
        scope: &Scope,
    ) -> Result<(), EngineError> {
        let call = crate::store::FinishedCall {
            conversation_id: conversation_id.to_string(),
            message_id: message_id.to_string(),
            gate,
            tool: tc.name.clone(),
            server: tc.server.clone(),
            arguments: tc.arguments.clone(),
            text: text.to_string(),
            is_error,
        };
        self.inner.store.finish_call(call).await?;
        self.inner
            .events
            .emit(EventKind::ToolCallFinished, conversation_id, |e| {
                e.running = Some(true);
                e.tool = Some(tc.name.clone());
                e.detail = Some(if is_error { "error" } else { "ok" }.into());
                e.node = scope.node_name();
            });
        Ok(())
    }
}
