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

/// The agent's base URL as a client reaches it: `public_url`, else
/// `http://<Host>` (never the `0.0.0.0` it may listen on).
pub(crate) fn base_url(public_url: Option<&str>, h: &HeaderMap, port: u16) -> String {
    if let Some(u) = public_url {
        return u.trim_end_matches('/').to_string();
    }
    let host = h
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| !h.is_empty() && !h.contains(char::is_whitespace))
        .map(str::to_string)
        .unwrap_or_else(|| format!("localhost:{port}"));
    let host = host.replace("0.0.0.0", "localhost");
    format!("http://{host}")
}

/// The agent as an MCP server (CLIENTS.md §1).
pub(crate) const MCP: &str = "/mcp";

/// RFC 9728's protected resource metadata, where a 401 from `/mcp` points.
pub(crate) const PROTECTED_RESOURCE: &str = "/.well-known/oauth-protected-resource";
