//! Running one call, write-ahead: `executing`/started is committed before
//! the tool runs, the result and `executed`/`failed` commit together
//! (`finish_call`, which a delegation's answer goes through too).

use super::outcome::{CallOutcome, CallResult};
use super::site::CallSite;
use crate::domain::tools::{CallContext, Resume, ToolError, ToolOutput};
use crate::engine::error::EngineError;
use crate::engine::handle::Engine;
use crate::engine::scope::{LocalAction, Scope};
use app::models::{EventKind, ToolCall};
use std::sync::{Arc, Mutex};

/// The server a receipt names for a tool the agent runs itself.
const LOCAL: &str = "local";

/// A call's idempotency key (RECEIPTS.md §3): the conversation and the
/// call's own message id, the same on every retry, restart and replica.
pub(crate) fn idempotency_key(conversation_id: &str, message_id: &str) -> String {
    format!("{conversation_id}/{message_id}")
}

impl Engine {
    /// Runs one call, write-ahead: `executing`/started is committed before
    /// the tool runs; the result and `executed`/`failed` commit together.
    /// `tc`: the call as it runs (an approver's edit included).
    /// `(approval_uuid, note)`: the approval the call runs under, and what
    /// the model is told before the result (an approver's edit). `resume`:
    /// the answers of the call's question round, to retry it with.
    pub(super) async fn execute(
        &self,
        site: CallSite<'_>,
        tc: &ToolCall,
        (approval_uuid, note): (Option<String>, Option<String>),
        resume: Option<Resume>,
    ) -> Result<CallOutcome, EngineError> {
        let (conversation_id, message_id) = (site.conversation_id, site.message_id);
        let mint = self
            .inner
            .receipts
            .get()
            .filter(|_| approval_uuid.is_some())
            .map(|i| {
                i.mint(&crate::engine::receipt::Call {
                    server: tc.server.as_deref().unwrap_or(LOCAL),
                    tool: &tc.name,
                    arguments: &tc.arguments,
                })
            });
        let claimed = self
            .inner
            .store
            .claim_call(conversation_id, message_id, approval_uuid.clone(), mint)
            .await?;
        let Some(claimed) = claimed else {
            // Another writer moved the approval on; never run twice.
            return Ok(CallOutcome::AnsweredInStore);
        };
        // Questions reach a human in simple mode; inside pipeline nodes
        // they are declined, as before (nothing there can pause on them).
        let notes = Arc::new(Mutex::new(Vec::new()));
        let mut call_ctx = site.ctx.clone();
        if self.asks_humans(site.scope) {
            call_ctx.asker = Some(self.asker(conversation_id, message_id, tc, notes.clone()));
        }
        call_ctx.resume = resume;
        call_ctx.idempotency_key = Some(idempotency_key(conversation_id, message_id));
        let receipt_sha256 = claimed
            .receipt
            .as_deref()
            .map(crate::engine::receipt::digest);
        call_ctx.receipt = claimed.receipt;
        tracing::info!(tool = %tc.name, approval = approval_uuid.as_deref().unwrap_or("-"), "tool call started");
        self.inner
            .events
            .emit(EventKind::ToolCallStarted, conversation_id, |e| {
                e.running = Some(true);
                e.tool = Some(tc.name.clone());
                e.approval = approval_uuid.clone();
                e.node = site.scope.node_name();
            });
        let started = std::time::Instant::now();
        let tool_span = tracing::info_span!(
            "tool",
            sid = %site.ctx.session_id,
            tool = %tc.name,
            server = tc.server.as_deref().unwrap_or("local"),
            outcome = tracing::field::Empty,
        );
        let called = tracing::Instrument::instrument(
            self.call_tool(tc, site.scope, &call_ctx),
            tool_span.clone(),
        )
        .await;
        let (text, is_error) = match called {
            Ok(ToolOutput {
                input_required: Some(round),
                ..
            }) => {
                tool_span.record("outcome", "input_required");
                let q = self
                    .ask_round(conversation_id, message_id, tc, round, approval_uuid)
                    .await?;
                return Ok(CallOutcome::AwaitsAnswer(Box::new(q)));
            }
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
        let mut before: Vec<String> = note.into_iter().collect();
        before.extend(notes.lock().unwrap_or_else(|e| e.into_inner()).drain(..));
        let text = if before.is_empty() {
            text
        } else {
            format!("{}\n{text}", before.join("\n"))
        };
        self.finish_under(site, tc, (&text, is_error), approval_uuid, receipt_sha256)
            .await?;
        Ok(CallOutcome::Ran(CallResult { text, is_error }))
    }

    /// Calls a tool: the scope's own (`exit_loop`, sub-agents) or the router's.
    async fn call_tool(
        &self,
        tc: &ToolCall,
        scope: &Scope,
        ctx: &CallContext,
    ) -> Result<ToolOutput, ToolError> {
        let Some(local) = scope.local_tool(&tc.name) else {
            return self
                .inner
                .tools
                .call(&tc.name, tc.arguments.clone(), ctx)
                .await;
        };
        match &local.action {
            LocalAction::ExitLoop => Ok(ToolOutput::text("The loop ends after this step.", false)),
            // Delegations go through `calls/delegate.rs` (proxy approvals).
            LocalAction::A2a { agent, .. } => Err(ToolError::Failed {
                tool: tc.name.clone(),
                message: format!("the sub-agent `{agent}` is called through a delegation"),
            }),
        }
    }

    /// Records a call's result (`tc`: the call as it ran) and settles its
    /// approval (`executing` → `executed` or `failed`); shared by tool
    /// calls and delegations.
    pub(super) async fn finish_call(
        &self,
        site: CallSite<'_>,
        tc: &ToolCall,
        text: &str,
        is_error: bool,
        approval_uuid: Option<String>,
    ) -> Result<(), EngineError> {
        self.finish_under(site, tc, (text, is_error), approval_uuid, None)
            .await
    }

    /// [`Engine::finish_call`] of a call that ran under a receipt (its
    /// digest goes into the audit row).
    async fn finish_under(
        &self,
        site: CallSite<'_>,
        tc: &ToolCall,
        (text, is_error): (&str, bool),
        approval_uuid: Option<String>,
        receipt_sha256: Option<String>,
    ) -> Result<(), EngineError> {
        let call = crate::store::FinishedCall {
            conversation_id: site.conversation_id.to_string(),
            message_id: site.message_id.to_string(),
            approval_uuid,
            tool: tc.name.clone(),
            server: tc.server.clone(),
            arguments: tc.arguments.clone(),
            text: text.to_string(),
            is_error,
            receipt_sha256,
        };
        self.inner.store.finish_call(call).await?;
        self.inner
            .events
            .emit(EventKind::ToolCallFinished, site.conversation_id, |e| {
                e.running = Some(true);
                e.tool = Some(tc.name.clone());
                e.detail = Some(if is_error { "error" } else { "ok" }.into());
                e.node = site.scope.node_name();
            });
        Ok(())
    }
}
