//! OpenAI-compatible chat completions: OpenAI, Mistral, Ollama, OpenRouter.
//!
//! `POST {base}/chat/completions`. Calls come back as `tool_calls` with
//! `arguments` as a JSON *string*, which may be invalid: that becomes an
//! `arguments_error` the engine reports to the model instead of failing the
//! turn. Every call id is answered by a `tool` message before the next
//! assistant or user message.

use super::http::HttpClient;
use super::names::{NameMap, to_wire};
use super::schema::object_schema;
use super::{
    BoxFuture, ChatMessage, ChatRequest, ChatResponse, FinishReason, LlmClient, LlmError,
    ToolCallRequest, Usage,
};
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

/// Reads `choices[0].message`.
pub(crate) fn decode(answer: &Value, names: &NameMap) -> Result<ChatResponse, String> {
    let choice = answer
        .pointer("/choices/0")
        .ok_or_else(|| "no choices in the answer".to_string())?;
    let message = choice.get("message").ok_or("choices[0] has no message")?;
    let text = message
        .get("content")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(str::to_string);
    let mut tool_calls = Vec::new();
    if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
        for (i, c) in calls.iter().enumerate() {
            let name = c
                .pointer("/function/name")
                .and_then(Value::as_str)
                .ok_or("a tool call has no function name")?;
            let raw = c.pointer("/function/arguments");
            let (arguments, arguments_error) = match raw {
                Some(Value::String(s)) if s.trim().is_empty() => (json!({}), None),
                Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
                    Ok(v) => (v, None),
                    Err(e) => (
                        Value::Null,
                        Some(format!("the arguments are not valid JSON ({e}): {s}")),
                    ),
                },
                Some(v @ Value::Object(_)) => (v.clone(), None),
                None | Some(Value::Null) => (json!({}), None),
                Some(other) => (
                    Value::Null,
                    Some(format!("the arguments are not a JSON object: {other}")),
                ),
            };
            tool_calls.push(ToolCallRequest {
                id: c
                    .get("id")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("call_{i}")),
                name: names.resolve(name),
                arguments,
                arguments_error,
                signature: None,
            });
        }
    }
    let finish = match choice.get("finish_reason").and_then(Value::as_str) {
        Some("stop") => FinishReason::Stop,
        Some("tool_calls") => FinishReason::ToolCalls,
        Some("length") => FinishReason::Length,
        _ if !tool_calls.is_empty() => FinishReason::ToolCalls,
        _ => FinishReason::Other,
    };
    Ok(ChatResponse {
        text,
        tool_calls,
        finish,
        usage: Usage::read(
            answer.get("usage"),
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
