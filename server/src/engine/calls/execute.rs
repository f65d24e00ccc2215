//! Running one call, write-ahead: `executing`/started is committed before
//! the tool runs, the result and `executed`/`failed` commit together.

use super::CallResult;
use crate::domain::tools::{Resume, ToolError, ToolOutput};
use crate::engine::turn::scope::{LocalAction, Scope};
use crate::engine::{Ctx, Engine, EngineError};
use app::models::{EventKind, Question, ToolCall};
use std::sync::{Arc, Mutex};

/// What running a call did.
pub(super) enum Executed {
    /// Another writer moved its approval on: it did not run here.
    Skipped,
    /// It ran and this result was recorded.
    Ran(CallResult),
    /// It asks the human (an MCP 2026-07-28 round): stored, the call rests.
    Asked(Box<Question>),
}

impl Engine {
    /// Runs one call, write-ahead: `executing`/started is committed before
    /// the tool runs; the result and `executed`/`failed` commit together.
    /// `(approval, note)`: the approval the call runs under, and what the
    /// model is told before the result (an approver's edit). `resume`: the
    /// answers of the call's question round, to retry it with.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn execute(
        &self,
        conversation_id: &str,
        message_id: &str,
        tc: &ToolCall,
        (approval, note): (Option<String>, Option<String>),
        resume: Option<Resume>,
        scope: &Scope,
        ctx: &Ctx,
    ) -> Result<Executed, EngineError> {
        let store = &self.inner.store;
        let may_run = store
            .claim_call(conversation_id, message_id, approval.clone())
            .await?;
        if !may_run {
            // Another writer moved the approval on; never run twice.
            return Ok(Executed::Skipped);
        }
        // Questions reach a human in simple mode; inside pipeline nodes
        // they are declined, as before (nothing there can pause on them).
        let notes = Arc::new(Mutex::new(Vec::new()));
        let mut call_ctx = ctx.clone();
        if self.asks_humans(scope) {
            call_ctx.asker = Some(self.asker(conversation_id, message_id, tc, notes.clone()));
        }
        call_ctx.resume = resume;
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
        let called = tracing::Instrument::instrument(
            self.call_tool(tc, scope, &call_ctx),
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
                    .ask_round(conversation_id, message_id, tc, round, approval)
                    .await?;
                return Ok(Executed::Asked(Box::new(q)));
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
        Ok(Executed::Ran(CallResult { text, is_error }))
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
            LocalAction::ExitLoop => Ok(ToolOutput::text("The loop ends after this step.", false)),
            // Delegations go through `calls/delegate.rs` (proxy approvals).
            LocalAction::A2a { agent, .. } => Err(ToolError::Failed {
                tool: tc.name.clone(),
                message: format!("the sub-agent `{agent}` is called through a delegation"),
            }),
        }
    }
}
