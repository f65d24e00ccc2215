//! Gemini `generateContent`.
//!
//! `POST {base}/v1beta/models/{model}:generateContent` with the key in the
//! `x-goog-api-key` header (never `?key=`: URLs end up in logs and error
//! texts). Calls come back as `functionCall` parts; each is answered by a
//! `functionResponse` part (whose `response` must be an object) in the user
//! turn right after. Schemas go through [`super::schema::for_gemini`].
//! `thoughtSignature`s on call parts are kept and sent back, as Gemini's
//! thinking models require.

use super::client::LlmClient;
use super::http::HttpClient;
use super::names::{NameMap, to_wire};
use super::read::read;
use super::schema::for_gemini;
use super::types::{
    ChatMessage, ChatRequest, ChatResponse, FinishReason, LlmError, ToolCallRequest, Usage,
};
use crate::domain::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

pub(crate) struct Gemini {
    http: HttpClient,
    base: String,
    key: String,
    model: String,
}

impl Gemini {
    pub(crate) fn new(http: HttpClient, base: String, key: String, model: String) -> Self {
        Gemini {
            http,
            base: base.trim_end_matches('/').to_string(),
            key,
            model,
        }
    }
}

impl LlmClient for Gemini {
    fn complete<'a>(
        &'a self,
        req: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async move {
            let url = format!("{}/v1beta/models/{}:generateContent", self.base, self.model);
            let headers = [("x-goog-api-key", self.key.clone())];
            let answer = self
                .http
                .post_json("gemini", &url, &headers, &encode(req), Some(&self.key))
                .await?;
            let names = NameMap::new(req.tools.iter().map(|t| t.name.as_str()));
            decode(&answer, &names).map_err(|message| LlmError::Decode {
                provider: "gemini",
                message,
            })
        })
    }

    fn describe(&self) -> String {
        format!("gemini:{}", self.model)
    }
}

/// A tool result as Gemini's `response` object.
fn response_object(content: &str, is_error: bool) -> Value {
    match serde_json::from_str::<Value>(content) {
        Ok(v @ Value::Object(_)) if !is_error => v,
        _ if is_error => json!({"error": content}),
        _ => json!({"result": content}),
    }
}

/// The request body.
pub(crate) fn encode(req: &ChatRequest) -> Value {
    let mut contents: Vec<Value> = Vec::new();
    let mut push = |role: &str, parts: Vec<Value>| {
        if parts.is_empty() {
            return;
        }
        match contents.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(p) = last["parts"].as_array_mut() {
                    p.extend(parts);
                }
            }
            _ => contents.push(json!({"role": role, "parts": parts})),
        }
    };
    for m in &req.messages {
        match m {
            ChatMessage::User(text) => push("user", vec![json!({"text": text})]),
            ChatMessage::Assistant { text, tool_calls } => {
                let mut parts = Vec::new();
                if let Some(t) = text.as_ref().filter(|t| !t.is_empty()) {
                    parts.push(json!({"text": t}));
                }
                for c in tool_calls {
                    let args = if c.arguments.is_object() {
                        c.arguments.clone()
                    } else {
                        json!({})
                    };
                    let mut part =
                        json!({"functionCall": {"name": to_wire(&c.name), "args": args}});
                    if let Some(sig) = &c.signature {
                        part["thoughtSignature"] = json!(sig);
                    }
                    parts.push(part);
                }
                push("model", parts);
            }
            ChatMessage::ToolResults(results) => {
                let parts = results
                    .iter()
                    .map(|r| json!({"functionResponse": {"name": to_wire(&r.name), "response": response_object(&r.content, r.is_error)}}))
                    .collect();
                push("user", parts);
            }
        }
    }
    let mut body = json!({"contents": contents});
    if !req.system.is_empty() {
        body["systemInstruction"] = json!({"parts": [{"text": req.system}]});
    }
    if !req.tools.is_empty() {
        let decls: Vec<Value> = req
            .tools
            .iter()
            .map(|t| json!({"name": to_wire(&t.name), "description": t.description, "parameters": for_gemini(&t.parameters)}))
            .collect();
        body["tools"] = json!([{"functionDeclarations": decls}]);
        body["toolConfig"] = json!({"functionCallingConfig": {"mode": "AUTO"}});
    }
    body
}

/// A `generateContent` answer. Every field is optional in Google's
/// discovery document; `candidates` is missing when the prompt was blocked.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GenerateContentResponse {
    candidates: Option<Vec<Candidate>>,
    prompt_feedback: Option<PromptFeedback>,
    /// Bookkeeping only: read leniently by [`Usage::read`].
    usage_metadata: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    block_reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    /// Missing when the candidate was stopped (`SAFETY`) before any part.
    content: Option<Content>,
    finish_reason: Option<Finish>,
}

#[derive(Deserialize)]
struct Content {
    parts: Option<Vec<Part>>,
}

/// A part is a union: at most one of its data fields is set (`text`,
/// `functionCall`, `inlineData`…); the others are not read here.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part {
    text: Option<String>,
    /// A thinking model's summary of its thoughts, not its answer.
    thought: Option<bool>,
    function_call: Option<FunctionCall>,
    thought_signature: Option<String>,
}

#[derive(Deserialize)]
struct FunctionCall {
    id: Option<String>,
    name: String,
    args: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
enum Finish {
    Stop,
    MaxTokens,
    #[serde(other)]
    Other,
}

/// Reads `candidates[0].content.parts`.
pub(crate) fn decode(answer: &Value, names: &NameMap) -> Result<ChatResponse, String> {
    let response: GenerateContentResponse = read(answer)?;
    let Some(candidate) = response.candidates.and_then(|c| c.into_iter().next()) else {
        let reason = response
            .prompt_feedback
            .and_then(|f| f.block_reason)
            .unwrap_or_else(|| "no candidates".into());
        return Err(format!("the model gave no answer ({reason})"));
    };
    let parts = candidate.content.and_then(|c| c.parts).unwrap_or_default();
    let mut texts = Vec::new();
    let mut tool_calls = Vec::new();
    for (i, p) in parts.into_iter().enumerate() {
        if p.thought == Some(true) {
            continue;
        }
        if let Some(t) = p.text {
            texts.push(t);
        }
        if let Some(fc) = p.function_call {
            tool_calls.push(ToolCallRequest {
                id: fc.id.unwrap_or_else(|| format!("gemini_call_{i}")),
                name: names.resolve(&fc.name),
                arguments: fc.args.unwrap_or_else(|| json!({})),
                arguments_error: None,
                signature: p.thought_signature,
            });
        }
    }
    let text = Some(texts.concat()).filter(|t| !t.is_empty());
    let finish = match candidate.finish_reason {
        _ if !tool_calls.is_empty() => FinishReason::ToolCalls,
        Some(Finish::Stop) => FinishReason::Stop,
        Some(Finish::MaxTokens) => FinishReason::Length,
        _ => FinishReason::Other,
    };
    Ok(ChatResponse {
        text,
        tool_calls,
        finish,
        usage: Usage::read(
            response.usage_metadata.as_ref(),
            &["promptTokenCount"],
            &["candidatesTokenCount", "thoughtsTokenCount"],
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ToolResultMessage, ToolSpec};

    #[test]
    fn encodes_function_calls_and_object_responses() {
        let req = ChatRequest {
            system: "sys".into(),
            messages: vec![
                ChatMessage::User("go".into()),
                ChatMessage::Assistant {
                    text: None,
                    tool_calls: vec![ToolCallRequest {
                        id: "g1".into(),
                        name: "resources_list".into(),
                        arguments: json!({}),
                        arguments_error: None,
                        signature: Some("sig".into()),
                    }],
                },
                ChatMessage::ToolResults(vec![ToolResultMessage {
                    call_id: "g1".into(),
                    name: "resources_list".into(),
                    content: "[1,2]".into(),
                    is_error: false,
                }]),
                ChatMessage::User("more".into()),
            ],
            tools: vec![ToolSpec {
                name: "resources_list".into(),
                description: "d".into(),
                parameters: json!({"type": "object", "additionalProperties": false, "properties": {}}),
            }],
            max_tokens: 10,
        };
        let b = encode(&req);
        assert_eq!(b["systemInstruction"]["parts"][0]["text"], "sys");
        assert_eq!(b["contents"][1]["role"], "model");
        assert_eq!(b["contents"][1]["parts"][0]["thoughtSignature"], "sig");
        assert_eq!(
            b["contents"][2]["parts"][0]["functionResponse"]["response"],
            json!({"result": "[1,2]"})
        );
        assert_eq!(
            b["contents"][2]["parts"][1]["text"], "more",
            "consecutive user turns are merged"
        );
        assert!(
            b["tools"][0]["functionDeclarations"][0]["parameters"]
                .get("additionalProperties")
                .is_none()
        );
    }

    #[test]
    fn decodes_text_and_calls() {
        let answer = json!({"candidates": [{"content": {"role": "model", "parts": [
            {"text": "let me check"},
            {"functionCall": {"name": "resources_list", "args": {"pattern": "a"}}}
        ]}, "finishReason": "STOP"}]});
        let r = decode(&answer, &NameMap::new(["resources_list"])).unwrap();
        assert_eq!(r.text.as_deref(), Some("let me check"));
        assert_eq!(r.tool_calls[0].arguments, json!({"pattern": "a"}));
        assert_eq!(r.finish, FinishReason::ToolCalls);
        assert!(
            decode(
                &json!({"promptFeedback": {"blockReason": "SAFETY"}}),
                &NameMap::default()
            )
            .unwrap_err()
            .contains("SAFETY")
        );
        assert_eq!(r.usage, None);
    }

    #[test]
    fn reads_usage_with_thinking_tokens_as_output() {
        let answer = json!({"candidates": [{"content": {"parts": [{"text": "hi"}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 40, "candidatesTokenCount": 3, "thoughtsTokenCount": 20, "totalTokenCount": 63}});
        let r = decode(&answer, &NameMap::default()).unwrap();
        assert_eq!(
            r.usage,
            Some(Usage {
                input: 40,
                output: 23
            })
        );
        // Counters that are not numbers are not usage.
        let odd = json!({"candidates": [{"content": {"parts": [{"text": "hi"}]}}], "usageMetadata": {"promptTokenCount": "x"}});
        assert_eq!(decode(&odd, &NameMap::default()).unwrap().usage, None);
    }

    /// An answer as the API documents it: a thought summary, a text, a
    /// call with its signature, fields this agent does not read.
    fn real_answer() -> Value {
        json!({
            "candidates": [{
                "content": {"role": "model", "parts": [
                    {"text": "The user wants a list.", "thought": true},
                    {"text": "Let me look."},
                    {"functionCall": {"name": "resources_list", "args": {"pattern": "a*"}}, "thoughtSignature": "CiQB0e2Kb"}
                ]},
                "finishReason": "STOP",
                "index": 0,
                "safetyRatings": []
            }],
            "usageMetadata": {"promptTokenCount": 120, "candidatesTokenCount": 14, "thoughtsTokenCount": 30, "totalTokenCount": 164},
            "modelVersion": "gemini-2.5-flash",
            "responseId": "mRyVaOmvNuXQz7IP"
        })
    }

    #[test]
    fn a_real_shaped_answer_decodes() {
        let r = decode(&real_answer(), &NameMap::new(["resources_list"])).unwrap();
        assert_eq!(r.text.as_deref(), Some("Let me look."));
        assert_eq!(r.tool_calls[0].id, "gemini_call_2");
        assert_eq!(r.tool_calls[0].name, "resources_list");
        assert_eq!(r.tool_calls[0].arguments, json!({"pattern": "a*"}));
        assert_eq!(r.tool_calls[0].signature.as_deref(), Some("CiQB0e2Kb"));
        assert_eq!(r.finish, FinishReason::ToolCalls);
        assert_eq!(
            r.usage,
            Some(Usage {
                input: 120,
                output: 44
            })
        );
        // A candidate stopped before any part.
        let stopped = json!({"candidates": [{"finishReason": "SAFETY"}]});
        let r = decode(&stopped, &NameMap::default()).unwrap();
        assert_eq!((r.text, r.finish), (None, FinishReason::Other));
    }

    #[test]
    fn a_renamed_required_field_is_an_error_naming_it() {
        let mut a = real_answer();
        let call = a["candidates"][0]["content"]["parts"][2]["functionCall"]
            .as_object_mut()
            .unwrap();
        let name = call.remove("name").unwrap();
        call.insert("function".into(), name);
        let message = decode(&a, &NameMap::default()).unwrap_err();
        assert_eq!(
            message,
            "the required field `candidates[0].content.parts[2].functionCall.name` is missing"
        );
        let shown = LlmError::Decode {
            provider: "gemini",
            message,
        }
        .to_string();
        assert!(shown.starts_with("the gemini API sent an answer this agent cannot read: "));
        let mut a = real_answer();
        a["candidates"][0]["content"]["parts"][1]["text"] = json!(["Let me look."]);
        let message = decode(&a, &NameMap::default()).unwrap_err();
        assert_eq!(
            message,
            "`candidates[0].content.parts[1].text` is not a string"
        );
    }
}
