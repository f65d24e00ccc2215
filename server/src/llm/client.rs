//! The one trait every model client implements, so the engine holds a
//! `dyn LlmClient` and never knows which provider answers.

use super::types::{ChatRequest, ChatResponse, LlmError};
use crate::domain::BoxFuture;

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
