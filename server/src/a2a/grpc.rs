//! Our A2A client's gRPC binding: a sub-agent whose card offers A2A 1.0
//! only over gRPC (or offers nothing we prefer) is called with tonic's
//! generated client over HTTP/2 (`h2c` for a bare `host:port` or an
//! `http://` address, TLS with the system's roots for `https://`).
//!
//! The requests are the JSON binding's (`client::build`) parsed into the
//! proto messages (pbjson's ProtoJSON is A2A 1.0's JSON), and the answers
//! go back to JSON in JSON-RPC's shape (`{"result": …}` or `{"error":
//! {code, message}}`, the A2A code from the status's `ErrorInfo` reason),
//! so one reader serves every binding and proxy approvals and questions
//! travel over gRPC exactly as over JSON-RPC. The metadata carries what the
//! HTTP bindings send as headers: the bearer or the entry's own headers,
//! `x-session-id`, `x-a2a-hop-count`, `a2a-version` and trace context.
//! Channels are kept per address (HTTP/2 multiplexes the calls).

use super::client::A2aError;
use super::proto;
use super::proto::a2a_service_client::A2aServiceClient;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};
use tonic::{Code, Status};

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// One call, with its request in A2A 1.0's JSON.
pub(crate) enum Call {
    /// `SendMessage` with these params (`{"message": …}`).
    Send(Value),
    Get(String),
    Cancel(String),
}

/// Why a call has no answer.
pub(crate) enum Failure {
    /// Nothing was sent: the address cannot be connected to.
    Connect(String),
    Other(A2aError),
}

/// gRPC channels by address.
#[derive(Default)]
pub(crate) struct GrpcClient {
    channels: Mutex<HashMap<String, Channel>>,
}

/// The gRPC address (`host:port`, the form cards carry) of a URL: its
/// host and port, the scheme's port when it names none. Our card's
/// interface and the client's fallback both come from here.
pub(crate) fn address_of(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => {
            let host = match u.host() {
                Some(url::Host::Ipv6(a)) => format!("[{a}]"),
                Some(h) => h.to_string(),
                None => "localhost".into(),
            };
            format!("{host}:{}", u.port_or_known_default().unwrap_or(80))
        }
        Err(_) => url.to_string(),
    }
}

/// The URI tonic dials for a card's gRPC address: `host:port` (what the
/// A2A SDKs put in cards), `dns:///host:port`, or an http(s) URL.
pub(crate) fn dial_uri(target: &str) -> String {
    let t = target.trim().trim_start_matches("dns:///");
    if t.starts_with("http://") || t.starts_with("https://") {
        t.trim_end_matches('/').to_string()
    } else {
        format!("http://{}", t.trim_end_matches('/'))
    }
}

impl GrpcClient {
    fn channel(&self, target: &str) -> Result<Channel, A2aError> {
        let uri = dial_uri(target);
        let mut channels = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = channels.get(&uri) {
            return Ok(c.clone());
        }
        let bad = |e: &dyn std::fmt::Display| {
            A2aError::BadCard(format!("the gRPC address {target:?} cannot be used: {e}"))
        };
        let mut endpoint = Endpoint::from_shared(uri.clone())
            .map_err(|e| bad(&e))?
            .connect_timeout(CONNECT_TIMEOUT)
            .tcp_nodelay(true)
            .http2_keep_alive_interval(Duration::from_secs(30))
            .keep_alive_while_idle(false);
        if uri.starts_with("https://") {
            endpoint = endpoint
                .tls_config(ClientTlsConfig::new().with_native_roots())
                .map_err(|e| bad(&e))?;
        }
        let channel = endpoint.connect_lazy();
        channels.insert(uri, channel.clone());
        Ok(channel)
    }

    /// Forgets the channel to `target` (after a failure: it may have moved).
    pub(crate) fn forget(&self, target: &str) {
        self.channels
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&dial_uri(target));
    }

    /// Runs `call` at `target` with `headers` as metadata; the answer in
    /// JSON-RPC's shape.
    pub(crate) async fn call(
        &self,
        target: &str,
        headers: &[(String, String)],
        timeout: Duration,
        call: Call,
    ) -> Result<Value, Failure> {
        let channel = self.channel(target).map_err(Failure::Other)?;
        let mut client = A2aServiceClient::new(channel)
            .max_decoding_message_size(16 << 20)
            .accept_compressed(tonic::codec::CompressionEncoding::Gzip);
        let metadata = metadata(headers).map_err(Failure::Other)?;
        let run = async {
            match call {
                Call::Send(params) => {
                    let msg: proto::SendMessageRequest = from_json(params)?;
                    let r = client.send_message(request(metadata, msg, timeout)).await;
                    Ok(answer(r.map(|r| to_json(r.get_ref()))))
                }
                Call::Get(id) => {
                    let msg = proto::GetTaskRequest {
                        id,
                        history_length: Some(0),
                        ..Default::default()
                    };
                    let r = client.get_task(request(metadata, msg, timeout)).await;
                    Ok(answer(r.map(|r| to_json(r.get_ref()))))
                }
                Call::Cancel(id) => {
                    let msg = proto::CancelTaskRequest {
                        id,
                        ..Default::default()
                    };
                    let r = client.cancel_task(request(metadata, msg, timeout)).await;
                    Ok(answer(r.map(|r| to_json(r.get_ref()))))
                }
            }
        };
        // The deadline travels as `grpc-timeout`; this bounds the wait here
        // too, whatever the server does with it.
        let out = match tokio::time::timeout(timeout + Duration::from_secs(1), run).await {
            Ok(out) => out.map_err(Failure::Other)?,
            Err(_) => {
                return Err(Failure::Other(A2aError::Unreachable {
                    url: target.to_string(),
                    reason: "timed out".into(),
                }));
            }
        };
        match out {
            Answer::Json(v) => Ok(v),
            Answer::Status(s) => status_answer(target, &s),
        }
    }
}

enum Answer {
    Json(Value),
    Status(Status),
}

fn answer(r: Result<Value, Status>) -> Answer {
    match r {
        Ok(v) => Answer::Json(json!({ "result": v })),
        Err(s) => Answer::Status(s),
    }
}

fn request<T>(metadata: MetadataMap, msg: T, timeout: Duration) -> tonic::Request<T> {
    let mut r = tonic::Request::from_parts(metadata, Default::default(), msg);
    r.set_timeout(timeout);
    r
}

/// Headers as gRPC metadata (names in lower case, as HTTP/2 wants).
fn metadata(headers: &[(String, String)]) -> Result<MetadataMap, A2aError> {
    let mut m = MetadataMap::new();
    for (k, v) in headers {
        let key = MetadataKey::from_bytes(k.to_ascii_lowercase().as_bytes()).map_err(|_| {
            A2aError::BadCard(format!("the header name {k:?} cannot be gRPC metadata"))
        })?;
        let value = MetadataValue::try_from(v.as_str()).map_err(|_| {
            A2aError::BadCard(format!("the value of header {k:?} cannot be gRPC metadata"))
        })?;
        m.insert(key, value);
    }
    Ok(m)
}

fn from_json<M: serde::de::DeserializeOwned>(v: Value) -> Result<M, A2aError> {
    serde_json::from_value(v)
        .map_err(|e| A2aError::Protocol(format!("a request does not fit a2a.proto: {e}")))
}

fn to_json<M: serde::Serialize>(m: &M) -> Value {
    serde_json::to_value(m).unwrap_or(Value::Null)
}

/// A failed call: a connection that never happened (so nothing ran), a
/// refusal, or the A2A error in JSON-RPC's shape.
fn status_answer(target: &str, s: &Status) -> Result<Value, Failure> {
    use tonic_types::StatusExt;
    let message: String = s.message().chars().take(300).collect();
    match s.code() {
        Code::Unauthenticated => {
            return Err(Failure::Other(A2aError::Refused {
                status: 401,
                message,
            }));
        }
        Code::PermissionDenied => {
            return Err(Failure::Other(A2aError::Refused {
                status: 403,
                message,
            }));
        }
        // tonic's own "transport error" when the connection failed.
        Code::Unavailable if is_connect(s) => {
            return Err(Failure::Connect(format!("cannot connect to {target}")));
        }
        Code::Unavailable | Code::DeadlineExceeded => {
            return Err(Failure::Other(A2aError::Unreachable {
                url: target.to_string(),
                reason: message,
            }));
        }
        _ => {}
    }
    let reason = s.get_details_error_info().map(|i| i.reason);
    let code = reason
        .as_deref()
        .and_then(super::wire::code_of)
        .unwrap_or(match s.code() {
            Code::NotFound => -32001,
            Code::FailedPrecondition => -32002,
            Code::Unimplemented => -32004,
            Code::InvalidArgument => -32602,
            _ => -32603,
        });
    Ok(json!({"error": {"code": code, "message": message}}))
}

/// Whether an `UNAVAILABLE` status is tonic's failure to connect (nothing
/// was sent), rather than the server's own answer.
fn is_connect(s: &Status) -> bool {
    use std::error::Error;
    let mut source = s.source();
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionRefused
                    | std::io::ErrorKind::NotFound
                    | std::io::ErrorKind::AddrNotAvailable
                    | std::io::ErrorKind::HostUnreachable
                    | std::io::ErrorKind::NetworkUnreachable
                    | std::io::ErrorKind::TimedOut
            );
        }
        if e.to_string().contains("dns error") {
            return true;
        }
        source = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_their_grpc_address() {
        assert_eq!(address_of("http://b:8080/a2a"), "b:8080");
        assert_eq!(address_of("https://b.example"), "b.example:443");
        assert_eq!(address_of("http://[::1]:9"), "[::1]:9");
    }

    #[test]
    fn card_addresses_become_dial_uris() {
        assert_eq!(dial_uri("127.0.0.1:8080"), "http://127.0.0.1:8080");
        assert_eq!(dial_uri("dns:///b:9000"), "http://b:9000");
        assert_eq!(dial_uri("https://b.example/"), "https://b.example");
        assert_eq!(dial_uri("http://b:1"), "http://b:1");
    }

    #[test]
    fn statuses_read_as_a2a_errors() {
        use tonic_types::{ErrorDetails, StatusExt};
        let s = Status::with_error_details(
            Code::FailedPrecondition,
            "no",
            ErrorDetails::with_error_info(
                "TASK_NOT_CANCELABLE",
                "a2a-protocol.org",
                HashMap::new(),
            ),
        );
        let v = status_answer("b:1", &s).ok().unwrap();
        assert_eq!(v["error"]["code"], -32002);
        let v = status_answer("b:1", &Status::not_found("gone"))
            .ok()
            .unwrap();
        assert_eq!(v["error"]["code"], -32001);
        assert!(matches!(
            status_answer("b:1", &Status::permission_denied("x")),
            Err(Failure::Other(A2aError::Refused { status: 403, .. }))
        ));
    }
}
