//! Serving a built-in MCP server (`mcp-resources`, `mcp-filesystem`) over
//! Streamable HTTP, the same way for both: `/mcp` plus `/health`, the MCP
//! transport's DNS-rebinding protection, a request-body limit, and a
//! graceful stop on SIGTERM or Ctrl-C.
//!
//! Why here and not in each binary: the protection is the part that must
//! not drift. A browser page on any site can POST to a loopback port; the
//! `Origin` check (loopback origins on any port, plus the ones the operator
//! lists) refuses it, and when bound to loopback the `Host` check refuses a
//! rebound DNS name. Bound elsewhere (a container network), `Host` cannot
//! be known in advance, so only the `Origin` check stays and a warning says
//! the server has no authentication of its own.

use anyhow::Context;
use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Request bodies larger than this get 413.
pub const MAX_BODY: usize = 32 * 1024 * 1024;

/// Serves `make()` sessions at `http://ADDR/mcp` until SIGTERM or Ctrl-C;
/// logs `NAME listening on http://ADDR/mcp` once bound (tests and
/// operators read the port from it). `allowed_origins` are extra browser
/// origins (`scheme://host[:port|:*]`) besides loopback ones.
pub async fn http<S, F>(
    name: &str,
    addr: &str,
    allowed_origins: &[String],
    make: F,
) -> anyhow::Result<()>
where
    S: ServerHandler + Send + 'static,
    F: Fn() -> S + Send + Sync + 'static,
{
    let listener = crate::listen(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    let ct = CancellationToken::new();
    let mut origins: Vec<String> = ["localhost", "127.0.0.1", "[::1]"]
        .iter()
        .flat_map(|h| [format!("http://{h}:*"), format!("https://{h}:*")])
        .collect();
    origins.extend(allowed_origins.iter().cloned());
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(ct.child_token())
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_max_request_body_bytes(MAX_BODY);
    if !local.ip().is_loopback() {
        tracing::warn!(
            "listening on a non-loopback address: {name} has no authentication of its own; keep it on the agent's network or behind a proxy"
        );
        config = config.disable_allowed_hosts();
    }
    let mcp = StreamableHttpService::new(
        move || Ok(make()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let app = axum::Router::new().nest_service("/mcp", mcp).route(
        "/health",
        axum::routing::get(|| async { axum::Json(serde_json::json!({"status": "ok"})) }),
    );
    tracing::info!("{name} listening on http://{local}/mcp");
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            stop_signal().await;
            ct.cancel();
        })
        .await?;
    Ok(())
}

/// Resolves on SIGTERM or SIGINT.
pub async fn stop_signal() {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut t) => {
            tokio::select! {
                _ = t.recv() => {},
                _ = tokio::signal::ctrl_c() => {},
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
