//! The model's side of a step: the transcript the model sees
//! (`request_messages`), the request sent under an `llm` span with its
//! token metrics (`ask_model`), and the scope's tools.

use super::history::{condensed, transcript};
use crate::domain::tools::CallContext;
use crate::domain::tools::ToolInfo;
use crate::engine::handle::Engine;
use crate::engine::scope::Scope;
use crate::llm::{ChatMessage, ChatRequest, ChatResponse, LlmClient, LlmError, ToolSpec};
use crate::store::StoredMessage;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

impl Engine {
    /// The router's tools plus the scope's own.
    pub(in crate::engine) fn scope_tools(&self, scope: &Scope) -> Vec<ToolInfo> {
        let mut tools = self.inner.tools.tools();
        tools.extend(scope.local.iter().map(|t| t.info.clone()));
        tools
    }

    /// Asks the scope's model for its next step: `messages` as a
    /// `ChatRequest` with the scope's available tools, sent under an `llm`
    /// span (with the GenAI semantic-convention fields) whose token counts
    /// also go to the metrics. `None` when the turn was cancelled meanwhile.
    pub(super) async fn ask_model(
        &self,
        llm: &Arc<dyn LlmClient>,
        scope: &Scope,
        ctx: &CallContext,
        messages: Vec<ChatMessage>,
        tools: &[ToolInfo],
        cancelled: &CancellationToken,
    ) -> Option<Result<ChatResponse, LlmError>> {
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
            _ = cancelled.cancelled() => return None,
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
        Some(answer)
    }
}

/// The transcript the model sees: simple mode, the whole conversation; a
/// pipeline node, the earlier turns condensed, the user's message, then
/// the node's own messages of this turn (`stored[start..]`).
pub(super) fn request_messages(
    scope: &Scope,
    stored: &[StoredMessage],
    start: usize,
    mine: &[&StoredMessage],
) -> Vec<ChatMessage> {
    let turn = &stored[start..];
    if scope.node.is_some() {
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
        transcript(stored)
    }
}
