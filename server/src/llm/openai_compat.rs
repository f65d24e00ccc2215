//! OpenAI-compatible chat completions: OpenAI, Mistral, Ollama, OpenRouter.
//!
//! `POST {base}/chat/completions`. Calls come back as `tool_calls` with
//! `arguments` as a JSON *string*, which may be invalid: that becomes an
//! `arguments_error` the engine reports to the model instead of failing the
//! turn. Every call id is answered by a `tool` message before the next
//! assistant or user message.

use super::client::LlmClient;
use super::http::HttpClient;
use super::names::{NameMap, to_wire};
use super::read::read;
use super::schema::object_schema;
use super::types::{
    ChatMessage, ChatRequest, ChatResponse, FinishReason, LlmError, ToolCallRequest, Usage,
};
use crate::domain::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

/// Which service, for headers and error texts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flavor {
    OpenAi,
    Mistral,
    Ollama,
    OpenRouter,
}

impl Flavor {
    fn name(self) -> &'static str {
        match self {
            Flavor::OpenAi => "openai",
            Flavor::Mistral => "mistral",
            Flavor::Ollama => "ollama",
            Flavor::OpenRouter => "openrouter",
        }
    }
}

/// A client for one model of one OpenAI-compatible service.
pub(crate) struct OpenAiCompat {
    http: HttpClient,
    flavor: Flavor,
    base: String,
    key: Option<String>,
    model: String,
}

impl OpenAiCompat {
    pub(crate) fn new(
        http: HttpClient,
        flavor: Flavor,
        base: String,
        key: Option<String>,
        model: String,
    ) -> Self {
        OpenAiCompat {
            http,
            flavor,
            base: base.trim_end_matches('/').to_string(),
            key,
            model,
        }
    }
}

impl LlmClient for OpenAiCompat {
    fn complete<'a>(
        &'a self,
        req: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async move {
            let body = encode(&self.model, self.flavor, req);
            let mut headers = Vec::new();
            if let Some(k) = &self.key {
                headers.push(("authorization", format!("Bearer {k}")));
            }
            if self.flavor == Flavor::OpenRouter {
                headers.push((
                    "http-referer",
                    "https://github.com/stop-and-go/agent".to_string(),
                ));
                headers.push(("x-title", "Stop & Go".to_string()));
            }
            let url = format!("{}/chat/completions", self.base);
            let answer = self
                .http
                .post_json(
                    self.flavor.name(),
                    &url,
                    &headers,
                    &body,
                    self.key.as_deref(),
                )
                .await?;
            let names = NameMap::new(req.tools.iter().map(|t| t.name.as_str()));
            decode(&answer, &names).map_err(|message| LlmError::Decode {
                provider: self.flavor.name(),
                message,
            })
        })
    }

    fn describe(&self) -> String {
        format!("{}:{}", self.flavor.name(), self.model)
    }
}

/// The request body.
pub(crate) fn encode(model: &str, flavor: Flavor, req: &ChatRequest) -> Value {
    let mut messages = Vec::new();
    if !req.system.is_empty() {
        messages.push(json!({"role": "system", "content": req.system}));
    }
    for m in &req.messages {
        match m {
            ChatMessage::User(text) => messages.push(json!({"role": "user", "content": text})),
            ChatMessage::Assistant { text, tool_calls } => {
                let mut msg = json!({"role": "assistant", "content": text});
                if !tool_calls.is_empty() {
                    msg["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| {
                            json!({
                                "id": c.id,
                                "type": "function",
                                "function": {"name": to_wire(&c.name), "arguments": c.arguments.to_string()},
                            })
                        })
                        .collect();
                }
                messages.push(msg);
            }
            ChatMessage::ToolResults(results) => {
                for r in results {
                    let mut msg =
                        json!({"role": "tool", "tool_call_id": r.call_id, "content": r.content});
                    if flavor == Flavor::Mistral {
                        msg["name"] = json!(to_wire(&r.name));
                    }
                    messages.push(msg);
                }
            }
        }
    }
    let mut body = json!({"model": model, "messages": messages});
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {"name": to_wire(&t.name), "description": t.description, "parameters": object_schema(&t.parameters)},
                })
            })
            .collect();
    }
    body
}

/// A chat completion, as far as this agent reads it. OpenAI's spec also
/// requires `id`, `object`, `created` and `model`; OpenAI-compatible
/// servers (Ollama) leave some out and nothing here needs them.
#[derive(Deserialize)]
struct Completion {
    choices: Vec<Choice>,
    /// Bookkeeping only: read leniently by [`Usage::read`].
    usage: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    message: AssistantMessage,
    finish_reason: Option<Finish>,
}

#[derive(Deserialize)]
struct AssistantMessage {
    /// `null` beside tool calls.
    content: Option<Content>,
    tool_calls: Option<Vec<ToolCall>>,
}

/// OpenAI sends a string; Mistral may send a list of chunks, which this
/// agent has never read as text (kept so: behaviour is frozen).
#[derive(Deserialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Chunks(serde::de::IgnoredAny),
}

#[derive(Deserialize)]
struct ToolCall {
    /// Required by OpenAI; synthesised for servers that leave it out.
    id: Option<String>,
    function: FunctionCall,
}

#[derive(Deserialize)]
struct FunctionCall {
    name: String,
    /// A JSON *string* per the spec (Ollama has sent an object).
    arguments: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Finish {
    Stop,
    ToolCalls,
    Length,
    #[serde(other)]
    Other,
}

/// A call's arguments, or why they cannot be used.
fn arguments_of(raw: Option<Value>) -> (Value, Option<String>) {
    match raw {
        Some(Value::String(s)) if s.trim().is_empty() => (json!({}), None),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(&s) {
            Ok(v) => (v, None),
            Err(e) => (
                Value::Null,
                Some(format!("the arguments are not valid JSON ({e}): {s}")),
            ),
        },
        Some(v @ Value::Object(_)) => (v, None),
        None | Some(Value::Null) => (json!({}), None),
        Some(other) => (
            Value::Null,
            Some(format!("the arguments are not a JSON object: {other}")),
        ),
    }
}

/// Reads `choices[0].message`.
pub(crate) fn decode(answer: &Value, names: &NameMap) -> Result<ChatResponse, String> {
    let completion: Completion = read(answer)?;
    let choice = completion
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| "no choices in the answer".to_string())?;
    let text = match choice.message.content {
        Some(Content::Text(t)) if !t.is_empty() => Some(t),
        _ => None,
    };
    let tool_calls: Vec<ToolCallRequest> = choice
        .message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let (arguments, arguments_error) = arguments_of(c.function.arguments);
            ToolCallRequest {
                id: c.id.unwrap_or_else(|| format!("call_{i}")),
                name: names.resolve(&c.function.name),
                arguments,
                arguments_error,
                signature: None,
            }
        })
        .collect();
    let finish = match choice.finish_reason {
        Some(Finish::Stop) => FinishReason::Stop,
        Some(Finish::ToolCalls) => FinishReason::ToolCalls,
        Some(Finish::Length) => FinishReason::Length,
        _ if !tool_calls.is_empty() => FinishReason::ToolCalls,
        _ => FinishReason::Other,
    };
    Ok(ChatResponse {
        text,
        tool_calls,
        finish,
        usage: Usage::read(
            completion.usage.as_ref(),
            &["prompt_tokens"],
            &["completion_tokens"],
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ToolResultMessage, ToolSpec};

    fn request() -> ChatRequest {
        ChatRequest {
            system: "be brief".into(),
            messages: vec![
                ChatMessage::User("add a".into()),
                ChatMessage::Assistant {
                    text: None,
                    tool_calls: vec![ToolCallRequest {
                        id: "call_1".into(),
                        name: "fs.write".into(),
                        arguments: json!({"path": "a"}),
                        arguments_error: None,
                        signature: None,
                    }],
                },
                ChatMessage::ToolResults(vec![ToolResultMessage {
                    call_id: "call_1".into(),
                    name: "fs.write".into(),
                    content: "ok".into(),
                    is_error: false,
                }]),
            ],
            tools: vec![ToolSpec {
                name: "fs.write".into(),
                description: "write".into(),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            }],
            max_tokens: 100,
        }
    }

    #[test]
    fn encodes_native_tool_round_trips() {
        let body = encode("gpt-4o", Flavor::OpenAi, &request());
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "be brief"})
        );
        let call = &body["messages"][2]["tool_calls"][0];
        assert_eq!(call["function"]["arguments"], "{\"path\":\"a\"}");
        let wire = call["function"]["name"].as_str().unwrap();
        assert!(crate::llm::names::is_wire_safe(wire));
        assert_eq!(body["tools"][0]["function"]["name"], wire);
        assert_eq!(
            body["messages"][3],
            json!({"role": "tool", "tool_call_id": "call_1", "content": "ok"})
        );
        let mistral = encode("m", Flavor::Mistral, &request());
        assert_eq!(mistral["messages"][3]["name"], wire);
    }

    /// An answer as OpenAI documents it (with fields this agent does not
    /// read), and as Ollama sends it (without `id`, `usage`, `refusal`).
    fn real_answer() -> Value {
        json!({
            "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
            "object": "chat.completion",
            "created": 1741570283,
            "model": "gpt-4o-2024-08-06",
            "choices": [{
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": null,
                    "tool_calls": [{
                        "id": "call_abc123",
                        "type": "function",
                        "function": {"name": "resources_list", "arguments": "{\"pattern\":\"a*\"}"}
                    }],
                    "refusal": null,
                    "annotations": []
                },
                "logprobs": null,
                "finish_reason": "tool_calls"
            }],
            "usage": {"prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99,
                "prompt_tokens_details": {"cached_tokens": 0}},
            "service_tier": "default",
            "system_fingerprint": "fp_fc9f1d7035"
        })
    }

    #[test]
    fn a_real_shaped_answer_decodes() {
        let names = NameMap::new(["resources_list"]);
        let r = decode(&real_answer(), &names).unwrap();
        assert_eq!(r.text, None);
        assert_eq!(r.tool_calls[0].id, "call_abc123");
        assert_eq!(r.tool_calls[0].name, "resources_list");
        assert_eq!(r.tool_calls[0].arguments, json!({"pattern": "a*"}));
        assert_eq!(r.finish, FinishReason::ToolCalls);
        assert_eq!(
            r.usage,
            Some(Usage {
                input: 82,
                output: 17
            })
        );
        let ollama = json!({"model": "llama3.2", "choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]});
        let r = decode(&ollama, &names).unwrap();
        assert_eq!(r.text.as_deref(), Some("hi"));
        assert_eq!(r.finish, FinishReason::Stop);
        assert_eq!(r.usage, None);
    }

    #[test]
    fn a_renamed_required_field_is_an_error_naming_it() {
        let mut a = real_answer();
        let function = a["choices"][0]["message"]["tool_calls"][0]["function"]
            .as_object_mut()
            .unwrap();
        let name = function.remove("name").unwrap();
        function.insert("tool".into(), name);
        let message = decode(&a, &NameMap::default()).unwrap_err();
        assert_eq!(
            message,
            "the required field `choices[0].message.tool_calls[0].function.name` is missing"
        );
        let mut a = real_answer();
        let choice = a["choices"][0].as_object_mut().unwrap();
        let m = choice.remove("message").unwrap();
        choice.insert("delta".into(), m);
        let message = decode(&a, &NameMap::default()).unwrap_err();
        assert_eq!(
            message,
            "the required field `choices[0].message` is missing"
        );
        let shown = LlmError::Decode {
            provider: "ollama",
            message,
        }
        .to_string();
        assert_eq!(
            shown,
            "the ollama API sent an answer this agent cannot read: the required field `choices[0].message` is missing"
        );
    }

    #[test]
    fn decodes_calls_and_maps_names_back() {
        let names = NameMap::new(["fs.write"]);
        let wire = to_wire("fs.write");
        let answer = json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": wire, "arguments": "{\"path\":\"x\"}"}},
            {"id": "c2", "type": "function", "function": {"name": wire, "arguments": "{oops"}}
        ]}, "finish_reason": "tool_calls"}]});
        let r = decode(&answer, &names).unwrap();
        assert_eq!(r.finish, FinishReason::ToolCalls);
        assert_eq!(r.tool_calls[0].name, "fs.write");
        assert_eq!(r.tool_calls[0].arguments, json!({"path": "x"}));
        assert!(
            r.tool_calls[1]
                .arguments_error
                .as_deref()
                .unwrap()
                .contains("not valid JSON")
        );
        assert_eq!(r.text, None);
        assert_eq!(r.usage, None);
        let answer = json!({"choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 30, "completion_tokens": 5, "total_tokens": 35}});
        let r = decode(&answer, &names).unwrap();
        assert_eq!(
            r.usage,
            Some(Usage {
                input: 30,
                output: 5
            })
        );
    }

    #[test]
    fn a_malformed_answer_is_an_error_not_a_panic() {
        assert!(decode(&json!({}), &NameMap::default()).is_err());
        assert!(decode(&json!({"choices": [{}]}), &NameMap::default()).is_err());
    }
}
