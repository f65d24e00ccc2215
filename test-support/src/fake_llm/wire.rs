//! Reading requests the way the real APIs do, and writing their answers.
//!
//! Each `read_*` checks a request against the rules its provider enforces
//! (the ones an agent most often breaks: role order, unanswered calls,
//! schema keys Gemini refuses, name patterns, required headers) and turns it
//! into the neutral transcript the rules engine reads. A violation is an
//! `Err` with the provider's own kind of message; the server answers it with
//! HTTP 400 in the provider's error format.

use serde_json::{Value, json};
use server::llm::names::is_wire_safe;
use server::llm::schema::gemini_rejected_key;
use server::llm::{ChatMessage, ChatResponse, ToolCallRequest, ToolResultMessage};

/// The transcript plus the tool names offered.
pub struct Parsed {
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<String>,
}

/// The system prompt of a request in any of the three formats: OpenAI's
/// `system`/`developer` messages, Anthropic's `system`, Gemini's
/// `systemInstruction` (text parts joined by newlines).
pub fn system_prompt(body: &Value) -> String {
    fn text_of(v: &Value) -> Vec<String> {
        match v {
            Value::String(s) => vec![s.clone()],
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str).map(str::to_string))
                .collect(),
            Value::Object(o) => o.get("parts").map(text_of).unwrap_or_default(),
            _ => Vec::new(),
        }
    }
    let mut out = Vec::new();
    if let Some(list) = body.get("messages").and_then(Value::as_array) {
        for m in list {
            if matches!(
                m.get("role").and_then(Value::as_str),
                Some("system" | "developer")
            ) && let Some(c) = m.get("content")
            {
                out.extend(text_of(c));
            }
        }
    }
    for key in ["system", "systemInstruction", "system_instruction"] {
        if let Some(v) = body.get(key) {
            out.extend(text_of(v));
        }
    }
    out.join("\n")
}

fn arr<'a>(v: &'a Value, key: &str) -> Result<&'a Vec<Value>, String> {
    v.get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| format!("`{key}` must be an array"))
}

fn check_name(name: &str) -> Result<(), String> {
    if is_wire_safe(name) {
        Ok(())
    } else {
        Err(format!(
            "tool name {name:?} does not match ^[a-zA-Z0-9_-]{{1,64}}$"
        ))
    }
}

/// OpenAI chat completions.
pub fn read_openai(body: &Value) -> Result<Parsed, String> {
    body.get("model")
        .and_then(Value::as_str)
        .ok_or("`model` is required")?;
    let mut tools = Vec::new();
    if let Some(list) = body.get("tools") {
        for t in list.as_array().ok_or("`tools` must be an array")? {
            if t.get("type").and_then(Value::as_str) != Some("function") {
                return Err("tools[].type must be \"function\"".into());
            }
            let name = t
                .pointer("/function/name")
                .and_then(Value::as_str)
                .ok_or("tools[].function.name is required")?;
            check_name(name)?;
            let params = t.pointer("/function/parameters");
            if let Some(p) = params
                && p.get("type").and_then(Value::as_str) != Some("object")
            {
                return Err(format!(
                    "Invalid schema for function '{name}': schema must be a JSON Schema of 'type: \"object\"'"
                ));
            }
            tools.push(name.to_string());
        }
    }
    let mut messages = Vec::new();
    let mut open: Vec<String> = Vec::new();
    let mut results: Vec<ToolResultMessage> = Vec::new();
    let mut last_call_names: Vec<(String, String)> = Vec::new();
    for (i, m) in arr(body, "messages")?.iter().enumerate() {
        let role = m
            .get("role")
            .and_then(Value::as_str)
            .ok_or(format!("messages[{i}].role is required"))?;
        if role != "tool" && !open.is_empty() {
            return Err(format!(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. \
                 The following tool_call_ids did not have response messages: {}",
                open.join(", ")
            ));
        }
        if role != "tool" && !results.is_empty() {
            messages.push(ChatMessage::ToolResults(std::mem::take(&mut results)));
        }
        match role {
            "system" | "developer" => {}
            "user" => messages.push(ChatMessage::User(
                m.get("content")
                    .and_then(Value::as_str)
                    .ok_or(format!("messages[{i}].content must be a string"))?
                    .to_string(),
            )),
            "assistant" => {
                let text = m.get("content").and_then(Value::as_str).map(str::to_string);
                let mut calls = Vec::new();
                if let Some(tc) = m.get("tool_calls") {
                    for c in tc.as_array().ok_or("tool_calls must be an array")? {
                        let id = c
                            .get("id")
                            .and_then(Value::as_str)
                            .ok_or("tool_calls[].id is required")?;
                        let name = c
                            .pointer("/function/name")
                            .and_then(Value::as_str)
                            .ok_or("tool_calls[].function.name is required")?;
                        let args = c
                            .pointer("/function/arguments")
                            .and_then(Value::as_str)
                            .ok_or("tool_calls[].function.arguments must be a string")?;
                        open.push(id.to_string());
                        last_call_names.push((id.to_string(), name.to_string()));
                        calls.push(ToolCallRequest {
                            id: id.into(),
                            name: name.into(),
                            arguments: serde_json::from_str(args).unwrap_or(Value::Null),
                            arguments_error: None,
                            signature: None,
                        });
                    }
                }
                if text.is_none() && calls.is_empty() {
                    return Err(format!(
                        "messages[{i}]: an assistant message needs content or tool_calls"
                    ));
                }
                messages.push(ChatMessage::Assistant {
                    text,
                    tool_calls: calls,
                });
            }
            "tool" => {
                let id = m
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .ok_or(format!("messages[{i}].tool_call_id is required"))?;
                let Some(pos) = open.iter().position(|o| o == id) else {
                    return Err(format!(
                        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (tool_call_id {id})"
                    ));
                };
                open.remove(pos);
                let name = last_call_names
                    .iter()
                    .find(|(i, _)| i == id)
                    .map(|(_, n)| n.clone())
                    .unwrap_or_default();
                results.push(ToolResultMessage {
                    call_id: id.into(),
                    name,
                    content: m
                        .get("content")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .into(),
                    is_error: false,
                });
            }
            other => {
                return Err(format!(
                    "messages[{i}].role {other:?} is not one of system, user, assistant, tool"
                ));
            }
        }
    }
    if !open.is_empty() {
        return Err(format!(
            "tool_call_ids without a response: {}",
            open.join(", ")
        ));
    }
    if !results.is_empty() {
        messages.push(ChatMessage::ToolResults(results));
    }
    Ok(Parsed { messages, tools })
}

/// Anthropic messages.
pub fn read_anthropic(body: &Value) -> Result<Parsed, String> {
    body.get("model")
        .and_then(Value::as_str)
        .ok_or("model: Field required")?;
    body.get("max_tokens")
        .and_then(Value::as_u64)
        .ok_or("max_tokens: Field required")?;
    let mut tools = Vec::new();
    if let Some(list) = body.get("tools") {
        for t in list
            .as_array()
            .ok_or("tools: Input should be a valid list")?
        {
            let name = t
                .get("name")
                .and_then(Value::as_str)
                .ok_or("tools.name: Field required")?;
            check_name(name)?;
            t.get("input_schema")
                .filter(|s| s.is_object())
                .ok_or("tools.input_schema: Field required")?;
            tools.push(name.to_string());
        }
    }
    let list = arr(body, "messages")?;
    let mut messages = Vec::new();
    let mut expected_role = "user";
    let mut open: Vec<String> = Vec::new();
    let mut names: Vec<(String, String)> = Vec::new();
    for (i, m) in list.iter().enumerate() {
        let role = m
            .get("role")
            .and_then(Value::as_str)
            .ok_or(format!("messages.{i}.role: Field required"))?;
        if role != expected_role {
            return Err(if i == 0 {
                "messages: first message must use the \"user\" role".into()
            } else {
                format!(
                    "messages: roles must alternate between \"user\" and \"assistant\" (messages.{i} is {role:?})"
                )
            });
        }
        expected_role = if role == "user" { "assistant" } else { "user" };
        let blocks: Vec<Value> = match m.get("content") {
            Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
            Some(Value::Array(a)) => a.clone(),
            _ => return Err(format!("messages.{i}.content: Field required")),
        };
        if role == "user" {
            let mut results = Vec::new();
            let mut seen_other = false;
            for b in &blocks {
                match b.get("type").and_then(Value::as_str) {
                    Some("tool_result") => {
                        if seen_other {
                            return Err(format!(
                                "messages.{i}: tool_result blocks must come first in the user message"
                            ));
                        }
                        let id = b
                            .get("tool_use_id")
                            .and_then(Value::as_str)
                            .ok_or("tool_result.tool_use_id: Field required")?;
                        let Some(pos) = open.iter().position(|o| o == id) else {
                            return Err(format!(
                                "messages.{i}.content: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                            ));
                        };
                        open.remove(pos);
                        let content = match b.get("content") {
                            Some(Value::String(s)) => s.clone(),
                            Some(Value::Array(parts)) => parts
                                .iter()
                                .filter_map(|p| p.get("text").and_then(Value::as_str))
                                .collect::<Vec<_>>()
                                .join(""),
                            _ => String::new(),
                        };
                        results.push(ToolResultMessage {
                            call_id: id.into(),
                            name: names
                                .iter()
                                .find(|(n, _)| n == id)
                                .map(|(_, n)| n.clone())
                                .unwrap_or_default(),
                            content,
                            is_error: b.get("is_error").and_then(Value::as_bool).unwrap_or(false),
                        });
                    }
                    Some("text") => {
                        seen_other = true;
                        let t = b.get("text").and_then(Value::as_str).unwrap_or("");
                        if t.is_empty() {
                            return Err(format!(
                                "messages.{i}: text content blocks must be non-empty"
                            ));
                        }
                    }
                    other => return Err(format!("messages.{i}: unsupported block type {other:?}")),
                }
            }
            if !open.is_empty() {
                return Err(format!(
                    "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                    open.join(", ")
                ));
            }
            if !results.is_empty() {
                messages.push(ChatMessage::ToolResults(results));
            }
            let text: String = blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n");
            if !text.is_empty() {
                messages.push(ChatMessage::User(text));
            }
        } else {
            let mut text = None;
            let mut calls = Vec::new();
            for b in &blocks {
                match b.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let t = b.get("text").and_then(Value::as_str).unwrap_or("");
                        if t.is_empty() {
                            return Err(format!(
                                "messages.{i}: text content blocks must be non-empty"
                            ));
                        }
                        text = Some(t.to_string());
                    }
                    Some("tool_use") => {
                        let id = b
                            .get("id")
                            .and_then(Value::as_str)
                            .ok_or("tool_use.id: Field required")?;
                        let name = b
                            .get("name")
                            .and_then(Value::as_str)
                            .ok_or("tool_use.name: Field required")?;
                        open.push(id.to_string());
                        names.push((id.to_string(), name.to_string()));
                        calls.push(ToolCallRequest {
                            id: id.into(),
                            name: name.into(),
                            arguments: b.get("input").cloned().unwrap_or(Value::Null),
                            arguments_error: None,
                            signature: None,
                        });
                    }
                    other => return Err(format!("messages.{i}: unsupported block type {other:?}")),
                }
            }
            messages.push(ChatMessage::Assistant {
                text,
                tool_calls: calls,
            });
        }
    }
    if !open.is_empty() {
        return Err(format!(
            "`tool_use` ids without `tool_result`: {}",
            open.join(", ")
        ));
    }
    Ok(Parsed { messages, tools })
}

/// Gemini generateContent.
pub fn read_gemini(body: &Value) -> Result<Parsed, String> {
    let mut tools = Vec::new();
    if let Some(list) = body.get("tools") {
        for t in list
            .as_array()
            .ok_or("Invalid JSON payload received. `tools` must be a list")?
        {
            let Some(decls) = t
                .get("functionDeclarations")
                .or_else(|| t.get("function_declarations"))
            else {
                continue;
            };
            for d in decls
                .as_array()
                .ok_or("functionDeclarations must be a list")?
            {
                let name = d
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or("functionDeclarations[].name is required")?;
                check_name(name)?;
                if let Some(p) = d.get("parameters")
                    && let Some(bad) = gemini_rejected_key(p)
                {
                    return Err(format!(
                        "Invalid JSON payload received. Unknown name \"{bad}\" at 'tools[0].function_declarations[{}].parameters': Cannot find field.",
                        tools.len()
                    ));
                }
                tools.push(name.to_string());
            }
        }
    }
    let mut messages = Vec::new();
    let mut open: Vec<String> = Vec::new();
    for (i, c) in arr(body, "contents")?.iter().enumerate() {
        let role = c.get("role").and_then(Value::as_str).unwrap_or("user");
        let parts = c
            .get("parts")
            .and_then(Value::as_array)
            .ok_or(format!("contents[{i}].parts is required"))?;
        if parts.is_empty() {
            return Err(format!("contents[{i}].parts must not be empty"));
        }
        match role {
            "user" => {
                let mut results = Vec::new();
                let mut texts = Vec::new();
                for p in parts {
                    if let Some(fr) = p.get("functionResponse") {
                        let name = fr
                            .get("name")
                            .and_then(Value::as_str)
                            .ok_or("functionResponse.name is required")?;
                        let resp = fr
                            .get("response")
                            .ok_or("functionResponse.response is required")?;
                        if !resp.is_object() {
                            return Err("Invalid JSON payload received. functionResponse.response must be an object (Struct)".into());
                        }
                        let Some(pos) = open.iter().position(|o| o == name) else {
                            return Err(format!(
                                "functionResponse for {name:?} does not answer a functionCall of the previous model turn"
                            ));
                        };
                        open.remove(pos);
                        let content = resp
                            .get("result")
                            .or_else(|| resp.get("error"))
                            .map(|v| {
                                v.as_str()
                                    .map(str::to_string)
                                    .unwrap_or_else(|| v.to_string())
                            })
                            .unwrap_or_else(|| resp.to_string());
                        results.push(ToolResultMessage {
                            call_id: name.into(),
                            name: name.into(),
                            content,
                            is_error: resp.get("error").is_some(),
                        });
                    } else if let Some(t) = p.get("text").and_then(Value::as_str) {
                        texts.push(t.to_string());
                    } else {
                        return Err(format!("contents[{i}]: unsupported part {p}"));
                    }
                }
                if !open.is_empty() {
                    return Err(format!(
                        "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn (missing: {})",
                        open.join(", ")
                    ));
                }
                if !results.is_empty() {
                    messages.push(ChatMessage::ToolResults(results));
                }
                if !texts.is_empty() {
                    messages.push(ChatMessage::User(texts.join("\n")));
                }
            }
            "model" => {
                if !open.is_empty() {
                    return Err("a model turn with function calls must be followed by a user turn with function responses".into());
                }
                let mut text = None;
                let mut calls = Vec::new();
                for p in parts {
                    if let Some(fc) = p.get("functionCall") {
                        let name = fc
                            .get("name")
                            .and_then(Value::as_str)
                            .ok_or("functionCall.name is required")?;
                        open.push(name.to_string());
                        calls.push(ToolCallRequest {
                            id: name.into(),
                            name: name.into(),
                            arguments: fc.get("args").cloned().unwrap_or(Value::Null),
                            arguments_error: None,
                            signature: p
                                .get("thoughtSignature")
                                .and_then(Value::as_str)
                                .map(str::to_string),
                        });
                    } else if let Some(t) = p.get("text").and_then(Value::as_str) {
                        text = Some(t.to_string());
                    }
                }
                messages.push(ChatMessage::Assistant {
                    text,
                    tool_calls: calls,
                });
            }
            other => {
                return Err(format!(
                    "contents[{i}].role {other:?} must be \"user\" or \"model\""
                ));
            }
        }
    }
    if !open.is_empty() {
        return Err("the last model turn's function calls were not answered".into());
    }
    Ok(Parsed { messages, tools })
}

/// The answer in OpenAI's format.
pub fn write_openai(r: &ChatResponse, seq: u64) -> Value {
    let u = r.usage.unwrap_or_default();
    let calls: Vec<Value> = r
        .tool_calls
        .iter()
        .enumerate()
        .map(|(i, c)| json!({"id": format!("call_{seq}_{i}"), "type": "function", "function": {"name": c.name, "arguments": c.arguments.to_string()}}))
        .collect();
    let mut message = json!({"role": "assistant", "content": r.text});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    json!({
        "id": format!("chatcmpl-{seq}"), "object": "chat.completion", "created": 0, "model": "fake",
        "choices": [{"index": 0, "message": message, "finish_reason": if r.tool_calls.is_empty() { "stop" } else { "tool_calls" }}],
        "usage": {"prompt_tokens": u.input, "completion_tokens": u.output, "total_tokens": u.input + u.output}
    })
}

/// The answer in Anthropic's format.
pub fn write_anthropic(r: &ChatResponse, seq: u64) -> Value {
    let u = r.usage.unwrap_or_default();
    let mut content = Vec::new();
    if let Some(t) = r.text.as_ref().filter(|t| !t.is_empty()) {
        content.push(json!({"type": "text", "text": t}));
    }
    for (i, c) in r.tool_calls.iter().enumerate() {
        content.push(json!({"type": "tool_use", "id": format!("toolu_{seq}_{i}"), "name": c.name, "input": c.arguments}));
    }
    json!({
        "id": format!("msg_{seq}"), "type": "message", "role": "assistant", "model": "fake", "content": content,
        "stop_reason": if r.tool_calls.is_empty() { "end_turn" } else { "tool_use" }, "stop_sequence": null,
        "usage": {"input_tokens": u.input, "output_tokens": u.output}
    })
}

/// The answer in Gemini's format (with a thought signature on calls, as
/// thinking models send, to prove the agent sends it back).
pub fn write_gemini(r: &ChatResponse, seq: u64) -> Value {
    let u = r.usage.unwrap_or_default();
    let mut parts = Vec::new();
    if let Some(t) = r.text.as_ref().filter(|t| !t.is_empty()) {
        parts.push(json!({"text": t}));
    }
    for c in &r.tool_calls {
        parts.push(json!({"functionCall": {"name": c.name, "args": c.arguments}, "thoughtSignature": format!("sig-{seq}")}));
    }
    json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": u.input, "candidatesTokenCount": u.output, "totalTokenCount": u.input + u.output}
    })
}
