//! Which client a configured model gets: the provider's key and base URL
//! read from the environment (injectable for tests), checked before any
//! network call.

use super::client::LlmClient;
use super::http;
use super::types::LlmError;
use super::{anthropic, gemini, openai_compat, scripted};
use crate::config::{ModelRef, Provider};
use std::path::Path;
use std::sync::Arc;

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
