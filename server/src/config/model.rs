//! Model names: which provider serves a configured `model`.
//!
//! Two forms are accepted (DESIGN.md): the prefix form of the seed
//! (`gemini-2.5-flash`, `claude-sonnet-4-5`, `mistral-large-latest`,
//! `openai-gpt-4o`, `ollama-llama3.2`, `openrouter-meta-llama/llama-3-8b`) and
//! `provider:model` (`openai:gpt-4o`). For Gemini, Claude and Mistral the
//! prefix is part of the provider's own model name and is kept; for OpenAI,
//! Ollama and OpenRouter it only routes and is stripped. Bare `gpt-*` names
//! are accepted as OpenAI since that is how people write them.
//! `scripted:<rules.yaml>` selects the in-process scripted model.

use std::fmt;

/// An LLM provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Provider {
    Gemini,
    Anthropic,
    OpenAi,
    Mistral,
    Ollama,
    OpenRouter,
    Scripted,
}

impl Provider {
    /// The environment variable holding the API key; `None` for keyless providers.
    pub fn key_env(self) -> Option<&'static str> {
        match self {
            Provider::Gemini => Some("GEMINI_API_KEY"),
            Provider::Anthropic => Some("ANTHROPIC_API_KEY"),
            Provider::OpenAi => Some("OPENAI_API_KEY"),
            Provider::Mistral => Some("MISTRAL_API_KEY"),
            Provider::OpenRouter => Some("OPENROUTER_API_KEY"),
            Provider::Ollama | Provider::Scripted => None,
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Provider::Gemini => "gemini",
            Provider::Anthropic => "anthropic",
            Provider::OpenAi => "openai",
            Provider::Mistral => "mistral",
            Provider::Ollama => "ollama",
            Provider::OpenRouter => "openrouter",
            Provider::Scripted => "scripted",
        })
    }
}

/// A resolved model: provider plus the name the provider expects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelRef {
    pub provider: Provider,
    /// The model name sent to the provider (for `Scripted`, the rules path).
    pub name: String,
}

const EXPLICIT: &[(&str, Provider)] = &[
    ("google", Provider::Gemini),
    ("gemini", Provider::Gemini),
    ("anthropic", Provider::Anthropic),
    ("claude", Provider::Anthropic),
    ("openai", Provider::OpenAi),
    ("mistral", Provider::Mistral),
    ("ollama", Provider::Ollama),
    ("openrouter", Provider::OpenRouter),
    ("scripted", Provider::Scripted),
];

/// Prefix form: (prefix, provider, keep the prefix in the provider's name).
const PREFIXES: &[(&str, Provider, bool)] = &[
    ("gemini-", Provider::Gemini, true),
    ("claude-", Provider::Anthropic, true),
    ("mistral-", Provider::Mistral, true),
    ("openai-", Provider::OpenAi, false),
    ("gpt-", Provider::OpenAi, true),
    ("ollama-", Provider::Ollama, false),
    ("openrouter-", Provider::OpenRouter, false),
];

/// Resolves a configured model name, or explains what is accepted.
pub fn parse_model(model: &str) -> Result<ModelRef, String> {
    let model = model.trim();
    if model.is_empty() {
        return Err(
            "the model name is empty: write e.g. `gemini-2.5-flash` or `openai:gpt-4o`".into(),
        );
    }
    if let Some((prefix, rest)) = model.split_once(':')
        && let Some((_, provider)) = EXPLICIT
            .iter()
            .find(|(p, _)| p.eq_ignore_ascii_case(prefix))
    {
        if rest.trim().is_empty() {
            return Err(format!("`{model}` names no model after `{prefix}:`"));
        }
        return Ok(ModelRef {
            provider: *provider,
            name: rest.trim().to_string(),
        });
    }
    for (prefix, provider, keep) in PREFIXES {
        if let Some(rest) = model.strip_prefix(prefix) {
            if rest.is_empty() {
                break;
            }
            let name = if *keep { model } else { rest };
            return Ok(ModelRef {
                provider: *provider,
                name: name.to_string(),
            });
        }
    }
    Err(format!(
        "unknown model `{model}`: start it with a provider prefix (gemini-, claude-, mistral-, openai-, \
         ollama-, openrouter-) or write provider:model (google:, anthropic:, openai:, mistral:, ollama:, \
         openrouter:, scripted:<rules.yaml>), e.g. `openai:{model}`"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(m: &str) -> (Provider, String) {
        let r = parse_model(m).unwrap();
        (r.provider, r.name)
    }

    #[test]
    fn prefix_form_routes_and_strips_where_the_prefix_is_not_the_name() {
        assert_eq!(
            ok("gemini-2.5-flash"),
            (Provider::Gemini, "gemini-2.5-flash".into())
        );
        assert_eq!(
            ok("claude-sonnet-4-5"),
            (Provider::Anthropic, "claude-sonnet-4-5".into())
        );
        assert_eq!(
            ok("mistral-large-latest"),
            (Provider::Mistral, "mistral-large-latest".into())
        );
        assert_eq!(ok("openai-gpt-4o"), (Provider::OpenAi, "gpt-4o".into()));
        assert_eq!(ok("gpt-4o-mini"), (Provider::OpenAi, "gpt-4o-mini".into()));
        assert_eq!(ok("ollama-llama3.2"), (Provider::Ollama, "llama3.2".into()));
        assert_eq!(
            ok("openrouter-meta-llama/llama-3-8b"),
            (Provider::OpenRouter, "meta-llama/llama-3-8b".into())
        );
    }

    #[test]
    fn explicit_form_routes_and_keeps_the_name() {
        assert_eq!(
            ok("google:gemini-2.0-pro"),
            (Provider::Gemini, "gemini-2.0-pro".into())
        );
        assert_eq!(
            ok("anthropic:claude-opus-4"),
            (Provider::Anthropic, "claude-opus-4".into())
        );
        assert_eq!(ok("openai:o3"), (Provider::OpenAi, "o3".into()));
        assert_eq!(
            ok("mistral:codestral-latest"),
            (Provider::Mistral, "codestral-latest".into())
        );
        assert_eq!(
            ok("ollama:qwen2.5:7b"),
            (Provider::Ollama, "qwen2.5:7b".into())
        );
        assert_eq!(
            ok("openrouter:openai/gpt-4o"),
            (Provider::OpenRouter, "openai/gpt-4o".into())
        );
        assert_eq!(
            ok("scripted:rules.yaml"),
            (Provider::Scripted, "rules.yaml".into())
        );
    }

    #[test]
    fn unknown_or_empty_names_explain_the_forms() {
        let e = parse_model("llama3").unwrap_err();
        assert!(
            e.contains("unknown model `llama3`") && e.contains("openai:llama3"),
            "{e}"
        );
        assert!(parse_model("").is_err());
        assert!(
            parse_model("openai:")
                .unwrap_err()
                .contains("names no model")
        );
        assert!(parse_model("gemini-").is_err());
    }

    #[test]
    fn key_env_names_follow_the_contract() {
        assert_eq!(Provider::Gemini.key_env(), Some("GEMINI_API_KEY"));
        assert_eq!(Provider::Ollama.key_env(), None);
    }
}
