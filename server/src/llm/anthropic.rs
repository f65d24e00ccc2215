//! Anthropic Messages.
//!
//! `POST {base}/v1/messages` with `x-api-key` and `anthropic-version`.
//! Messages must start with `user` and alternate strictly, so consecutive
//! same-role turns are merged; every `tool_use` is answered by a
//! `tool_result` block at the start of the very next user message. Empty
//! text blocks are left out (the API rejects them).

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

/// A Messages answer, as far as this agent reads it. Anthropic documents
/// `id`, `type`, `role`, `model` and `usage` as required too; they are not
/// needed here, so an answer without them (a compatible server) still reads.
#[derive(Deserialize)]
struct Message {
    content: Vec<Block>,
    /// `null` while streaming and on some compatible servers.
    stop_reason: Option<StopReason>,
    /// Bookkeeping only: read leniently by [`Usage::read`].
    usage: Option<Value>,
}

/// One content block.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    /// `thinking`, `redacted_thinking`, server tool blocks…: not for us.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum StopReason {
    EndTurn,
    StopSequence,
    ToolUse,
    MaxTokens,
    #[serde(other)]
    Other,
}

/// Reads the content blocks.
pub(crate) fn decode(answer: &Value, names: &NameMap) -> Result<ChatResponse, String> {
    let message: Message = read(answer)?;
    let mut texts = Vec::new();
    let mut tool_calls = Vec::new();
    for block in message.content {
        match block {
            Block::Text { text } => texts.push(text),
            Block::ToolUse { id, name, input } => tool_calls.push(ToolCallRequest {
                id,
                name: names.resolve(&name),
                arguments: input,
                arguments_error: None,
                signature: None,
            }),
            Block::Other => {}
        }
    }
    let finish = match message.stop_reason {
        Some(StopReason::ToolUse) => FinishReason::ToolCalls,
        Some(StopReason::EndTurn | StopReason::StopSequence) => FinishReason::Stop,
        Some(StopReason::MaxTokens) => FinishReason::Length,
        _ if !tool_calls.is_empty() => FinishReason::ToolCalls,
        _ => FinishReason::Other,
    };
    Ok(ChatResponse {
        text: Some(texts.concat()).filter(|t| !t.is_empty()),
        tool_calls,
        finish,
        usage: Usage::read(
            message.usage.as_ref(),
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

    /// An answer as the Messages API documents it, with a thinking block
    /// and an extra field this agent does not know.
    fn real_answer() -> Value {
        json!({
            "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "thinking", "thinking": "the user wants a list", "signature": "EqQBCg"},
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "resources_list", "input": {"pattern": "a*"}}
            ],
            "stop_reason": "tool_use",
            "stop_sequence": null,
            "usage": {"input_tokens": 2095, "output_tokens": 503, "service_tier": "standard"},
            "container": null
        })
    }

    #[test]
    fn a_real_shaped_answer_decodes() {
        let r = decode(&real_answer(), &NameMap::new(["resources_list"])).unwrap();
        assert_eq!(r.text.as_deref(), Some("Let me look."));
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.tool_calls[0].id, "toolu_01A09q90qw90lq917835lq9");
        assert_eq!(r.tool_calls[0].name, "resources_list");
        assert_eq!(r.tool_calls[0].arguments, json!({"pattern": "a*"}));
        assert_eq!(r.finish, FinishReason::ToolCalls);
        assert_eq!(
            r.usage,
            Some(Usage {
                input: 2095,
                output: 503
            })
        );
    }

    #[test]
    fn a_renamed_required_field_is_an_error_naming_it() {
        let mut a = real_answer();
        let call = a["content"][2].as_object_mut().unwrap();
        let input = call.remove("input").unwrap();
        call.insert("arguments".into(), input);
        let message = decode(&a, &NameMap::default()).unwrap_err();
        assert_eq!(message, "the required field `content[2].input` is missing");
        let mut a = real_answer();
        a["content"][1] = json!({"type": "text", "content": "Let me look."});
        let message = decode(&a, &NameMap::default()).unwrap_err();
        assert_eq!(message, "the required field `content[1].text` is missing");
        // What the client reads names the provider and the field, and
        // nothing of this agent's types.
        let shown = LlmError::Decode {
            provider: "anthropic",
            message,
        }
        .to_string();
        assert_eq!(
            shown,
            "the anthropic API sent an answer this agent cannot read: the required field `content[1].text` is missing"
        );
        let mut a = real_answer();
        a["content"] = json!("Let me look.");
        let message = decode(&a, &NameMap::default()).unwrap_err();
        assert_eq!(message, "`content` is not a sequence");
    }
}
