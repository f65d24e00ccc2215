//! LLM providers behind one trait.
//!
//! - `types`: the provider-neutral request and response ([`ChatRequest`],
//!   [`ChatMessage`], [`ChatResponse`]) the engine speaks.
//! - one module per wire format: `gemini`, `anthropic`, `openai_compat`
//!   (OpenAI, Mistral, Ollama, OpenRouter): each builds its request in its
//!   own `encode` and reads its answer into its own typed serde structs in
//!   `decode` (through `read`, so a renamed or missing field is an error
//!   naming it); nothing of a wire format leaves its module.
//! - `client`: the one trait ([`LlmClient`]); `select`: which client a
//!   configured model gets ([`client_for`]).
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
mod client;
pub(crate) mod gemini;
pub(crate) mod http;
pub mod names;
pub(crate) mod openai_compat;
mod read;
pub mod schema;
pub mod scripted;
mod select;
mod types;

/// The engine's tests name a client's future through here.
#[cfg(test)]
pub(crate) use crate::domain::BoxFuture;
pub(crate) use client::LlmClient;
pub(crate) use select::client_for;
pub use types::*;
