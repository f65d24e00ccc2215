//! Anthropic Messages.
//!
//! `POST {base}/v1/messages` with `x-api-key` and `anthropic-version`.
//! Messages must start with `user` and alternate strictly, so consecutive
//! same-role turns are merged; every `tool_use` is answered by a
//! `tool_result` block at the start of the very next user message. Empty
//! text blocks are left out (the API rejects them).

use super::http::HttpClient;
use super::names::{NameMap, to_wire};
use super::schema::object_schema;
use super::{
    BoxFuture, ChatMessage, ChatRequest, ChatResponse, FinishReason, LlmClient, LlmError,
    ToolCallRequest, Usage,
};
use serde_json::{Value, json};

/// The API version header we speak.
pub(crate) const API_VERSION: &str = "2023-06-01";

pub(crate) struct Anthropic {
    http: HttpClient,
    base: String,
    key: String,
    model: String,
}

impl Anthropic {
    pub(crate) fn new(http: HttpClient, base: String, key: String, model: String) -> Self {
        Anthropic {
            http,
            base: base.trim_end_matches('/').to_string(),
            key,
            model,
        }
    }
}

impl LlmClient for Anthropic {
    fn complete<'a>(
        &'a self,
        req: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async move {
            let url = format!("{}/v1/messages", self.base);
            let headers = [
                ("x-api-key", self.key.clone()),
                ("anthropic-version", API_VERSION.to_string()),
            ];
            let answer = self
                .http
                .post_json(
                    "anthropic",
                    &url,
                    &headers,
                    &encode(&self.model, req),
                    Some(&self.key),
                )
                .await?;
            let names = NameMap::new(req.tools.iter().map(|t| t.name.as_str()));
            decode(&answer, &names).map_err(|message| LlmError::Decode {
                provider: "anthropic",
                message,
            })
        })
    }

    fn describe(&self) -> String {
        format!("anthropic:{}", self.model)
    }
}

/// The request body.
pub(crate) fn encode(model: &str, req: &ChatRequest) -> Value {
    let mut messages: Vec<Value> = Vec::new();
    let mut push = |role: &str, blocks: Vec<Value>| {
        if blocks.is_empty() {
            return;
        }
        match messages.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(c) = last["content"].as_array_mut() {
                    c.extend(blocks);
                }
            }
            _ => messages.push(json!({"role": role, "content": blocks})),
        }
    };
    for m in &req.messages {
        match m {
            ChatMessage::User(text) if !text.is_empty() => {
                push("user", vec![json!({"type": "text", "text": text})])
            }
            ChatMessage::User(_) => {}
            ChatMessage::Assistant { text, tool_calls } => {
                let mut blocks = Vec::new();
                if let Some(t) = text.as_ref().filter(|t| !t.trim().is_empty()) {
                    blocks.push(json!({"type": "text", "text": t}));
                }
                for c in tool_calls {
                    let input = if c.arguments.is_object() {
                        c.arguments.clone()
                    } else {
                        json!({})
                    };
                    blocks.push(json!({"type": "tool_use", "id": c.id, "name": to_wire(&c.name), "input": input}));
                }
                push("assistant", blocks);
            }
            ChatMessage::ToolResults(results) => {
                let blocks = results
                    .iter()
                    .map(|r| {
                        let mut b = json!({"type": "tool_result", "tool_use_id": r.call_id, "content": r.content});
                        if r.is_error {
                            b["is_error"] = json!(true);
                        }
                        b
                    })
                    .collect();
                push("user", blocks);
            }
        }
    }
    let mut body = json!({"model": model, "max_tokens": req.max_tokens, "messages": messages});
    if !req.system.is_empty() {
        body["system"] = json!(req.system);
    }
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| json!({"name": to_wire(&t.name), "description": t.description, "input_schema": object_schema(&t.parameters)}))
            .collect();
    }
    body
}

/// Reads the content blocks.
pub(crate) fn decode(answer: &Value, names: &NameMap) -> Result<ChatResponse, String> {
    let blocks = answer
        .get("content")
        .and_then(Value::as_array)
        .ok_or("the answer has no content")?;
    let mut texts = Vec::new();
    let mut tool_calls = Vec::new();
    for b in blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => texts.push(
                b.get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            ),
            Some("tool_use") => tool_calls.push(ToolCallRequest {
                id: b
                    .get("id")
                    .and_then(Value::as_str)
                    .ok_or("a tool_use block has no id")?
                    .to_string(),
                name: names.resolve(
                    b.get("name")
                        .and_then(Value::as_str)
                        .ok_or("a tool_use block has no name")?,
                ),
                arguments: b.get("input").cloned().unwrap_or_else(|| json!({})),
                arguments_error: None,
                signature: None,
            }),
            _ => {}
        }
    }
    let finish = match answer.get("stop_reason").and_then(Value::as_str) {
        Some("tool_use") => FinishReason::ToolCalls,
        Some("end_turn") | Some("stop_sequence") => FinishReason::Stop,
        Some("max_tokens") => FinishReason::Length,
        _ if !tool_calls.is_empty() => FinishReason::ToolCalls,
        _ => FinishReason::Other,
    };
    Ok(ChatResponse {
        text: Some(texts.concat()).filter(|t| !t.is_empty()),
        tool_calls,
        finish,
        usage: Usage::read(
            answer.get("usage"),
            &[
                "input_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
            ],
            &["output_tokens"],
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolResultMessage;

    #[test]
    fn tool_results_open_the_next_user_message_and_roles_alternate() {
        let req = ChatRequest {
            system: "s".into(),
            messages: vec![
                ChatMessage::User("go".into()),
                ChatMessage::Assistant {
                    text: Some("checking".into()),
                    tool_calls: vec![ToolCallRequest {
                        id: "toolu_1".into(),
                        name: "resources_list".into(),
                        arguments: json!({}),
                        arguments_error: None,
                        signature: None,
                    }],
                },
                ChatMessage::ToolResults(vec![ToolResultMessage {
                    call_id: "toolu_1".into(),
                    name: "resources_list".into(),
                    content: "boom".into(),
                    is_error: true,
                }]),
                ChatMessage::User("and?".into()),
            ],
            tools: vec![],
            max_tokens: 4096,
        };
        let b = encode("claude-x", &req);
        let roles: Vec<&str> = b["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        assert_eq!(b["messages"][2]["content"][0]["type"], "tool_result");
        assert_eq!(b["messages"][2]["content"][0]["is_error"], true);
        assert_eq!(b["messages"][2]["content"][1]["text"], "and?");
        assert_eq!(b["max_tokens"], 4096);
        assert_eq!(b["system"], "s");
    }

    #[test]
    fn decodes_tool_use() {
        let a = json!({"id": "msg", "type": "message", "role": "assistant", "content": [
            {"type": "text", "text": "ok"}, {"type": "tool_use", "id": "toolu_9", "name": "x", "input": {"a": 1}}
        ], "stop_reason": "tool_use"});
        let r = decode(&a, &NameMap::new(["x"])).unwrap();
        assert_eq!(r.tool_calls[0].id, "toolu_9");
        assert_eq!(r.finish, FinishReason::ToolCalls);
        assert!(decode(&json!({}), &NameMap::default()).is_err());
        assert_eq!(r.usage, None);
    }

    #[test]
    fn reads_usage_with_cached_prompt_tokens() {
        let a = json!({"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 12, "cache_read_input_tokens": 100, "output_tokens": 7}});
        let r = decode(&a, &NameMap::default()).unwrap();
        assert_eq!(
            r.usage,
            Some(Usage {
                input: 112,
                output: 7
            })
        );
    }
}
