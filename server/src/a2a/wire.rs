//! A2A objects on the wire, in the three dialects we speak (A2A.md).
//!
//! The server builds dialect-neutral views (`TaskView`, `MessageView`) and
//! renders them here; incoming messages are read leniently (any part tag,
//! camelCase or snake_case ids). What differs per dialect:
//! - **1.0**: ProtoJSON, no `kind` anywhere, `TASK_STATE_*` and `ROLE_*`
//!   enums, parts are `{"text"}` / `{"data"}`; extra keys fail the TCK's
//!   schemas, so none are emitted.
//! - **0.3**: every object has `kind`, states are `input-required` etc.,
//!   parts are `{"kind":"text","text"}`.
//! - **legacy** (the seed's agents): 0.3 objects with `"type":"text"` parts.

use serde_json::{Map, Value, json};

/// Which protocol a request spoke; answers use the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    V1,
    V03,
    Legacy,
}

impl Dialect {
    /// The dialect's name (a metrics label): `1.0`, `0.3` or `legacy`.
    pub fn label(self) -> &'static str {
        match self {
            Dialect::V1 => "1.0",
            Dialect::V03 => "0.3",
            Dialect::Legacy => "legacy",
        }
    }
}

/// Task states (the subset we produce).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    Submitted,
    Working,
    InputRequired,
    Completed,
    Failed,
    Canceled,
}

impl TaskState {
    pub fn wire(self, d: Dialect) -> &'static str {
        match (d, self) {
            (Dialect::V1, TaskState::Submitted) => "TASK_STATE_SUBMITTED",
            (Dialect::V1, TaskState::Working) => "TASK_STATE_WORKING",
            (Dialect::V1, TaskState::InputRequired) => "TASK_STATE_INPUT_REQUIRED",
            (Dialect::V1, TaskState::Completed) => "TASK_STATE_COMPLETED",
            (Dialect::V1, TaskState::Failed) => "TASK_STATE_FAILED",
            (Dialect::V1, TaskState::Canceled) => "TASK_STATE_CANCELED",
            (_, TaskState::Submitted) => "submitted",
            (_, TaskState::Working) => "working",
            (_, TaskState::InputRequired) => "input-required",
            (_, TaskState::Completed) => "completed",
            (_, TaskState::Failed) => "failed",
            (_, TaskState::Canceled) => "canceled",
        }
    }

    /// Reads a state in any dialect (for `ListTasks` filters).
    pub fn parse(s: &str) -> Option<TaskState> {
        let s = s
            .trim_start_matches("TASK_STATE_")
            .to_ascii_lowercase()
            .replace('_', "-");
        Some(match s.as_str() {
            "submitted" => TaskState::Submitted,
            "working" => TaskState::Working,
            "input-required" => TaskState::InputRequired,
            "completed" => TaskState::Completed,
            "failed" => TaskState::Failed,
            "canceled" | "cancelled" => TaskState::Canceled,
            _ => return None,
        })
    }

    /// No further change: completed, failed or canceled.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled
        )
    }
}

/// A part of a message or artifact.
#[derive(Clone, Debug, PartialEq)]
pub enum Part {
    Text(String),
    Data(Value),
    /// A file, inline (`raw`, base64) or by `url`.
    File {
        raw: Option<String>,
        url: Option<String>,
        filename: String,
        media_type: String,
    },
}

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sender {
    User,
    Agent,
}

/// A message, dialect-neutral.
#[derive(Clone, Debug, PartialEq)]
pub struct MessageView {
    pub id: String,
    pub role: Sender,
    pub parts: Vec<Part>,
    pub task_id: Option<String>,
    pub context_id: Option<String>,
}

/// An artifact (the answer of a turn).
#[derive(Clone, Debug, PartialEq)]
pub struct ArtifactView {
    pub id: String,
    pub name: String,
    pub parts: Vec<Part>,
}

/// A task, dialect-neutral.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskView {
    pub id: String,
    pub context_id: String,
    pub state: TaskState,
    pub status_message: Option<MessageView>,
    pub timestamp: String,
    pub history: Vec<MessageView>,
    pub artifacts: Vec<ArtifactView>,
}

pub fn part(p: &Part, d: Dialect) -> Value {
    match (d, p) {
        (Dialect::V1, Part::Text(t)) => json!({ "text": t }),
        (Dialect::V1, Part::Data(v)) => json!({ "data": v }),
        (Dialect::V03, Part::Text(t)) => json!({"kind": "text", "text": t}),
        (Dialect::V03, Part::Data(v)) => json!({"kind": "data", "data": v}),
        (Dialect::Legacy, Part::Text(t)) => json!({"type": "text", "kind": "text", "text": t}),
        (Dialect::Legacy, Part::Data(v)) => json!({"type": "data", "kind": "data", "data": v}),
        (
            Dialect::V1,
            Part::File {
                raw,
                url,
                filename,
                media_type,
            },
        ) => {
            let mut o = json!({"filename": filename, "mediaType": media_type});
            match (raw, url) {
                (Some(r), _) => o["raw"] = json!(r),
                (None, Some(u)) => o["url"] = json!(u),
                (None, None) => {}
            }
            o
        }
        (
            _,
            Part::File {
                raw,
                url,
                filename,
                media_type,
            },
        ) => {
            let mut f = json!({"name": filename, "mimeType": media_type});
            match (raw, url) {
                (Some(r), _) => f["bytes"] = json!(r),
                (None, Some(u)) => f["uri"] = json!(u),
                (None, None) => {}
            }
            json!({"kind": "file", "file": f})
        }
    }
}

pub fn message(m: &MessageView, d: Dialect) -> Value {
    let mut o = Map::new();
    if d != Dialect::V1 {
        o.insert("kind".into(), json!("message"));
    }
    o.insert("messageId".into(), json!(m.id));
    let role = match (d, m.role) {
        (Dialect::V1, Sender::User) => "ROLE_USER",
        (Dialect::V1, Sender::Agent) => "ROLE_AGENT",
        (_, Sender::User) => "user",
        (_, Sender::Agent) => "agent",
    };
    o.insert("role".into(), json!(role));
    o.insert(
        "parts".into(),
        Value::Array(m.parts.iter().map(|p| part(p, d)).collect()),
    );
    if let Some(t) = &m.task_id {
        o.insert("taskId".into(), json!(t));
    }
    if let Some(c) = &m.context_id {
        o.insert("contextId".into(), json!(c));
    }
    Value::Object(o)
}

pub fn artifact(a: &ArtifactView, d: Dialect) -> Value {
    json!({
        "artifactId": a.id,
        "name": a.name,
        "parts": a.parts.iter().map(|p| part(p, d)).collect::<Vec<_>>(),
    })
}

pub fn status(t: &TaskView, d: Dialect) -> Value {
    let mut s = Map::new();
    s.insert("state".into(), json!(t.state.wire(d)));
    if let Some(m) = &t.status_message {
        s.insert("message".into(), message(m, d));
    }
    s.insert("timestamp".into(), json!(t.timestamp));
    Value::Object(s)
}

/// A task; `history: None` omits it (historyLength 0).
pub fn task(t: &TaskView, d: Dialect, with_artifacts: bool) -> Value {
    let mut o = Map::new();
    if d != Dialect::V1 {
        o.insert("kind".into(), json!("task"));
    }
    o.insert("id".into(), json!(t.id));
    o.insert("contextId".into(), json!(t.context_id));
    o.insert("status".into(), status(t, d));
    if with_artifacts && !t.artifacts.is_empty() {
        o.insert(
            "artifacts".into(),
            Value::Array(t.artifacts.iter().map(|a| artifact(a, d)).collect()),
        );
    }
    if !t.history.is_empty() {
        o.insert(
            "history".into(),
            Value::Array(t.history.iter().map(|m| message(m, d)).collect()),
        );
    }
    Value::Object(o)
}

/// A status update event (`final` only in 0.3 and legacy).
pub fn status_update(t: &TaskView, d: Dialect, last: bool) -> Value {
    match d {
        Dialect::V1 => {
            json!({"statusUpdate": {"taskId": t.id, "contextId": t.context_id, "status": status(t, d)}})
        }
        _ => json!({"kind": "status-update", "taskId": t.id, "contextId": t.context_id,
                    "status": status(t, d), "final": last}),
    }
}

/// An artifact update event.
pub fn artifact_update(t: &TaskView, a: &ArtifactView, d: Dialect) -> Value {
    match d {
        Dialect::V1 => json!({"artifactUpdate": {"taskId": t.id, "contextId": t.context_id,
                                                 "artifact": artifact(a, d), "lastChunk": true}}),
        _ => json!({"kind": "artifact-update", "taskId": t.id, "contextId": t.context_id,
                    "artifact": artifact(a, d), "lastChunk": true}),
    }
}

/// A message as read from a request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Incoming {
    /// The dialect it came in (set by the handler).
    pub dialect: Option<Dialect>,
    pub message_id: Option<String>,
    /// The text parts, joined by newlines.
    pub text: String,
    /// The data parts.
    pub data: Vec<Value>,
    pub task_id: Option<String>,
    pub context_id: Option<String>,
}

/// Reads `params.message` leniently; the error says what is wrong.
pub fn incoming(params: &Value) -> Result<Incoming, String> {
    let m = params
        .get("message")
        .filter(|m| m.is_object())
        .ok_or("params.message is required: {\"message\": {\"role\": \"user\", \"parts\": [{\"text\": \"…\"}]}}")?;
    let parts = m
        .get("parts")
        .and_then(Value::as_array)
        .ok_or("message.parts must be a list of parts")?;
    if parts.is_empty() {
        return Err("message.parts is empty: send at least one text part".into());
    }
    let mut texts = Vec::new();
    let mut data = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        if !p.is_object() {
            return Err(format!("message.parts[{i}] must be an object"));
        }
        let tag = p
            .get("kind")
            .or_else(|| p.get("type"))
            .and_then(Value::as_str);
        if let Some(t) = p.get("text").and_then(Value::as_str) {
            texts.push(t.to_string());
        } else if let Some(d) = p.get("data") {
            data.push(d.clone());
        } else if matches!(tag, Some("text")) {
            return Err(format!("message.parts[{i}] is a text part without `text`"));
        }
        // File parts (raw, url, file) are accepted and ignored: the agent reads text.
    }
    let s = |k: &str, alt: &str| {
        m.get(k)
            .or_else(|| m.get(alt))
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    Ok(Incoming {
        dialect: None,
        message_id: s("messageId", "message_id"),
        text: texts.join("\n"),
        data,
        // The seed's legacy form puts taskId beside the message.
        task_id: s("taskId", "task_id").or_else(|| {
            params
                .get("taskId")
                .and_then(Value::as_str)
                .map(str::to_string)
        }),
        context_id: s("contextId", "context_id"),
    })
}

/// What a continuation of a waiting task decides: the words A2A.md lists,
/// or a `{"approved": bool}` data part; `None` for anything else.
pub fn decision(m: &Incoming) -> Option<(bool, Option<String>)> {
    decision_in_full(m).map(|d| (d.approved, d.reason))
}

/// A decision as a continuation carries it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ContinuationDecision {
    pub approved: bool,
    pub reason: Option<String>,
    /// Edited arguments (`{"approved": true, "arguments": {...}}`,
    /// POLICY.md §3).
    pub arguments: Option<Value>,
    /// The approval the caller decided (`approval_uuid`): a task that now
    /// waits on another one refuses the decision.
    pub approval_uuid: Option<String>,
}

/// [`decision`] with everything a data part may add.
pub fn decision_in_full(m: &Incoming) -> Option<ContinuationDecision> {
    for d in &m.data {
        if let Some(a) = d.get("approved").and_then(Value::as_bool) {
            return Some(ContinuationDecision {
                approved: a,
                reason: d.get("reason").and_then(Value::as_str).map(str::to_string),
                arguments: d.get("arguments").filter(|v| !v.is_null()).cloned(),
                approval_uuid: d
                    .get("approval_uuid")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            });
        }
    }
    let word = m
        .text
        .trim()
        .trim_end_matches(['.', '!'])
        .to_ascii_lowercase();
    match word.as_str() {
        "yes" | "y" | "true" | "approve" | "approved" | "ok" | "confirm" => {
            Some(ContinuationDecision {
                approved: true,
                ..Default::default()
            })
        }
        "no" | "n" | "false" | "reject" | "rejected" | "deny" | "cancel" => {
            Some(ContinuationDecision::default())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view() -> TaskView {
        TaskView {
            id: "t1".into(),
            context_id: "t1".into(),
            state: TaskState::InputRequired,
            status_message: Some(MessageView {
                id: "m2".into(),
                role: Sender::Agent,
                parts: vec![
                    Part::Text("Approve?".into()),
                    Part::Data(json!({"tool": "x"})),
                ],
                task_id: Some("t1".into()),
                context_id: Some("t1".into()),
            }),
            timestamp: "2026-01-01T00:00:00.000Z".into(),
            history: vec![],
            artifacts: vec![],
        }
    }

    #[test]
    fn tasks_render_per_dialect() {
        let v1 = task(&view(), Dialect::V1, true);
        assert!(v1.get("kind").is_none());
        assert_eq!(v1["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
        assert_eq!(v1["status"]["message"]["role"], "ROLE_AGENT");
        assert_eq!(
            v1["status"]["message"]["parts"][1],
            json!({"data": {"tool": "x"}})
        );
        let v03 = task(&view(), Dialect::V03, true);
        assert_eq!(
            (v03["kind"].as_str(), v03["status"]["state"].as_str()),
            (Some("task"), Some("input-required"))
        );
        assert_eq!(v03["status"]["message"]["parts"][0]["kind"], "text");
        let legacy = task(&view(), Dialect::Legacy, true);
        assert_eq!(legacy["status"]["message"]["parts"][0]["type"], "text");
        let up = status_update(&view(), Dialect::V1, true);
        assert!(up["statusUpdate"].get("final").is_none());
        assert_eq!(status_update(&view(), Dialect::V03, true)["final"], true);
    }

    #[test]
    fn incoming_messages_are_read_leniently() {
        let m = incoming(&json!({"message": {"message_id": "a", "role": "ROLE_USER",
            "parts": [{"kind": "text", "text": "hi"}, {"type": "text", "text": "there"}, {"data": {"approved": true}}],
            "taskId": "t"}})).unwrap();
        assert_eq!(
            (
                m.text.as_str(),
                m.task_id.as_deref(),
                m.message_id.as_deref()
            ),
            ("hi\nthere", Some("t"), Some("a"))
        );
        assert_eq!(decision(&m), Some((true, None)));
        let legacy = incoming(
            &json!({"taskId": "t9", "message": {"parts": [{"type": "text", "text": "No."}]}}),
        )
        .unwrap();
        assert_eq!(
            (legacy.task_id.as_deref(), decision(&legacy)),
            (Some("t9"), Some((false, None)))
        );
        assert!(
            incoming(&json!({"message": {"parts": []}}))
                .unwrap_err()
                .contains("empty")
        );
        assert!(incoming(&json!({"message": {"parts": "x"}})).is_err());
        assert!(incoming(&json!({"": "x"})).is_err());
        let maybe = incoming(&json!({"message": {"parts": [{"text": "maybe later"}]}})).unwrap();
        assert_eq!(decision(&maybe), None);
    }
}
