//! Our A2A client's gRPC binding: a sub-agent whose card offers A2A 1.0
//! only over gRPC (or offers nothing we prefer) is called with tonic's
//! generated client over HTTP/2. The bearer and the entry's headers travel
//! as metadata, so clear text is only ever chosen on purpose: TLS with the
//! system's roots (as the HTTP bindings) unless both the card's interface
//! and the URL the agent was reached through say `http://` (a bare
//! `host:port`, which SDKs put in cards, takes the reached URL's scheme;
//! an `http://` interface of an agent reached over `https` is dialled with
//! TLS all the same). See [`dial_uri`].
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

use super::error::A2aError;
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

/// The `host:port` of a URL (the scheme's port when it names none), or of
/// a bare `host:port` / `dns:///host:port` target as cards carry it.
pub(crate) fn address_of(url: &str) -> String {
    let t = url.trim().trim_start_matches("dns:///");
    if !t.contains("://") {
        return t.trim_end_matches('/').to_string();
    }
    match url::Url::parse(t) {
        Ok(u) => {
            let host = match u.host() {
                Some(url::Host::Ipv6(a)) => format!("[{a}]"),
                Some(h) => h.to_string(),
                None => "localhost".into(),
            };
            format!("{host}:{}", u.port_or_known_default().unwrap_or(80))
        }
        Err(_) => t.to_string(),
    }
}

/// The gRPC interface our own card publishes for the agent at `base`: its
/// origin with the scheme (as A2A 1.0's examples write it), so a client
/// knows whether to speak TLS.
pub(crate) fn interface_url(base: &str) -> String {
    match url::Url::parse(base) {
        Ok(u) if u.has_host() => u.origin().ascii_serialization(),
        _ => base.trim_end_matches('/').to_string(),
    }
}

/// The URI tonic dials for a card's gRPC `target` (`host:port`,
/// `dns:///host:port`, or an `http(s)://` URL) of an agent `reached`
/// through this configured URL. Clear text (`h2c`) only when neither says
/// TLS: the target is `http://` or bare, and the agent was reached through
/// an explicit `http://` URL. Anything else (an `https` target, or any
/// target of an agent reached over `https`) is TLS: a card cannot talk
/// this agent into sending its bearer unencrypted.
pub(crate) fn dial_uri(target: &str, reached: &str) -> String {
    let t = target.trim().trim_start_matches("dns:///");
    let target_tls = t.starts_with("https://");
    let target_clear = t.starts_with("http://") || !t.contains("://");
    let reached_clear = reached.trim_start().starts_with("http://");
    let scheme = if target_clear && reached_clear && !target_tls {
        "http"
    } else {
        "https"
    };
    format!("{scheme}://{}", address_of(t))
}

impl GrpcClient {
    fn channel(&self, target: &str, reached: &str) -> Result<Channel, A2aError> {
        let uri = dial_uri(target, reached);
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
    pub(crate) fn forget(&self, target: &str, reached: &str) {
        self.channels
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&dial_uri(target, reached));
    }

    /// Runs `call` at `target` (of the agent `reached` through this URL,
    /// see [`dial_uri`]) with `headers` as metadata; the answer in
    /// JSON-RPC's shape.
    pub(crate) async fn call(
        &self,
        (target, reached): (&str, &str),
        headers: &[(String, String)],
        timeout: Duration,
        call: Call,
    ) -> Result<Value, Failure> {
        let channel = self.channel(target, reached).map_err(Failure::Other)?;
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
        assert_eq!(address_of("b.example:443"), "b.example:443");
        assert_eq!(address_of("dns:///b:9000"), "b:9000");
        assert_eq!(interface_url("https://b.example/x"), "https://b.example");
        assert_eq!(
            interface_url("http://127.0.0.1:8080"),
            "http://127.0.0.1:8080"
        );
    }

    #[test]
    fn clear_text_only_when_the_target_and_the_reached_url_both_say_http() {
        let http = "http://b:8080";
        let https = "https://b.example";
        assert_eq!(dial_uri("127.0.0.1:8080", http), "http://127.0.0.1:8080");
        assert_eq!(dial_uri("dns:///b:9000", http), "http://b:9000");
        assert_eq!(dial_uri("http://b:1", http), "http://b:1");
        // A card interface that says TLS is dialled with TLS.
        assert_eq!(
            dial_uri("https://b.example/", http),
            "https://b.example:443"
        );
        // An agent reached over https: TLS whatever the card says.
        assert_eq!(dial_uri("b.example:443", https), "https://b.example:443");
        assert_eq!(
            dial_uri("http://b.example:80", https),
            "https://b.example:80"
        );
        assert_eq!(dial_uri(&address_of(https), https), "https://b.example:443");
    }

    /// What a raw TCP listener receives from a call `target` of an agent
    /// `reached` through that URL, with a bearer in the metadata.
    async fn first_bytes(target: impl Fn(u16) -> (String, String)) -> Vec<u8> {
        use tokio::io::AsyncReadExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 64 * 1024];
            let mut got = Vec::new();
            // Read what the client sends before it waits for an answer.
            while let Ok(Ok(n)) =
                tokio::time::timeout(Duration::from_millis(500), s.read(&mut buf)).await
            {
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            got
        });
        let (target, reached) = target(port);
        let headers = [(
            "Authorization".to_string(),
            "Bearer sEcReT-bearer-value".to_string(),
        )];
        let client = GrpcClient::default();
        let _ = client
            .call(
                (&target, &reached),
                &headers,
                Duration::from_secs(2),
                Call::Get("t-1".into()),
            )
            .await;
        seen.await.unwrap()
    }

    const H2C_PREFACE: &[u8] = b"PRI * HTTP/2.0";

    #[tokio::test]
    async fn an_https_sub_agent_gets_tls_never_h2c_or_the_bearer_in_clear() {
        let cases: [fn(u16) -> (String, String); 3] = [
            // Reached through an https URL; the card's interface is bare.
            |p| (format!("127.0.0.1:{p}"), format!("https://127.0.0.1:{p}")),
            // The card's interface says https.
            |p| {
                (
                    format!("https://127.0.0.1:{p}"),
                    format!("http://127.0.0.1:{p}"),
                )
            },
            // An http interface of an agent reached over https.
            |p| {
                (
                    format!("http://127.0.0.1:{p}"),
                    format!("https://127.0.0.1:{p}"),
                )
            },
        ];
        for case in cases {
            let got = first_bytes(case).await;
            assert_eq!(
                got.first(),
                Some(&0x16),
                "a TLS handshake record first: {got:?}"
            );
            assert!(!got.starts_with(H2C_PREFACE));
            let text = String::from_utf8_lossy(&got);
            assert!(!text.contains("sEcReT"), "the bearer crossed in clear text");
        }
        // The listener does see clear text when both say http (so it can tell).
        let got =
            first_bytes(|p| (format!("127.0.0.1:{p}"), format!("http://127.0.0.1:{p}"))).await;
        assert!(got.starts_with(H2C_PREFACE), "{got:?}");
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
