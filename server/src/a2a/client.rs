//! A minimal A2A client: one blocking `SendMessage` and its answer.
//!
//! It reads the remote agent card (`/.well-known/agent-card.json`, then the
//! seed's `/.well-known/agent.json`), prefers a 1.0 JSON-RPC interface,
//! falls back to 0.3 framing (the card's top-level `url`) and to the seed's
//! legacy form for a card without `protocolVersion`, and answers in the
//! dialect it chose. It forwards the caller's `Authorization: Bearer` and
//! `X-Session-ID`, never logs the token, and bounds every request (card
//! 10 s, message 60 s). A remote task that needs input (an approval over
//! there) is reported as an error for now: proxy approvals come with the
//! full A2A client.

use super::RemoteAgents;
use crate::llm::BoxFuture;
use crate::tools::CallContext;
use serde_json::{Value, json};
use std::time::Duration;

/// How long a card may take.
const CARD_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a message may take (DESIGN.md: A2A 60 s).
const SEND_TIMEOUT: Duration = Duration::from_secs(60);

/// Why a remote agent gave no answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum A2aError {
    #[error("cannot reach {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("{0}")]
    BadCard(String),
    #[error("the agent answered with error {code}: {message}")]
    Remote { code: i64, message: String },
    #[error("the task ended as {state}: {text}")]
    Failed { state: String, text: String },
    #[error(
        "the agent needs input before it can go on ({0}); approvals asked by a sub-agent are not proxied yet"
    )]
    NeedsInput(String),
    #[error("unexpected answer: {0}")]
    Protocol(String),
}

/// The protocol dialect a card offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dialect {
    V1,
    V03,
    Legacy,
}

/// An A2A client over reqwest.
pub struct A2aClient {
    http: reqwest::Client,
}

impl Default for A2aClient {
    fn default() -> Self {
        A2aClient {
            http: reqwest::Client::new(),
        }
    }
}

impl A2aClient {
    /// Reads the card at `base` and picks the endpoint and dialect.
    async fn discover(&self, base: &str) -> Result<(String, Dialect), A2aError> {
        let base = base.trim_end_matches('/');
        let mut last = String::new();
        for path in ["/.well-known/agent-card.json", "/.well-known/agent.json"] {
            let url = format!("{base}{path}");
            let resp = self
                .http
                .get(&url)
                .timeout(CARD_TIMEOUT)
                .send()
                .await
                .map_err(|e| A2aError::Unreachable {
                    url: url.clone(),
                    reason: short(&e),
                })?;
            if !resp.status().is_success() {
                last = format!("{url} answered {}", resp.status());
                continue;
            }
            let card: Value = resp
                .json()
                .await
                .map_err(|e| A2aError::BadCard(format!("{url}: not a JSON agent card: {e}")))?;
            return pick(&card, base);
        }
        Err(A2aError::BadCard(format!("no agent card: {last}")))
    }

    async fn send_message(
        &self,
        base: &str,
        text: &str,
        ctx: &CallContext,
    ) -> Result<String, A2aError> {
        let (endpoint, dialect) = self.discover(base).await?;
        let message_id = uuid::Uuid::new_v4().to_string();
        let (method, params, version) = match dialect {
            Dialect::V1 => (
                "SendMessage",
                json!({"message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]}}),
                Some("1.0"),
            ),
            Dialect::V03 => (
                "message/send",
                json!({"message": {"kind": "message", "messageId": message_id, "role": "user",
                                   "parts": [{"kind": "text", "text": text}]},
                       "configuration": {"blocking": true}}),
                Some("0.3"),
            ),
            Dialect::Legacy => (
                "message/send",
                json!({"message": {"messageId": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}}),
                None,
            ),
        };
        let body = json!({"jsonrpc": "2.0", "id": uuid::Uuid::new_v4().to_string(), "method": method, "params": params});
        let mut req = self
            .http
            .post(&endpoint)
            .timeout(SEND_TIMEOUT)
            .header("X-Session-ID", &ctx.session_id)
            .json(&body);
        if let Some(v) = version {
            req = req.header("A2A-Version", v);
        }
        if let Some(token) = &ctx.bearer {
            req = req.bearer_auth(token);
        }
        let resp = req.send().await.map_err(|e| A2aError::Unreachable {
            url: endpoint.clone(),
            reason: short(&e),
        })?;
        let status = resp.status();
        let answer: Value = resp.json().await.map_err(|e| {
            A2aError::Protocol(format!("{endpoint} answered {status} without JSON: {e}"))
        })?;
        read_answer(&answer)
    }
}

impl RemoteAgents for A2aClient {
    fn send<'a>(
        &'a self,
        url: &'a str,
        message: &'a str,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<String, A2aError>> {
        Box::pin(self.send_message(url, message, ctx))
    }
}

/// A short reason for a failed request (the URL is said once, by the caller).
fn short(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        "connection refused or unreachable".into()
    } else {
        let mut s = e.to_string();
        if let Some(url) = e.url() {
            s = s
                .replace(&format!(" ({url})"), "")
                .replace(url.as_str(), "the agent");
        }
        s
    }
}

/// The endpoint and dialect a card offers.
fn pick(card: &Value, base: &str) -> Result<(String, Dialect), A2aError> {
    if let Some(list) = card.get("supportedInterfaces").and_then(Value::as_array) {
        for i in list {
            let binding = i.get("protocolBinding").and_then(Value::as_str);
            let version = i.get("protocolVersion").and_then(Value::as_str);
            if binding.is_none_or(|b| b.eq_ignore_ascii_case("JSONRPC"))
                && version.is_some_and(|v| v.starts_with("1."))
                && let Some(url) = i.get("url").and_then(Value::as_str)
            {
                return Ok((url.to_string(), Dialect::V1));
            }
        }
    }
    let url = card
        .get("url")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| format!("{base}/a2a"));
    if card.get("protocolVersion").is_some() {
        Ok((url, Dialect::V03))
    } else {
        Ok((url, Dialect::Legacy))
    }
}

/// The text of a JSON-RPC answer, or why there is none.
fn read_answer(answer: &Value) -> Result<String, A2aError> {
    if let Some(err) = answer.get("error") {
        return Err(A2aError::Remote {
            code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: err
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("(no message)")
                .to_string(),
        });
    }
    let result = answer
        .get("result")
        .ok_or_else(|| A2aError::Protocol("neither `result` nor `error`".into()))?;
    // 1.0 wraps: {"task": …} or {"message": …}; 0.3 answers the object itself.
    if let Some(m) = result.get("message") {
        return Ok(parts_text(m));
    }
    let task = result.get("task").unwrap_or(result);
    if task.get("kind").and_then(Value::as_str) == Some("message") || task.get("status").is_none() {
        return Ok(parts_text(task));
    }
    let status = &task["status"];
    let state = status
        .get("state")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .trim_start_matches("TASK_STATE_")
        .to_ascii_lowercase()
        .replace('_', "-");
    let status_text = status.get("message").map(parts_text).unwrap_or_default();
    match state.as_str() {
        "completed" => {
            let artifacts: Vec<String> = task
                .get("artifacts")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(parts_text).filter(|t| !t.is_empty()).collect())
                .unwrap_or_default();
            Ok(if artifacts.is_empty() {
                status_text
            } else {
                artifacts.join("\n")
            })
        }
        "input-required" | "auth-required" => Err(A2aError::NeedsInput(status_text)),
        _ => Err(A2aError::Failed {
            state,
            text: status_text,
        }),
    }
}

/// The text of an object's `parts` (text parts as they are, data parts as JSON).
fn parts_text(v: &Value) -> String {
    v.get("parts")
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| {
                    p.get("text")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .or_else(|| p.get("data").map(Value::to_string))
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cards_pick_1_0_then_0_3_then_legacy() {
        let dual = json!({"url": "http://b/a2a", "protocolVersion": "0.3.0",
            "supportedInterfaces": [{"url": "http://b/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]});
        assert_eq!(
            pick(&dual, "http://b").unwrap(),
            ("http://b/a2a".into(), Dialect::V1)
        );
        let v03 = json!({"url": "http://c/rpc", "protocolVersion": "0.3.0"});
        assert_eq!(
            pick(&v03, "http://c").unwrap(),
            ("http://c/rpc".into(), Dialect::V03)
        );
        assert_eq!(
            pick(&json!({"name": "x"}), "http://d").unwrap().1,
            Dialect::Legacy
        );
    }

    #[test]
    fn answers_in_every_dialect_read_as_text() {
        let v1 = json!({"result": {"task": {"status": {"state": "TASK_STATE_COMPLETED"},
            "artifacts": [{"parts": [{"text": "done"}]}]}}});
        assert_eq!(read_answer(&v1).unwrap(), "done");
        let v03 = json!({"result": {"kind": "task", "status": {"state": "completed",
            "message": {"parts": [{"kind": "text", "text": "ok"}]}}}});
        assert_eq!(read_answer(&v03).unwrap(), "ok");
        let msg = json!({"result": {"kind": "message", "parts": [{"kind": "text", "text": "hi"}]}});
        assert_eq!(read_answer(&msg).unwrap(), "hi");
        let waiting = json!({"result": {"task": {"status": {"state": "TASK_STATE_INPUT_REQUIRED",
            "message": {"parts": [{"text": "approve?"}]}}}}});
        assert!(matches!(read_answer(&waiting), Err(A2aError::NeedsInput(t)) if t == "approve?"));
        let err = json!({"error": {"code": -32001, "message": "Task not found"}});
        assert!(matches!(
            read_answer(&err),
            Err(A2aError::Remote { code: -32001, .. })
        ));
        let failed = json!({"result": {"kind": "task", "status": {"state": "failed"}}});
        assert!(matches!(read_answer(&failed), Err(A2aError::Failed { .. })));
    }
}
