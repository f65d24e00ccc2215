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

impl ChatRequest {
    /// How many characters the prompt holds (for [`Usage::estimate`]).
    pub fn chars(&self) -> usize {
        let tools: usize = self
            .tools
            .iter()
            .map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len())
            .sum();
        let messages: usize = self
            .messages
            .iter()
            .map(|m| match m {
                ChatMessage::User(t) => t.len(),
                ChatMessage::Assistant { text, tool_calls } => {
                    text.as_ref().map_or(0, String::len) + calls_chars(tool_calls)
                }
                ChatMessage::ToolResults(r) => r.iter().map(|t| t.content.len()).sum(),
            })
            .sum();
        self.system.len() + messages + tools
    }
}

fn calls_chars(calls: &[ToolCallRequest]) -> usize {
    calls
        .iter()
        .map(|c| c.name.len() + c.arguments.to_string().len())
        .sum()
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
    /// What the call cost, as the provider reported it (`None` when it
    /// did not): recorded on the `llm` span and in the token counter.
    pub usage: Option<Usage>,
}

impl ChatResponse {
    /// How many characters the answer holds (for [`Usage::estimate`]).
    pub fn chars(&self) -> usize {
        self.text.as_ref().map_or(0, String::len) + calls_chars(&self.tool_calls)
    }
}

/// Tokens one model call consumed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Tokens of the prompt: system, transcript and tool declarations.
    pub input: u64,
    /// Tokens the model generated.
    pub output: u64,
}

impl Usage {
    /// Reads a provider's usage object: the sum of its `input` counters
    /// and of its `output` counters (providers split them: cached prompt
    /// tokens, thinking tokens). `None` unless at least one is a number.
    pub fn read(usage: Option<&Value>, input: &[&str], output: &[&str]) -> Option<Usage> {
        let usage = usage?;
        let sum = |keys: &[&str]| {
            keys.iter()
                .filter_map(|k| usage.get(*k).and_then(Value::as_u64))
                .reduce(u64::saturating_add)
        };
        match (sum(input), sum(output)) {
            (None, None) => None,
            (i, o) => Some(Usage {
                input: i.unwrap_or(0),
                output: o.unwrap_or(0),
            }),
        }
    }

    /// A rough count for providers that do not bill by the token (the
    /// scripted demo model, the fake provider): four characters a token,
    /// the usual rule of thumb for English text.
    pub fn estimate(input_chars: usize, output_chars: usize) -> Usage {
        Usage {
            input: input_chars.div_ceil(4) as u64,
            output: output_chars.div_ceil(4) as u64,
        }
    }
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
