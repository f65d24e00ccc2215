//! `RunAgentInput` as a client sends it, read into the engine's
//! [`RunRequest`]: only `threadId`, `runId` and `messages` are required;
//! unknown keys pass (the schema's objects are loose). A user message's
//! content is a string or parts, of which the text parts are read.

use crate::engine::ag_ui::run::{ResumeEntry, RunRequest, UserInput};
use serde::Deserialize;
use serde_json::Value;

/// The request body.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunAgentInput {
    pub(crate) thread_id: String,
    pub(crate) run_id: String,
    pub(crate) messages: Vec<InputMessage>,
    #[serde(default)]
    pub(crate) tools: Vec<Value>,
    #[serde(default)]
    pub(crate) resume: Option<Vec<InputResume>>,
}

/// One message of the history; only user messages are read.
#[derive(Debug, Deserialize)]
pub(crate) struct InputMessage {
    pub(crate) id: String,
    pub(crate) role: String,
    #[serde(default)]
    pub(crate) content: Value,
}

/// One resume entry.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InputResume {
    pub(crate) interrupt_id: String,
    pub(crate) status: ResumeStatus,
    #[serde(default)]
    pub(crate) payload: Option<Value>,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ResumeStatus {
    Resolved,
    Cancelled,
}

impl RunAgentInput {
    /// The engine's request, or what is wrong with this one.
    pub(crate) fn request(&self, may_send: bool) -> Result<RunRequest, String> {
        if self.thread_id.trim().is_empty() || self.thread_id.len() > 200 {
            return Err("threadId must be a non-empty string of at most 200 characters".into());
        }
        if self.run_id.trim().is_empty() {
            return Err("runId must be a non-empty string".into());
        }
        let mut messages = Vec::new();
        for m in self.messages.iter().filter(|m| m.role == "user") {
            if m.id.trim().is_empty() {
                return Err("each user message needs its id".into());
            }
            messages.push(UserInput {
                id: m.id.clone(),
                text: text_of(&m.content)
                    .ok_or_else(|| format!("user message {:?} has no text content", m.id))?,
            });
        }
        let resume = self
            .resume
            .iter()
            .flatten()
            .map(|r| ResumeEntry {
                interrupt_id: r.interrupt_id.clone(),
                cancelled: r.status == ResumeStatus::Cancelled,
                payload: r.payload.clone(),
            })
            .collect();
        Ok(RunRequest {
            thread_id: self.thread_id.clone(),
            messages,
            resume,
            may_send,
        })
    }
}

/// A user message's text: the string, or its text parts joined.
fn text_of(content: &Value) -> Option<String> {
    let text = match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|p| p["type"] == "text")
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => return None,
    };
    (!text.trim().is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input(v: Value) -> RunAgentInput {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_run_input_becomes_the_engines_request() {
        let i = input(json!({
            "threadId": "t1", "runId": "r1", "state": {}, "tools": [], "context": [],
            "messages": [
                {"id": "u1", "role": "user", "content": "add apples 5"},
                {"id": "a1", "role": "assistant", "content": "ignored"},
                {"id": "u2", "role": "user", "content": [{"type": "text", "text": "and pears"}]}
            ],
            "resume": [{"interruptId": "x", "status": "cancelled"}]
        }));
        let r = i.request(true).unwrap();
        assert_eq!(r.messages.len(), 2);
        assert_eq!(r.messages[1].text, "and pears");
        assert!(r.resume[0].cancelled);
        assert!(
            input(json!({"threadId": "", "runId": "r", "messages": []}))
                .request(true)
                .is_err()
        );
        assert!(
            input(json!({"threadId": "t", "runId": "r", "messages": [{"id": "u", "role": "user", "content": 5}]}))
                .request(true)
                .is_err()
        );
        assert!(
            serde_json::from_value::<RunAgentInput>(json!({"threadId": "t", "runId": "r"}))
                .is_err(),
            "messages are required"
        );
    }
}
