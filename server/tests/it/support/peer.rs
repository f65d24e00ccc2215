//! A scriptable A2A peer for the client's discovery tests: it serves agent
//! cards only where a test puts them (`{BASE}` in a card is replaced by the
//! peer's own address), answers JSON-RPC on any other path in the dialect
//! each request uses (1.0 `SendMessage`, 0.3 `message/send` with
//! `A2A-Version: 0.3`, the seed's legacy `message/send` with `type` parts
//! and `params.taskId`), and records every request.
//!
//! A message containing "delete" asks for approval (`input-required`, task
//! `peer-task-1`); a continuation of that task with "approve" completes it
//! ("peer deleted it"), anything else ends it ("peer kept it"). Any other
//! message completes at once with "peer got: TEXT via DIALECT at PATH".

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// One request as the peer received it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    /// `A2A-Version`, when sent.
    pub version: Option<String>,
    pub body: Value,
}

/// A running peer.
pub struct Peer {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Peer {
    /// Starts a peer serving `cards` (path → card).
    pub async fn start(cards: &[(&str, Value)]) -> Peer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let cards: Arc<Vec<(String, Value)>> = Arc::new(
            cards
                .iter()
                .map(|(p, c)| {
                    let text = c.to_string().replace("{BASE}", &base);
                    (p.to_string(), serde_json::from_str(&text).unwrap())
                })
                .collect(),
        );
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let log = seen.clone();
        let app = Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let cards = cards.clone();
                let log = log.clone();
                async move {
                    let body_json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let version = headers
                        .get("a2a-version")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_string);
                    log.lock().unwrap().push(Seen {
                        method: method.to_string(),
                        path: uri.path().to_string(),
                        version: version.clone(),
                        body: body_json.clone(),
                    });
                    answer(&method, uri.path(), version.as_deref(), &body_json, &cards)
                }
            },
        );
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Peer { base, seen, task }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The requests received so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// The JSON-RPC requests received so far (POSTs).
    pub fn posts(&self) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.method == "POST")
            .collect()
    }
}

fn answer(
    method: &Method,
    path: &str,
    version: Option<&str>,
    body: &Value,
    cards: &[(String, Value)],
) -> Response {
    if method == Method::GET {
        return match cards.iter().find(|(p, _)| p == path) {
            Some((_, card)) => axum::Json(card.clone()).into_response(),
            None => StatusCode::NOT_FOUND.into_response(),
        };
    }
    let rpc = body["method"].as_str().unwrap_or_default();
    let dialect = match (rpc, version) {
        ("SendMessage", _) => "1.0",
        ("message/send", Some("0.3")) => "0.3",
        ("message/send", None) => "legacy",
        _ => {
            return axum::Json(json!({"jsonrpc": "2.0", "id": body["id"],
                "error": {"code": -32601, "message": format!("{rpc} with A2A-Version {version:?}")}}))
            .into_response();
        }
    };
    let message = &body["params"]["message"];
    let text = message["parts"][0]["text"].as_str().unwrap_or_default();
    let task_id = message["taskId"]
        .as_str()
        .or(body["params"]["taskId"].as_str());
    let (state, reply, data) = match task_id {
        Some(_) if text == "approve" => ("completed", "peer deleted it".to_string(), None),
        Some(_) => ("completed", "peer kept it".to_string(), None),
        None if text.contains("delete") => (
            "input-required",
            "Approve deleting the thing?".to_string(),
            Some(
                json!({"approval_uuid": "peer-approval-1", "tool": "delete_thing",
                "arguments": {"id": "thing"}, "description": "Delete the thing", "chain": ["peer"]}),
            ),
        ),
        None => (
            "completed",
            format!("peer got: {text} via {dialect} at {path}"),
            None,
        ),
    };
    let result = match dialect {
        "1.0" => {
            let mut parts = vec![json!({"text": reply})];
            parts.extend(data.map(|d| json!({"data": d})));
            let state = format!("TASK_STATE_{}", state.to_uppercase().replace('-', "_"));
            json!({"task": {"id": "peer-task-1", "contextId": "c1",
                "status": {"state": state, "message": {"messageId": "p1", "role": "ROLE_AGENT", "parts": parts}}}})
        }
        "0.3" => {
            let mut parts = vec![json!({"kind": "text", "text": reply})];
            parts.extend(data.map(|d| json!({"kind": "data", "data": d})));
            json!({"kind": "task", "id": "peer-task-1", "contextId": "c1",
                "status": {"state": state, "message": {"kind": "message", "messageId": "p1", "role": "agent", "parts": parts}}})
        }
        _ => json!({"id": "peer-task-1",
            "status": {"state": state, "message": {"role": "agent", "parts": [{"type": "text", "text": reply}]}}}),
    };
    axum::Json(json!({"jsonrpc": "2.0", "id": body["id"], "result": result})).into_response()
}
