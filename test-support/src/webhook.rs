//! A webhook receiver for the notification tests and benchmark: a real
//! HTTP server on 127.0.0.1 that verifies `X-StopGo-Signature` with the
//! shared secret (as POLICY.md §5 tells receivers to), records every
//! request, and answers each one as its script says: a status, a stall
//! longer than the agent's timeout, or 200 once the script is used up.
//! TCP_NODELAY and a real backlog, so it is never the benchmark's
//! bottleneck.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How to answer one request.
#[derive(Clone, Debug)]
pub enum Answer {
    /// This status (with `Retry-After` seconds when given).
    Status(u16, Option<u64>),
    /// Wait this long, then 200 (the agent gives up first).
    Stall(Duration),
}

/// One received request.
#[derive(Clone, Debug)]
pub struct Received {
    pub event: String,
    pub delivery: String,
    /// Whether the signature verified with the secret (and was present).
    pub signed: bool,
    pub body: Value,
    /// The status answered (0 for a stall).
    pub status: u16,
    /// `Authorization` and `X-A2A-Notification-Token` (A2A pushes).
    pub authorization: String,
    pub token: String,
    pub at: std::time::Instant,
}

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<Answer>>,
    received: Mutex<Vec<Received>>,
    secret: Vec<u8>,
}

/// A running receiver; stops when dropped.
pub struct Receiver {
    /// `http://127.0.0.1:PORT/hook`.
    pub url: String,
    pub port: u16,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Checks `t=<unix>,v1=<hex>` against HMAC-SHA-256(secret, "<t>.<body>").
pub fn verify(secret: &[u8], header: &str, body: &[u8]) -> bool {
    let mut t = None;
    let mut v1 = None;
    for part in header.split(',') {
        match part.split_once('=') {
            Some(("t", x)) => t = Some(x),
            Some(("v1", x)) => v1 = Some(x),
            _ => {}
        }
    }
    let (Some(t), Some(v1)) = (t, v1) else {
        return false;
    };
    let Ok(mut mac) = <Hmac<Sha256> as Mac>::new_from_slice(secret) else {
        return false;
    };
    mac.update(format!("{t}.").as_bytes());
    mac.update(body);
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    hex == v1
}

async fn hook(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let header = |k: &str| {
        headers
            .get(k)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let signed = verify(&s.secret, &header("x-stopgo-signature"), &body);
    let answer = s.script.lock().unwrap().pop_front();
    let mut r = Received {
        event: header("x-stopgo-event"),
        delivery: header("x-stopgo-delivery"),
        signed,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        status: 200,
        authorization: header("authorization"),
        token: header("x-a2a-notification-token"),
        at: std::time::Instant::now(),
    };
    match answer {
        Some(Answer::Stall(d)) => {
            r.status = 0;
            s.received.lock().unwrap().push(r);
            tokio::time::sleep(d).await;
            StatusCode::OK.into_response()
        }
        Some(Answer::Status(code, retry_after)) => {
            r.status = code;
            s.received.lock().unwrap().push(r);
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            match retry_after {
                Some(secs) => (status, [("retry-after", secs.to_string())]).into_response(),
                None => status.into_response(),
            }
        }
        None => {
            s.received.lock().unwrap().push(r);
            StatusCode::OK.into_response()
        }
    }
}

impl Receiver {
    /// A receiver on a free port checking signatures with `secret`.
    pub async fn start(secret: &str) -> Receiver {
        Self::on_port(secret, 0, Vec::new()).await
    }

    /// A receiver on `port` (0: free) that first answers as `script`
    /// says; `received` carries over what an earlier receiver recorded.
    pub async fn on_port(secret: &str, port: u16, received: Vec<Received>) -> Receiver {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_reuseaddr(true).unwrap();
        socket
            .bind(std::net::SocketAddr::from(([127, 0, 0, 1], port)))
            .unwrap();
        let listener = socket.listen(1024).unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared {
            secret: secret.as_bytes().to_vec(),
            received: Mutex::new(received),
            ..Shared::default()
        });
        let app = Router::new()
            .route("/hook", post(hook))
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            use axum::serve::ListenerExt;
            let listener = listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            let _ = axum::serve(listener, app).await;
        });
        Receiver {
            url: format!("http://127.0.0.1:{port}/hook"),
            port,
            shared,
            task,
        }
    }

    /// Answers the next requests as `answers` say.
    pub fn script(&self, answers: impl IntoIterator<Item = Answer>) {
        self.shared.script.lock().unwrap().extend(answers);
    }

    /// Answers 200 from now on.
    pub fn clear_script(&self) {
        self.shared.script.lock().unwrap().clear();
    }

    /// Everything received so far.
    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }

    /// Requests answered 200.
    pub fn delivered(&self) -> Vec<Received> {
        self.received()
            .into_iter()
            .filter(|r| r.status == 200)
            .collect()
    }

    /// Waits (up to `timeout`) until `pred` holds for what was received.
    pub async fn wait_until(
        &self,
        timeout: Duration,
        what: &str,
        pred: impl Fn(&[Received]) -> bool,
    ) -> Vec<Received> {
        let end = std::time::Instant::now() + timeout;
        loop {
            let got = self.received();
            if pred(&got) {
                return got;
            }
            if std::time::Instant::now() > end {
                panic!(
                    "webhook receiver: {what} did not happen within {timeout:?}; received: {:#?}",
                    got.iter()
                        .map(|r| {
                            let body: String = r.body.to_string().chars().take(400).collect();
                            (&r.event, &r.delivery, r.status, body)
                        })
                        .collect::<Vec<_>>()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Stops listening (the port is free again); what it received is kept.
    pub fn stop(self) -> (u16, Vec<Received>) {
        let out = (self.port, self.received());
        drop(self);
        out
    }
}
