//! The spec check of `support::specs` itself: it must accept what the real
//! APIs accept and catch the mistakes they reject, or the assertions that
//! use it elsewhere prove nothing.

use crate::support;

use serde_json::{Value, json};
use support::specs::check;
use test_support::fake_llm::{Format, Recorded};

fn rec(format: Format, body: Value, reply: Option<Value>) -> Recorded {
    Recorded {
        format,
        path: String::new(),
        headers: Vec::new(),
        body,
        status: 200,
        reply,
        received_ms: 0,
        answered_ms: 0,
    }
}

fn gemini_request(parameters: Value) -> Value {
    json!({
        "systemInstruction": {"parts": [{"text": "be brief"}]},
        "contents": [
            {"role": "user", "parts": [{"text": "list"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "resources_list", "args": {}}, "thoughtSignature": "c2ln"}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "resources_list", "response": {"result": "[]"}}}]}
        ],
        "tools": [{"functionDeclarations": [{"name": "resources_list", "description": "List", "parameters": parameters}]}],
        "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}}
    })
}

#[test]
fn gemini_accepts_its_schema_subset_in_either_case_and_rejects_unknown_keys() {
    let ok = gemini_request(json!({
        "type": "object",
        "properties": {"pattern": {"type": "string", "description": "regex", "nullable": true}},
        "required": ["pattern"]
    }));
    assert_eq!(check(&rec(Format::Gemini, ok, None)), Vec::<String>::new());

    // snake_case field names are proto JSON too (the official SDK sends them).
    let snake = json!({
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "tools": [{"function_declarations": [{"name": "t", "parameters": {"type": "OBJECT"}}]}]
    });
    assert_eq!(
        check(&rec(Format::Gemini, snake, None)),
        Vec::<String>::new()
    );

    let bad = gemini_request(json!({
        "type": "object",
        "properties": {},
        "additionalProperties": false
    }));
    let problems = check(&rec(Format::Gemini, bad, None));
    assert!(
        problems.iter().any(|p| p.contains("additionalProperties")),
        "{problems:?}"
    );

    let misspelt = json!({"contents": [{"role": "user", "parts": [{"txt": "hi"}]}]});
    assert!(!check(&rec(Format::Gemini, misspelt, None)).is_empty());
}

#[test]
fn openai_catches_a_wrong_role_and_missing_messages() {
    let ok = json!({
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "list"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "resources_list", "arguments": "{}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "[]"}
        ],
        "tools": [{"type": "function", "function": {"name": "resources_list", "parameters": {"type": "object", "properties": {}}}}]
    });
    // A reply without the optional-but-"required" fields (as Ollama sends).
    let reply = json!({
        "id": "x", "object": "chat.completion", "created": 1, "model": "gpt-4o",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "done"}}]
    });
    assert_eq!(
        check(&rec(Format::OpenAi, ok, Some(reply))),
        Vec::<String>::new()
    );

    let bad = json!({
        "model": "gpt-4o",
        "messages": [{"role": "robot", "content": "hi"}]
    });
    assert!(!check(&rec(Format::OpenAi, bad, None)).is_empty());
    let no_messages = json!({"model": "gpt-4o"});
    assert!(!check(&rec(Format::OpenAi, no_messages, None)).is_empty());
}

#[test]
fn anthropic_catches_a_missing_max_tokens_and_a_bad_block() {
    let ok = json!({
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "system": "be brief",
        "messages": [
            {"role": "user", "content": "list"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "resources_list", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "[]"}]}
        ],
        "tools": [{"name": "resources_list", "description": "List", "input_schema": {"type": "object", "properties": {}}}]
    });
    assert_eq!(
        check(&rec(Format::Anthropic, ok, None)),
        Vec::<String>::new()
    );

    let no_max =
        json!({"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]});
    assert!(!check(&rec(Format::Anthropic, no_max, None)).is_empty());
    let bad_block = json!({
        "model": "claude-sonnet-4-5", "max_tokens": 10,
        "messages": [{"role": "user", "content": [{"type": "tool_answer", "text": "x"}]}]
    });
    assert!(!check(&rec(Format::Anthropic, bad_block, None)).is_empty());
}
