//! Running one call, write-ahead: `executing`/started is committed before
//! the tool runs, the result and `executed`/`failed` commit together.

use super::CallResult;
use crate::domain::tools::{ToolError, ToolOutput};
use crate::engine::turn::scope::{LocalAction, Scope};
use crate::engine::{Ctx, Engine, EngineError};
use app::models::{EventKind, ToolCall};

impl Engine {
    /// Runs one call, write-ahead: `executing`/started is committed before
    /// the tool runs; the result and `executed`/`failed` commit together.
    /// `(approval, note)`: the approval the call runs under, and what the
    /// model is told before the result (an approver's edit).
    pub(super) async fn execute(
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
            // Delegations go through `calls/delegate.rs` (proxy approvals).
            LocalAction::A2a { agent, .. } => Err(ToolError::Failed {
                tool: tc.name.clone(),
                message: format!("the sub-agent `{agent}` is called through a delegation"),
            }),
        }
    }
}
