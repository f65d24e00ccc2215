//! `X-Session-ID` and the request log.
//!
//! Every request runs inside a `request` span carrying `sid=`, so one user
//! action can be grepped out of the log by its session id (and, once A2A
//! forwards it, out of every agent's log along a chain). The id is taken
//! from the request if it sends a well-formed one, else generated: 8 hex
//! characters from a CSPRNG, so ids are not guessable from one another.
//! The response always echoes it.

use super::error::ApiError;
use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::time::Instant;
use tracing::Instrument;

/// The header name.
pub(crate) const HEADER: &str = "x-session-id";

/// The request's session id, in request extensions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SessionId(pub String);

/// A new random session id.
pub(crate) fn generate() -> String {
    crate::domain::ids::short_id()
}

/// A client-sent id is accepted if it is 1–128 characters of
/// `A-Z a-z 0-9 . _ : -` (UUIDs, ULIDs and our own ids all fit; nothing that
/// could forge a log line does).
pub(crate) fn is_valid(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

/// Middleware: session id, request span, access log line, echoed header.
pub(crate) async fn layer(mut req: Request, next: Next) -> Response {
    let sent = req
        .headers()
        .get(HEADER)
        .map(|v| v.to_str().map(str::to_string));
    let sid = match sent {
        None => generate(),
        Some(Ok(s)) if is_valid(&s) => s,
        Some(_) => {
            let e = ApiError::BadRequest(
                "X-Session-ID must be 1 to 128 characters of letters, digits, '.', '_', ':' or '-'; \
                 leave it out to get a generated one"
                    .into(),
            );
            tracing::info!(method = %req.method(), path = %req.uri().path(), status = 400, "rejected a malformed X-Session-ID");
            return e.into_response();
        }
    };
    req.extensions_mut().insert(SessionId(sid.clone()));
    // `rpc` and `hops` are filled in by the A2A endpoint, so one line per
    // request ("done") says what it was.
    let span = tracing::info_span!(
        "request",
        sid = %sid,
        method = %req.method(),
        path = %req.uri().path(),
        rpc = tracing::field::Empty,
        hops = tracing::field::Empty,
        otel.name = tracing::field::Empty,
        otel.kind = tracing::field::Empty,
    );
    if crate::telemetry::enabled() {
        // For traces only (the log line stays short): "POST
        // /approvals/{uuid}", a server span, in the caller's trace when it
        // sent a `traceparent`.
        let route = crate::http::metrics::route(&req);
        span.record(
            "otel.name",
            tracing::field::display(format_args!("{} {route}", req.method())),
        );
        span.record("otel.kind", "server");
        crate::telemetry::parent_from(&span, req.headers());
    }
    let started = Instant::now();
    let mut resp = next.run(req).instrument(span.clone()).await;
    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    span.in_scope(|| {
        tracing::info!(
            status = resp.status().as_u16(),
            latency_ms = format!("{latency_ms:.2}"),
            "done"
        )
    });
    if let Ok(v) = HeaderValue::from_str(&sid) {
        resp.headers_mut().insert(HEADER, v);
    }
    resp
}

/// Who is calling: the session id, the principal, how the request came in,
/// and the caller's bearer token (kept in memory for forwarding to tool
/// servers and sub-agents; never logged or stored). The guard has put the
/// principal in the request's extensions ([`crate::http::auth::identity::Identity`]).
///
/// A bearer is forwarded only if it is the user's own (auth modes none,
/// oidc and proxy): a static operator token (mode tokens) is this agent's
/// credential and never leaves it (AUTH.md §6).
pub(crate) struct Caller(pub crate::domain::tools::CallContext);

/// The header the web UI sends, so decisions made there are recorded as `ui`.
pub(crate) const UI_CLIENT_HEADER: &str = "x-stopgo-client";

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Caller {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(Caller(context(&parts.headers, &parts.extensions)))
    }
}

/// The caller context of a request's headers and extensions (also for
/// the gRPC binding, whose requests carry both as tonic metadata).
pub(crate) fn context(
    headers: &axum::http::HeaderMap,
    extensions: &axum::http::Extensions,
) -> crate::domain::tools::CallContext {
    use crate::domain::principal::Source;
    let session_id = extensions
        .get::<SessionId>()
        .map(|s| s.0.clone())
        .unwrap_or_else(generate);
    let principal = extensions
        .get::<crate::http::auth::identity::Identity>()
        .map(|i| (*i.0).clone())
        .unwrap_or_default();
    let forwardable = matches!(
        principal.source,
        Source::Anonymous | Source::Jwt | Source::Proxy
    );
    let bearer = crate::http::auth::identity::bearer(headers)
        .filter(|_| forwardable)
        .map(str::to_string);
    let from_ui = principal.source == Source::Session
        || headers
            .get(UI_CLIENT_HEADER)
            .is_some_and(|v| v.as_bytes() == b"ui");
    crate::domain::tools::CallContext {
        bearer,
        session_id,
        hops: 0,
        principal,
        via: if from_ui {
            crate::domain::channel::Channel::Ui
        } else {
            crate::domain::channel::Channel::Rest
        },
        headers: Vec::new(),
        message_id: None,
        asker: None,
        resume: None,
        receipt: None,
        idempotency_key: None,
        signin: extensions
            .get::<crate::domain::principal::SignIn>()
            .cloned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_are_eight_hex_characters_and_differ() {
        let a = generate();
        assert_eq!(a.len(), 8);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert!(is_valid(&a));
        let distinct: std::collections::HashSet<_> = (0..100).map(|_| generate()).collect();
        assert!(distinct.len() > 95);
    }

    #[test]
    fn client_ids_are_checked() {
        assert!(is_valid("3f2a9c1e-7b4d-4c8e-9a1f-0e2d3c4b5a69"));
        assert!(is_valid("user:42.run_7"));
        assert!(!is_valid(""));
        assert!(!is_valid("has space"));
        assert!(!is_valid("line\nbreak"));
        assert!(!is_valid(&"x".repeat(129)));
    }
}
