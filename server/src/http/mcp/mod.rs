//! `POST /mcp`: the agent as a Streamable HTTP MCP server (CLIENTS.md §1,
//! §2), on by default (`mcp_endpoint: {enabled: false}` turns it off).
//!
//! - [`handler`]: the rmcp server handler (one tool, the agent's), which
//!   asks the engine's MCP endpoint and writes the answer in the client's
//!   era; [`wire`]: the shapes it writes; [`tasks`]: the Tasks
//!   extension's (a task's state, `resultType: "task"`).
//! - [`resource`]: RFC 9728's protected resource metadata, where a 401
//!   from `/mcp` points a client that must sign in.
//!
//! Key decision: rmcp's `StreamableHttpService` speaks the protocol (both
//! eras: 2026-07-28's stateless requests with their header and `_meta`
//! checks, 2025-11-25's sessions with `elicitation/create` on the call's
//! stream), mounted behind our own middleware: the guard identifies the
//! caller (the same modes and roles as REST) and the cross-site layer
//! refuses a browser's foreign post, so rmcp's own host and origin checks
//! are off. What a call means is the engine's (`engine::mcp_endpoint`).

pub(crate) mod handler;
pub(crate) mod resource;
pub(crate) mod tasks;
pub(crate) mod wire;

use crate::http::state::AppState;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use handler::AgentMcp;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use std::sync::Arc;
use tower::ServiceExt;

/// The protocol side of `/mcp`.
pub(crate) type McpService = StreamableHttpService<AgentMcp, LocalSessionManager>;

/// `/mcp` served by `server`, with bodies up to `max_body` bytes.
pub(crate) fn router(server: AgentMcp, max_body: usize) -> axum::Router {
    axum::Router::new().route_service(crate::http::paths::MCP, service(server, max_body))
}

/// The service for `server`, with bodies up to `max_body` bytes.
fn service(server: AgentMcp, max_body: usize) -> McpService {
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_json_response(true)
        .with_max_request_body_bytes(max_body);
    StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

/// `POST`, `GET` and `DELETE /mcp`: the protocol's, when the endpoint is
/// on; 404 when it is off.
pub(crate) async fn serve(State(state): State<AppState>, req: Request) -> Response {
    let Some(mcp) = state.mcp.clone() else {
        return crate::http::error::ApiError::NotFound(
            "this agent does not serve MCP (mcp_endpoint.enabled is false)".into(),
        )
        .into_response();
    };
    let ending = req.method() == axum::http::Method::DELETE;
    let mut r = match mcp.oneshot(req).await {
        Ok(r) => r,
        Err(never) => match never {},
    };
    // rmcp answers an ended session 202; clients read 200 or 204 as done.
    if ending && r.status() == axum::http::StatusCode::ACCEPTED {
        *r.status_mut() = axum::http::StatusCode::NO_CONTENT;
    }
    r
}

/// The Agent Card's note that the agent is an MCP server too.
pub(crate) fn card_extension(base: &str) -> Value {
    json!({
        "uri": "https://modelcontextprotocol.io/specification/2026-07-28/basic/transports",
        "description": "This agent is also an MCP server (Streamable HTTP, protocol 2026-07-28 and 2025-11-25): one tool, named after the agent.",
        "required": false,
        "params": {"url": format!("{base}{}", crate::http::paths::MCP)},
    })
}
