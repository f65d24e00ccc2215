//! RFC 9728 protected resource metadata for `/mcp` (CLIENTS.md §1): what a
//! standard MCP client reads after a 401 to find out how to sign in. In
//! mode `oidc` the issuer is its authorization server; in mode `tokens`
//! there is none to name (operator tokens are handed out, not obtained),
//! so the list is empty and the client must be given a token.

use crate::config::AuthMode;
use crate::http::paths::{MCP, PROTECTED_RESOURCE, base_url};
use crate::http::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use serde_json::{Value, json};

/// `GET /.well-known/oauth-protected-resource` (and `.../mcp`).
pub(crate) async fn metadata(State(state): State<AppState>, headers: HeaderMap) -> Json<Value> {
    let base = base_url(
        state.config.public_url.as_deref(),
        &headers,
        state.config.port,
    );
    let servers: Vec<String> = match (state.config.auth.mode, &state.config.auth.oidc) {
        (AuthMode::Oidc, Some(o)) => vec![o.issuer.trim_end_matches('/').to_string()],
        _ => Vec::new(),
    };
    Json(json!({
        "resource": format!("{base}{MCP}"),
        "authorization_servers": servers,
        "bearer_methods_supported": ["header"],
        "resource_name": format!("Stop & Go agent {}", state.config.name),
    }))
}

/// The challenge of a 401 from `/mcp`: where the metadata is.
pub(crate) fn challenge(state: &AppState, headers: &HeaderMap, invalid: bool) -> String {
    let base = base_url(
        state.config.public_url.as_deref(),
        headers,
        state.config.port,
    );
    let error = if invalid {
        "error=\"invalid_token\", "
    } else {
        ""
    };
    format!("Bearer {error}resource_metadata=\"{base}{PROTECTED_RESOURCE}\"")
}
