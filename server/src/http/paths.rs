//! Paths that the middleware must know without knowing the handlers that
//! serve them: the cross-site check lets Slack's form post in, and the
//! guard and the authorization fallbacks tell A2A's gRPC binding apart.
//! Here, below both, so the foundation does not import the features.

use axum::http::HeaderMap;

/// Slack's interactivity request URL (the cross-site check lets its
/// urlencoded body in; its signature is checked by the handler).
pub(crate) const SLACK_INTERACTIONS: &str = "/integrations/slack/interactions";

/// The gRPC binding's path prefix: `/<package>.<service>/<method>`.
pub(crate) const A2A_GRPC_PREFIX: &str = "/lf.a2a.v1.A2AService/";

/// Whether a request speaks gRPC (its content type says so).
pub(crate) fn is_grpc(h: &HeaderMap) -> bool {
    h.get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/grpc"))
}
