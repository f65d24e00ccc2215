//! An OTLP/HTTP trace receiver for tests: accepts `POST /v1/traces` in
//! the JSON protocol and keeps every span with its service name.

use axum::Router;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::routing::post;
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// One received span, flattened.
#[derive(Clone, Debug)]
pub struct Span {
    pub service: String,
    pub name: String,
    pub trace_id: String,
    pub span_id: String,
    pub parent: String,
    pub start_ns: u128,
    pub end_ns: u128,
    pub attributes: Vec<(String, Value)>,
}

impl Span {
    /// An attribute's value as text (string, int or bool).
    pub fn attr(&self, key: &str) -> Option<String> {
        self.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| {
                v.get("stringValue")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| {
                        v.get("intValue")
                            .or(v.get("boolValue"))
                            .map(|x| x.to_string().trim_matches('"').to_string())
                            .unwrap_or_default()
                    })
            })
    }
}

/// A running receiver.
pub struct Receiver {
    /// `http://127.0.0.1:PORT` (the value of `OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub base: String,
    spans: Arc<Mutex<Vec<Span>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Receiver {
    pub async fn start() -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let spans: Arc<Mutex<Vec<Span>>> = Arc::default();
        let keep = spans.clone();
        let app = Router::new().route(
            "/v1/traces",
            post(move |body: Bytes| {
                let keep = keep.clone();
                async move {
                    let Ok(v) = serde_json::from_slice::<Value>(&body) else {
                        return StatusCode::BAD_REQUEST;
                    };
                    keep.lock().unwrap().extend(flatten(&v));
                    StatusCode::OK
                }
            }),
        );
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver { base, spans, task }
    }

    pub fn spans(&self) -> Vec<Span> {
        self.spans.lock().unwrap().clone()
    }

    /// Waits (up to 15 s) until `done` holds for the spans received.
    pub async fn wait_for(&self, done: impl Fn(&[Span]) -> bool) -> Vec<Span> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        loop {
            let spans = self.spans();
            if done(&spans) || std::time::Instant::now() > deadline {
                return spans;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

fn nanos(v: &Value) -> u128 {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .or_else(|| v.as_u64().map(u128::from))
        .unwrap_or(0)
}

fn flatten(v: &Value) -> Vec<Span> {
    let mut out = Vec::new();
    for rs in v["resourceSpans"].as_array().into_iter().flatten() {
        let service = rs["resource"]["attributes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|a| a["key"] == "service.name")
            .map(|a| text(&a["value"]["stringValue"]))
            .unwrap_or_default();
        for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
            for s in ss["spans"].as_array().into_iter().flatten() {
                out.push(Span {
                    service: service.clone(),
                    name: text(&s["name"]),
                    trace_id: text(&s["traceId"]),
                    span_id: text(&s["spanId"]),
                    parent: text(&s["parentSpanId"]),
                    start_ns: nanos(&s["startTimeUnixNano"]),
                    end_ns: nanos(&s["endTimeUnixNano"]),
                    attributes: s["attributes"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|a| (text(&a["key"]), a["value"].clone()))
                        .collect(),
                });
            }
        }
    }
    out
}
