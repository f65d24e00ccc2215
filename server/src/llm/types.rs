//! The provider-neutral chat types.

use serde_json::Value;

/// A tool the model may call.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    pub parameters: Value,
}

/// A call the model asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCallRequest {
    /// The provider's call id (synthesised for providers without ids).
    pub id: String,
    pub name: String,
    /// The arguments; `Value::Null` when they could not be parsed.
    pub arguments: Value,
    /// Why the arguments could not be parsed (OpenAI sends them as a string
    /// that may hold invalid JSON); the engine reports it to the model.
    pub arguments_error: Option<String>,
    /// Opaque provider data that must travel back with the call in the
    /// history (Gemini's `thoughtSignature`).
    pub signature: Option<String>,
}

/// A tool's answer to one call.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolResultMessage {
    pub call_id: String,
    pub name: String,
    pub content: String,
    pub is_error: bool,
}

/// One entry of the transcript sent to the model.
#[derive(Clone, Debug, PartialEq)]
pub enum ChatMessage {
    User(String),
    Assistant {
        text: Option<String>,
        tool_calls: Vec<ToolCallRequest>,
    },
    /// The answers to every call of the preceding assistant message.
    ToolResults(Vec<ToolResultMessage>),
}

/// What the engine sends.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatRequest {
    pub system: String,
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<ToolSpec>,
    pub max_tokens: u32,
}

/// Why the model stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinishReason {
    Stop,
    ToolCalls,
    Length,
    Other,
}

/// The model's next step: text, tool calls, or both.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatResponse {
    pub text: Option<String>,
    pub tool_calls: Vec<ToolCallRequest>,
    pub finish: FinishReason,
}

/// Why a model call failed. The texts never contain an API key.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    #[error("{0} is not set")]
    MissingKey(&'static str),
    #[error("{0}")]
    Config(String),
    #[error("the {provider} API answered HTTP {status}: {message}")]
    Status {
        provider: &'static str,
        status: u16,
        message: String,
    },
    #[error("the {provider} API did not answer within {seconds} s")]
    Timeout {
        provider: &'static str,
        seconds: u64,
    },
    #[error("cannot reach the {provider} API: {message}")]
    Connect {
        provider: &'static str,
        message: String,
    },
    #[error("the {provider} API sent an answer this agent cannot read: {message}")]
    Decode {
        provider: &'static str,
        message: String,
    },
}

impl LlmError {
    /// A short, bounded name of the failure (a metrics label).
    pub fn kind(&self) -> &'static str {
        match self {
            LlmError::MissingKey(_) | LlmError::Config(_) => "config",
            LlmError::Status { .. } => "status",
            LlmError::Timeout { .. } => "timeout",
            LlmError::Connect { .. } => "connect",
            LlmError::Decode { .. } => "decode",
        }
    }

    /// The HTTP status our API answers with when a turn fails this way.
    pub fn http_status(&self) -> u16 {
        match self {
            LlmError::MissingKey(_) => 503,
            LlmError::Config(_) => 500,
            LlmError::Timeout { .. } => 504,
            LlmError::Status { .. } | LlmError::Connect { .. } | LlmError::Decode { .. } => 502,
        }
    }
}
