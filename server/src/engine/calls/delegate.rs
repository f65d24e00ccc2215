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
//! State is derived from the rows, as in the rest of the turn loop: the
//! call's latest approval says what to do next.

use super::gate::Gate;
use crate::a2a::{Outgoing, RemoteReply};
use crate::engine::turn::declined_text;
use crate::engine::turn::scope::Scope;
use crate::engine::{Ctx, Engine, EngineError};
use crate::store::approvals::{Approval, NewApproval, RemoteRef};
use app::models::{ApprovalStatus, EventKind, PendingApproval, ToolCall};
use serde_json::Value;

/// The sub-agent a call goes to.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Target<'a> {
    pub(crate) agent: &'a str,
    pub(crate) url: &'a str,
}

impl Engine {
    /// Handles an unanswered call to a sub-agent, given its latest approval.
    /// Returns the approval the turn waits on, if it must pause.
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
    ) -> Result<Option<PendingApproval>, EngineError> {
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
                return Ok(None);
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
                return Ok(Some(
                    self.request_approval(conversation_id, new, scope, None)
                        .await?,
                ));
            }
            if first().text.trim().is_empty() {
                let text = format!(
                    "Invalid arguments, the sub-agent `{}` was not called: `message` (a non-empty string) is required",
                    target.agent
                );
                self.finish_call(conversation_id, message_id, tc, &text, true, None, scope)
                    .await?;
                return Ok(None);
            }
            return self
                .delegate(
                    conversation_id,
                    message_id,
                    tc,
                    None,
                    first(),
                    target,
                    scope,
                    ctx,
                )
                .await;
        };
        let remote_task = a.approval.remote_task_id.clone();
        match (a.status, remote_task) {
            (ApprovalStatus::Pending, _) => Ok(Some(a.approval)),
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
                    gate,
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
                    gate,
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
                    None,
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
                Ok(None)
            }
            (ApprovalStatus::Rejected | ApprovalStatus::Cancelled, _) => {
                let text = declined_text(a.reason.as_deref());
                self.finish_call(conversation_id, message_id, tc, &text, true, None, scope)
                    .await?;
                Ok(None)
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
                Ok(None)
            }
        }
    }

    /// Sends `out` to the sub-agent, write-ahead, and records its answer:
    /// the call's result, or a proxy approval when the remote task waits.
    #[allow(clippy::too_many_arguments)]
    async fn delegate(
        &self,
        conversation_id: &str,
        message_id: &str,
        tc: &ToolCall,
        gate: Option<String>,
        out: Outgoing,
        target: Target<'_>,
        scope: &Scope,
        ctx: &Ctx,
    ) -> Result<Option<PendingApproval>, EngineError> {
        let may_run = self
            .inner
            .store
            .claim_call(conversation_id, message_id, gate.clone())
            .await?;
        if !may_run {
            return Ok(None);
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
        let sent = tracing::Instrument::instrument(
            self.inner.a2a.send(target.url, &out, &agent_ctx),
            span.clone(),
        )
        .await;
        span.record(
            "outcome",
            match &sent {
                Ok(RemoteReply::Done(_)) => "completed",
                Ok(RemoteReply::NeedsApproval(_)) => "input_required",
                Err(_) => "error",
            },
        );
        if !matches!(sent, Ok(RemoteReply::NeedsApproval(_))) {
            crate::telemetry::metrics::get().tool_call(&tc.name, target.agent, sent.is_ok());
        }
        match sent {
            Ok(RemoteReply::Done(text)) => {
                self.finish_call(conversation_id, message_id, tc, &text, false, gate, scope)
                    .await?;
                Ok(None)
            }
            Err(e) => {
                let text = format!("sub-agent {} unavailable: {e}", target.agent);
                tracing::warn!(agent = %target.agent, error = %e, "sub-agent call failed");
                self.finish_call(conversation_id, message_id, tc, &text, true, gate, scope)
                    .await?;
                Ok(None)
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
                Ok(Some(
                    self.request_approval(conversation_id, new, scope, Some(settle))
                        .await?,
                ))
            }
        }
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
