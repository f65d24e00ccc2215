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
pub(crate) enum Dialect {
    V1,
    V03,
    Legacy,
}

impl Dialect {
    /// The dialect's name (a metrics label): `1.0`, `0.3` or `legacy`.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Dialect::V1 => "1.0",
            Dialect::V03 => "0.3",
            Dialect::Legacy => "legacy",
        }
    }
}

/// Task states (the subset we produce).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TaskState {
    Submitted,
    Working,
    InputRequired,
    Completed,
    Failed,
    Canceled,
}

impl TaskState {
    pub(crate) fn wire(self, d: Dialect) -> &'static str {
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
    pub(crate) fn parse(s: &str) -> Option<TaskState> {
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
    pub(crate) fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled
        )
    }
}

/// A part of a message or artifact.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Part {
    Text(String),
    Data(Value),
    /// A file, inline (`raw`, base64) or by `url`. Only the TCK's
    /// scripted artifacts carry one today (the agent answers in text).
    #[cfg_attr(not(feature = "a2a-tck"), allow(dead_code))]
    File {
        raw: Option<String>,
        url: Option<String>,
        filename: String,
        media_type: String,
    },
}

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sender {
    User,
    Agent,
}

/// A message, dialect-neutral.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct MessageView {
    pub(crate) id: String,
    pub(crate) role: Sender,
    pub(crate) parts: Vec<Part>,
    pub(crate) task_id: Option<String>,
    pub(crate) context_id: Option<String>,
}

/// An artifact (the answer of a turn).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ArtifactView {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) parts: Vec<Part>,
}

/// A task, dialect-neutral.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TaskView {
    pub(crate) id: String,
    pub(crate) context_id: String,
    pub(crate) state: TaskState,
    pub(crate) status_message: Option<MessageView>,
    pub(crate) timestamp: String,
    pub(crate) history: Vec<MessageView>,
    pub(crate) artifacts: Vec<ArtifactView>,
}

pub(crate) fn part(p: &Part, d: Dialect) -> Value {
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

pub(crate) fn message(m: &MessageView, d: Dialect) -> Value {
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

pub(crate) fn artifact(a: &ArtifactView, d: Dialect) -> Value {
    json!({
        "artifactId": a.id,
        "name": a.name,
        "parts": a.parts.iter().map(|p| part(p, d)).collect::<Vec<_>>(),
    })
}

pub(crate) fn status(t: &TaskView, d: Dialect) -> Value {
    let mut s = Map::new();
    s.insert("state".into(), json!(t.state.wire(d)));
    if let Some(m) = &t.status_message {
        s.insert("message".into(), message(m, d));
    }
    s.insert("timestamp".into(), json!(t.timestamp));
    Value::Object(s)
}

/// A task; `history: None` omits it (historyLength 0).
pub(crate) fn task(t: &TaskView, d: Dialect, with_artifacts: bool) -> Value {
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
pub(crate) fn status_update(t: &TaskView, d: Dialect, last: bool) -> Value {
    match d {
        Dialect::V1 => {
            json!({"statusUpdate": {"taskId": t.id, "contextId": t.context_id, "status": status(t, d)}})
        }
        _ => json!({"kind": "status-update", "taskId": t.id, "contextId": t.context_id,
                    "status": status(t, d), "final": last}),
    }
}

/// An artifact update event.
pub(crate) fn artifact_update(t: &TaskView, a: &ArtifactView, d: Dialect) -> Value {
    match d {
        Dialect::V1 => json!({"artifactUpdate": {"taskId": t.id, "contextId": t.context_id,
                                                 "artifact": artifact(a, d), "lastChunk": true}}),
        _ => json!({"kind": "artifact-update", "taskId": t.id, "contextId": t.context_id,
                    "artifact": artifact(a, d), "lastChunk": true}),
    }
}

/// A message as read from a request.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Incoming {
    /// The dialect it came in (set by the handler).
    pub(crate) dialect: Option<Dialect>,
    pub(crate) message_id: Option<String>,
    /// The text parts, joined by newlines.
    pub(crate) text: String,
    /// The data parts.
    pub(crate) data: Vec<Value>,
    pub(crate) task_id: Option<String>,
    pub(crate) context_id: Option<String>,
    /// An upstream agent's receipt, in the message's metadata under
    /// [`RECEIPT_EXTENSION`] (`{"receipt": "<JWS>"}`).
    pub(crate) receipt: Option<String>,
}

/// Our A2A extension for approval receipts (RECEIPTS.md §1): a
/// continuation that approves carries the approving agent's receipt in the
/// message's `metadata[RECEIPT_EXTENSION].receipt`, so the sub-agent's own
/// receipt names the upstream approvers in `chain`.
pub(crate) const RECEIPT_EXTENSION: &str = "https://stopgo.dev/a2a/extensions/receipt/v1";

/// Reads `params.message`, strictly where the spec is strict (a
/// `messageId`, a known `role`, parts that each carry content of a known
/// kind) and leniently in spelling (`kind` or `type` tags, camelCase or
/// snake_case, `ROLE_USER` or `user` in any dialect). The seed's legacy
/// clients may leave out `messageId`. The error names the field.
/// True when a string anywhere in `v` (keys included) holds U+0000, which
/// PostgreSQL's text cannot store (ids and text alike end up in columns).
fn holds_nul(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains('\0'),
        Value::Array(a) => a.iter().any(holds_nul),
        Value::Object(o) => o.iter().any(|(k, v)| k.contains('\0') || holds_nul(v)),
        _ => false,
    }
}

pub(crate) fn incoming(params: &Value, d: Dialect) -> Result<Incoming, String> {
    let m = params
        .get("message")
        .filter(|m| m.is_object())
        .ok_or("params.message is required: {\"message\": {\"messageId\": \"…\", \"role\": \"ROLE_USER\", \"parts\": [{\"text\": \"…\"}]}}")?;
    if holds_nul(m) {
        return Err(
            "params.message contains the NUL character (U+0000), which cannot be stored".into(),
        );
    }
    let s = |k: &str, alt: &str| {
        m.get(k)
            .or_else(|| m.get(alt))
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let message_id = s("messageId", "message_id");
    if message_id.is_none() && d != Dialect::Legacy {
        return Err("message.messageId is required: a non-empty string the client chooses".into());
    }
    match m.get("role") {
        None | Some(Value::Null) => {
            return Err("message.role is required: ROLE_USER (1.0) or \"user\" (0.3)".into());
        }
        Some(Value::String(r))
            if matches!(r.as_str(), "ROLE_USER" | "ROLE_AGENT" | "user" | "agent") => {}
        Some(other) => {
            return Err(format!(
                "message.role {other} is not a role: use ROLE_USER or ROLE_AGENT (1.0), \"user\" or \"agent\" (0.3)"
            ));
        }
    }
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
        match read_part(p) {
            Ok(Some(PartIn::Text(t))) => texts.push(t),
            Ok(Some(PartIn::Data(v))) => data.push(v),
            // File parts are accepted and not read: the agent reads text.
            Ok(None) => {}
            Err(why) => return Err(format!("message.parts[{i}] {why}")),
        }
    }
    Ok(Incoming {
        dialect: None,
        message_id,
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
        receipt: m
            .get("metadata")
            .and_then(|md| md.get(RECEIPT_EXTENSION))
            .and_then(|x| x.get("receipt"))
            .and_then(Value::as_str)
            .filter(|r| r.len() <= 16 * 1024)
            .map(str::to_string),
    })
}

/// What a part brings that the agent reads.
enum PartIn {
    Text(String),
    Data(Value),
}

/// One part: 1.0 tells the kind by its member (`text`, `data`, `raw`,
/// `url`), 0.3 and the seed by `kind` / `type`. A part without content or
/// of a kind no version has is refused (the error completes "parts[i] …").
fn read_part(p: &Value) -> Result<Option<PartIn>, String> {
    let Some(o) = p.as_object() else {
        return Err("must be an object".into());
    };
    let tag = o.get("kind").or_else(|| o.get("type"));
    let tag = match tag {
        None => None,
        Some(Value::String(t)) => Some(t.as_str()),
        Some(other) => return Err(format!("has kind {other}, which is not a string")),
    };
    let has = |k: &str| o.get(k).is_some_and(|v| !v.is_null());
    match tag {
        Some("text") | None if has("text") => match o.get("text") {
            Some(Value::String(t)) => Ok(Some(PartIn::Text(t.clone()))),
            _ => Err("has `text` that is not a string".into()),
        },
        Some("data") | None if has("data") => Ok(Some(PartIn::Data(o["data"].clone()))),
        Some("file") => match o.get("file") {
            Some(f)
                if f.get("bytes").is_some_and(Value::is_string)
                    || f.get("uri").is_some_and(Value::is_string) =>
            {
                Ok(None)
            }
            _ => Err("is a file part without `file.bytes` or `file.uri`".into()),
        },
        None if has("raw") || has("url") => Ok(None),
        Some("text") => Err("is a text part without `text`".into()),
        Some("data") => Err("is a data part without `data`".into()),
        Some(other) => Err(format!(
            "has kind {other:?}, which is not a part kind: use text, data or file"
        )),
        None => Err("has no content: give it `text`, `data`, `raw` or `url`".into()),
    }
}

/// What a continuation of a waiting task decides: the words A2A.md lists,
/// or a `{"approved": bool}` data part; `None` for anything else.
#[cfg(test)]
fn decision(m: &Incoming) -> Option<(bool, Option<String>)> {
    decision_in_full(m).map(|d| (d.approved, d.reason))
}

/// A decision as a continuation carries it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ContinuationDecision {
    pub(crate) approved: bool,
    pub(crate) reason: Option<String>,
    /// Edited arguments (`{"approved": true, "arguments": {...}}`,
    /// POLICY.md §3).
    pub(crate) arguments: Option<Value>,
    /// The approval the caller decided (`approval_uuid`): a task that now
    /// waits on another one refuses the decision.
    pub(crate) approval_uuid: Option<String>,
    /// The deciding agent's receipt ([`RECEIPT_EXTENSION`]).
    pub(crate) receipt: Option<String>,
}

/// An answer to a tool's question carried as a data part
/// `{"question_answer": {"uuid", "action", "content"?}}` (QUESTIONS.md §4):
/// the question's uuid, the action and the content.
pub(crate) fn question_answer(m: &Incoming) -> Option<QuestionAnswer> {
    m.data.iter().find_map(|d| {
        let a = d.get("question_answer")?;
        let uuid = a.get("uuid")?.as_str()?.to_string();
        let action = a
            .get("action")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let content = a.get("content").and_then(Value::as_object).cloned();
        Some(QuestionAnswer {
            uuid,
            action,
            content,
        })
    })
}

/// What a `question_answer` data part says.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct QuestionAnswer {
    pub(crate) uuid: String,
    pub(crate) action: String,
    pub(crate) content: Option<Map<String, Value>>,
}

/// [`decision`] with everything a data part may add.
pub(crate) fn decision_in_full(m: &Incoming) -> Option<ContinuationDecision> {
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
                receipt: m.receipt.clone(),
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

/// The `google.rpc.ErrorInfo` reason of each A2A / JSON-RPC error code:
/// what the HTTP+JSON binding carries instead of the code (read back by our
/// client with [`code_of`]; the server half writes it).
pub(crate) const REASONS: [(i64, &str); 14] = [
    (-32001, "TASK_NOT_FOUND"),
    (-32002, "TASK_NOT_CANCELABLE"),
    (-32003, "PUSH_NOTIFICATION_NOT_SUPPORTED"),
    (-32004, "UNSUPPORTED_OPERATION"),
    (-32005, "CONTENT_TYPE_NOT_SUPPORTED"),
    (-32006, "INVALID_AGENT_RESPONSE"),
    (-32007, "EXTENDED_AGENT_CARD_NOT_CONFIGURED"),
    (-32008, "EXTENSION_SUPPORT_REQUIRED"),
    (-32009, "VERSION_NOT_SUPPORTED"),
    (-32700, "PARSE_ERROR"),
    (-32600, "INVALID_REQUEST"),
    (-32601, "METHOD_NOT_FOUND"),
    (-32602, "INVALID_PARAMS"),
    (-32603, "INTERNAL_ERROR"),
];

/// The A2A error code of an ErrorInfo `reason`, if it is one of the spec's.
pub(crate) fn code_of(reason: &str) -> Option<i64> {
    REASONS.iter().find(|(_, r)| *r == reason).map(|(c, _)| *c)
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
    fn incoming_messages_are_read_leniently_in_spelling() {
        let m = incoming(&json!({"message": {"message_id": "a", "role": "ROLE_USER",
            "parts": [{"kind": "text", "text": "hi"}, {"type": "text", "text": "there"}, {"data": {"approved": true}}],
            "taskId": "t"}}), Dialect::V03).unwrap();
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
            &json!({"taskId": "t9", "message": {"role": "user", "parts": [{"type": "text", "text": "No."}]}}),
            Dialect::Legacy,
        )
        .unwrap();
        assert_eq!(
            (legacy.task_id.as_deref(), decision(&legacy)),
            (Some("t9"), Some((false, None)))
        );
        let maybe = incoming(
            &json!({"message": {"messageId": "m", "role": "user", "parts": [{"text": "maybe later"}]}}),
            Dialect::V1,
        )
        .unwrap();
        assert_eq!(decision(&maybe), None);
        let file = incoming(
            &json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "see"}, {"url": "https://x/y", "mediaType": "text/plain"}, {"kind": "file", "file": {"uri": "https://x"}}]}}),
            Dialect::V1,
        );
        assert_eq!(file.map(|m| m.text), Ok("see".to_string()));
    }

    #[test]
    fn malformed_messages_name_the_field() {
        let err = |m: Value| incoming(&json!({ "message": m }), Dialect::V1).unwrap_err();
        let ok = json!({"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]});
        let with = |k: &str, v: Value| {
            let mut m = ok.clone();
            m[k] = v;
            m
        };
        let without = |k: &str| {
            let mut m = ok.clone();
            m.as_object_mut().unwrap().remove(k);
            m
        };
        assert!(err(without("messageId")).contains("message.messageId"));
        assert!(err(with("messageId", json!(""))).contains("message.messageId"));
        assert!(err(without("role")).contains("message.role"));
        assert!(err(with("role", json!("ROLE_BOSS"))).contains("message.role"));
        assert!(err(with("parts", json!([]))).contains("message.parts"));
        assert!(err(with("parts", json!("x"))).contains("message.parts"));
        assert!(
            err(with("parts", json!([{"text": "a"}, {}])))
                .contains("message.parts[1] has no content")
        );
        assert!(
            err(with("parts", json!([{"kind": "video", "v": 1}])))
                .contains("message.parts[0] has kind \"video\"")
        );
        assert!(
            err(with("parts", json!([{"kind": "text"}])))
                .contains("message.parts[0] is a text part")
        );
        assert!(
            err(with("parts", json!([{"kind": "file", "file": {}}])))
                .contains("message.parts[0] is a file part")
        );
        assert!(err(with("parts", json!([{"text": 5}]))).contains("message.parts[0]"));
        // U+0000 anywhere (text, ids, metadata keys) cannot be stored.
        for m in [
            with("parts", json!([{"text": "a\u{0}b"}])),
            with("contextId", json!("c\u{0}")),
            with("metadata", json!({"k\u{0}": 1})),
        ] {
            assert!(err(m).contains("NUL character (U+0000)"));
        }
        assert!(incoming(&json!({"": "x"}), Dialect::V1).is_err());
        assert!(err(with("parts", json!("x"))).contains("message.parts"));
        // A well-formed message that is not a decision is none.
        let maybe = incoming(
            &json!({"message": with("parts", json!([{"text": "maybe later"}]))}),
            Dialect::V1,
        )
        .unwrap();
        assert_eq!(decision(&maybe), None);
        // Legacy clients may leave out messageId, not the role.
        let legacy =
            json!({"message": {"role": "user", "parts": [{"type": "text", "text": "hi"}]}});
        assert!(incoming(&legacy, Dialect::Legacy).is_ok());
        assert!(
            incoming(&legacy, Dialect::V03)
                .unwrap_err()
                .contains("messageId")
        );
    }
}
