//! LLM providers behind one trait.
//!
//! - `types`: the provider-neutral request and response ([`ChatRequest`],
//!   [`ChatMessage`], [`ChatResponse`]) the engine speaks.
//! - one module per wire format: `gemini`, `anthropic`, `openai_compat`
//!   (OpenAI, Mistral, Ollama, OpenRouter): each builds its request and
//!   reads its answer as JSON (`serde_json::Value`) in its own `encode` and
//!   `decode`; nothing of a wire format leaves its module.
//! - `scripted`: the in-process rules model (`scripted:<rules.yaml>`), also
//!   the brain of the test suite's fake provider server.
//! - `http`: the one HTTP path every provider uses: timeout, retries with
//!   backoff and jitter, `Retry-After`, and error text scrubbed of secrets.
//! - `names`: reversible tool-name mapping for providers' name rules.
//! - `schema`: JSON Schema adapted to each provider's accepted subset.
//!
//! Key decision: tool results travel back in each provider's *native* form
//! (OpenAI `tool` messages, Anthropic `tool_result` blocks, Gemini
//! `functionResponse` parts), built from one neutral history, so the model
//! always sees a well-formed transcript of every call it made.

pub(crate) mod anthropic;
pub(crate) mod gemini;
pub(crate) mod http;
pub mod names;
pub(crate) mod openai_compat;
pub mod schema;
pub mod scripted;
mod types;

pub use types::*;

use crate::config::{ModelRef, Provider};
use std::path::Path;
use std::sync::Arc;

pub(crate) use crate::domain::BoxFuture;

/// One chat-completion call to a model.
pub(crate) trait LlmClient: Send + Sync {
    /// Sends the conversation and returns the model's next step.
    fn complete<'a>(
        &'a self,
        req: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>>;

    /// A label for logs and the UI (`openai:gpt-4o`); never contains a key.
    fn describe(&self) -> String;
}

/// Environment lookup, injectable for tests.
pub(crate) type EnvFn = dyn Fn(&str) -> Option<String> + Send + Sync;

/// Builds the client for `model`. Fails (without a network call) when the
/// provider's key is missing: the message names the variable to set.
pub(crate) fn client_for(
    model: &ModelRef,
    config_dir: &Path,
    http: http::HttpClient,
    env: &EnvFn,
) -> Result<Arc<dyn LlmClient>, LlmError> {
    let key = |var: &'static str| {
        env(var)
            .filter(|v| !v.trim().is_empty())
            .ok_or(LlmError::MissingKey(var))
    };
    let base = |var: &str, default: &str| {
        env(var)
            .filter(|v| !v.trim().is_empty())
            .unwrap_or_else(|| default.to_string())
    };
    Ok(match model.provider {
        Provider::Gemini => Arc::new(gemini::Gemini::new(
            http,
            base(
                "GEMINI_BASE_URL",
                "https://generativelanguage.googleapis.com",
            ),
            key("GEMINI_API_KEY")?,
            model.name.clone(),
        )),
        Provider::Anthropic => Arc::new(anthropic::Anthropic::new(
            http,
            base("ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
            key("ANTHROPIC_API_KEY")?,
            model.name.clone(),
        )),
        Provider::OpenAi => Arc::new(openai_compat::OpenAiCompat::new(
            http,
            openai_compat::Flavor::OpenAi,
            base("OPENAI_BASE_URL", "https://api.openai.com/v1"),
            Some(key("OPENAI_API_KEY")?),
            model.name.clone(),
        )),
        Provider::Mistral => Arc::new(openai_compat::OpenAiCompat::new(
            http,
            openai_compat::Flavor::Mistral,
            base("MISTRAL_BASE_URL", "https://api.mistral.ai/v1"),
            Some(key("MISTRAL_API_KEY")?),
            model.name.clone(),
        )),
        Provider::OpenRouter => Arc::new(openai_compat::OpenAiCompat::new(
            http,
            openai_compat::Flavor::OpenRouter,
            base("OPENROUTER_BASE_URL", "https://openrouter.ai/api/v1"),
            Some(key("OPENROUTER_API_KEY")?),
            model.name.clone(),
        )),
        Provider::Ollama => Arc::new(openai_compat::OpenAiCompat::new(
            http,
            openai_compat::Flavor::Ollama,
            base("OLLAMA_BASE_URL", "http://localhost:11434/v1"),
            None,
            model.name.clone(),
        )),
        Provider::Scripted => Arc::new(
            scripted::Scripted::load(&config_dir.join(&model.name)).map_err(LlmError::Config)?,
        ),
    })
}
