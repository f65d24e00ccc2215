//! A fake LLM provider for tests and benchmarks: one HTTP server speaking
//! all three wire formats.
//!
//! - Gemini: `POST /v1beta/models/{model}:generateContent`
//! - Anthropic: `POST /v1/messages`
//! - OpenAI-compatible: `POST /v1/chat/completions` (point `*_BASE_URL` at
//!   `{base}/v1`)
//!
//! It checks each request the way the real API does ([`wire`]), answers
//! from scripted rules (the same engine as `scripted:` models, so a test's
//! script reads like a user's), records every request for assertions, and
//! can inject faults (an HTTP status for the next N requests, a delay).
//! It lives in the test-support crate, never in the shipped agent, and the
//! integration tests and `make bench` all use this one implementation.

pub mod wire;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Serialize;
use serde_json::{Value, json};
use server::llm::scripted::Rules;
use server::llm::{ChatResponse, Usage};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Which wire format a request used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Gemini,
    Anthropic,
    OpenAi,
}

/// One request as received.
#[derive(Clone, Debug, Serialize)]
pub struct Recorded {
    pub format: Format,
    pub path: String,
    /// Header names and values, lower-case names.
    pub headers: Vec<(String, String)>,
    pub body: Value,
    /// The status the fake answered.
    pub status: u16,
    /// The body of a 200 answer (absent for faults and errors), so tests can
    /// check the fake's replies against the providers' specs too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply: Option<Value>,
    /// When the request arrived and when it was answered, in milliseconds
    /// since the fake started (tests check that calls overlapped).
    pub received_ms: u64,
    pub answered_ms: u64,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A fault to inject into the next requests.
#[derive(Clone, Debug)]
pub struct Fault {
    pub status: u16,
    /// Sent as `Retry-After` (seconds) when set.
    pub retry_after: Option<u64>,
    /// Sleep this long before answering (a timeout test sets it past the client's timeout).
    pub delay: Duration,
}

/// Shared state of a running fake.
pub struct FakeState {
    rules: Mutex<Rules>,
    requests: Mutex<Vec<Recorded>>,
    faults: Mutex<VecDeque<Fault>>,
    /// Added to every answer (benchmarks model a slow provider with it).
    latency: Mutex<Duration>,
    seq: AtomicU64,
    /// Keys the fake accepts; empty accepts any non-empty key.
    keys: Vec<String>,
    started: std::time::Instant,
}

impl FakeState {
    pub fn new(rules: Rules) -> Arc<FakeState> {
        Arc::new(FakeState {
            rules: Mutex::new(rules),
            requests: Mutex::new(Vec::new()),
            faults: Mutex::new(VecDeque::new()),
            latency: Mutex::new(Duration::ZERO),
            seq: AtomicU64::new(0),
            keys: Vec::new(),
            started: std::time::Instant::now(),
        })
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Queues a fault for the next request.
    pub fn push_fault(&self, f: Fault) {
        self.faults
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(f);
    }

    pub fn set_latency(&self, d: Duration) {
        *self.latency.lock().unwrap_or_else(|p| p.into_inner()) = d;
    }

    pub fn set_rules(&self, rules: Rules) {
        *self.rules.lock().unwrap_or_else(|p| p.into_inner()) = rules;
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn record(&self, mut r: Recorded) {
        r.answered_ms = self.elapsed_ms();
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(r);
    }
}

/// The router; serve it on any listener.
pub fn router(state: Arc<FakeState>) -> Router {
    Router::new()
        .route("/v1beta/models/{model_action}", post(gemini))
        .route("/v1/messages", post(anthropic))
        .route("/v1/chat/completions", post(openai))
        .route("/chat/completions", post(openai))
        .route("/_fake/requests", get(list_requests))
        .with_state(state)
}

/// Starts a fake on `127.0.0.1:0`; returns its base URL.
pub async fn spawn(state: Arc<FakeState>) -> std::io::Result<String> {
    let listener = mcp_serve::listen("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        use axum::serve::ListenerExt;
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let _ = axum::serve(listener, router(state)).await;
    });
    Ok(format!("http://{addr}"))
}

async fn list_requests(State(s): State<Arc<FakeState>>) -> impl IntoResponse {
    axum::Json(s.requests())
}

fn header_list(h: &HeaderMap) -> Vec<(String, String)> {
    h.iter()
        .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
        .collect()
}

fn error_body(format: Format, status: u16, message: &str) -> Value {
    match format {
        Format::OpenAi => {
            json!({"error": {"message": message, "type": "invalid_request_error", "code": status}})
        }
        Format::Anthropic => {
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}})
        }
        Format::Gemini => {
            json!({"error": {"code": status, "message": message, "status": "INVALID_ARGUMENT"}})
        }
    }
}

/// Shared handling: auth check, fault injection, validation, rules, answer.
async fn handle(
    s: Arc<FakeState>,
    format: Format,
    path: String,
    headers: HeaderMap,
    body: String,
    auth_ok: bool,
    auth_error: &str,
) -> Response {
    let parsed_body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let fault = s
        .faults
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .pop_front();
    let latency = *s.latency.lock().unwrap_or_else(|p| p.into_inner());
    let mut rec = Recorded {
        format,
        path,
        headers: header_list(&headers),
        body: parsed_body.clone(),
        status: 200,
        reply: None,
        received_ms: s.elapsed_ms(),
        answered_ms: 0,
    };
    if let Some(f) = fault {
        tokio::time::sleep(f.delay).await;
        rec.status = f.status;
        s.record(rec);
        if f.status == 200 {
            // A pure delay: fall through is not possible after recording, so answer plainly.
            return (StatusCode::OK, axum::Json(json!({}))).into_response();
        }
        let mut resp = (
            StatusCode::from_u16(f.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            axum::Json(error_body(format, f.status, "injected fault")),
        )
            .into_response();
        if let Some(ra) = f.retry_after
            && let Ok(v) = ra.to_string().parse()
        {
            resp.headers_mut().insert("retry-after", v);
        }
        return resp;
    }
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    if !auth_ok {
        rec.status = 401;
        s.record(rec);
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(error_body(format, 401, auth_error)),
        )
            .into_response();
    }
    let parsed = match format {
        Format::OpenAi => wire::read_openai(&parsed_body),
        Format::Anthropic => wire::read_anthropic(&parsed_body),
        Format::Gemini => wire::read_gemini(&parsed_body),
    };
    let parsed = match parsed {
        Ok(p) => p,
        Err(message) => {
            rec.status = 400;
            s.record(rec);
            return (
                StatusCode::BAD_REQUEST,
                axum::Json(error_body(format, 400, &message)),
            )
                .into_response();
        }
    };
    let seq = s.seq.fetch_add(1, Ordering::Relaxed);
    let mut response: ChatResponse = s
        .rules
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .respond(&wire::system_prompt(&parsed_body), &parsed.messages);
    response.usage = Some(Usage::estimate(body.len(), response.chars()));
    let out = match format {
        Format::OpenAi => wire::write_openai(&response, seq),
        Format::Anthropic => wire::write_anthropic(&response, seq),
        Format::Gemini => wire::write_gemini(&response, seq),
    };
    rec.reply = Some(out.clone());
    s.record(rec);
    (StatusCode::OK, axum::Json(out)).into_response()
}

fn key_ok(s: &FakeState, key: Option<&str>) -> bool {
    match key {
        Some(k) if !k.is_empty() => s.keys.is_empty() || s.keys.iter().any(|x| x == k),
        _ => false,
    }
}

async fn openai(State(s): State<Arc<FakeState>>, headers: HeaderMap, body: String) -> Response {
    let key = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    // Ollama sends no key; the fake accepts a missing header but not a malformed one.
    let ok = headers.get("authorization").is_none() || key_ok(&s, key);
    handle(
        s,
        Format::OpenAi,
        "/v1/chat/completions".into(),
        headers,
        body,
        ok,
        "Incorrect API key provided",
    )
    .await
}

async fn anthropic(State(s): State<Arc<FakeState>>, headers: HeaderMap, body: String) -> Response {
    let key = headers.get("x-api-key").and_then(|v| v.to_str().ok());
    let version_ok = headers.get("anthropic-version").is_some();
    let ok = key_ok(&s, key) && version_ok;
    let why = if version_ok {
        "invalid x-api-key"
    } else {
        "anthropic-version: header is required"
    };
    handle(
        s,
        Format::Anthropic,
        "/v1/messages".into(),
        headers,
        body,
        ok,
        why,
    )
    .await
}

async fn gemini(
    State(s): State<Arc<FakeState>>,
    Path(model_action): Path<String>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: String,
) -> Response {
    if !model_action.ends_with(":generateContent") {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(error_body(Format::Gemini, 404, "unknown method")),
        )
            .into_response();
    }
    let in_url = uri.query().is_some_and(|q| q.contains("key="));
    let key = headers.get("x-goog-api-key").and_then(|v| v.to_str().ok());
    let ok = key_ok(&s, key) && !in_url;
    let why = if in_url {
        "API keys in the URL are not accepted by this fake"
    } else {
        "API key not valid. Please pass a valid API key."
    };
    handle(
        s,
        Format::Gemini,
        format!("/v1beta/models/{model_action}"),
        headers,
        body,
        ok,
        why,
    )
    .await
}
