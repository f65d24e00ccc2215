//! The agent card, at `/.well-known/agent-card.json` and the seed's
//! `/.well-known/agent.json`.
//!
//! By default the card is dual-stack: the 1.0 fields (`supportedInterfaces`
//! with a 1.0 and a 0.3 JSON-RPC interface) plus the 0.3 top-level `url`,
//! `protocolVersion` and `preferredTransport`, so that 0.3 clients (most
//! deployed agents) can use it. `a2a_card: v1` serves a pure 1.0 card: the
//! 1.0 TCK's schema rejects the extra 0.3 keys. The endpoint URL comes from
//! `public_url`, else from the request's `Host` (never the `0.0.0.0` the
//! agent binds to). Skills are the agent's tools and sub-agents. The card
//! is cacheable (`Cache-Control`, `ETag`, `Last-Modified`, `304` on
//! `If-None-Match` or `If-Modified-Since`). It lists JSON-RPC (1.0 and
//! 0.3) and HTTP+JSON (1.0) at `/a2a`, and gRPC (1.0) at the agent's
//! `host:port` (HTTP/2 on the same port); with operator authentication on,
//! an extended card (`extended`) for known callers.

use crate::config::A2aCardMode;
use crate::http::state::AppState;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The card for a request with these headers.
pub(crate) fn card(state: &AppState, headers: &HeaderMap) -> Value {
    let base = base_url(state, headers);
    let endpoint = format!("{base}/a2a");
    let c = &state.config;
    let mut skills: Vec<Value> = state
        .engine
        .all_tools()
        .iter()
        .map(|t| {
            let mut tags = vec![t.server.clone()];
            if t.destructive {
                tags.push("needs-approval".into());
            }
            json!({"id": t.name, "name": t.name, "description": if t.description.is_empty() { t.name.clone() } else { t.description.clone() }, "tags": tags})
        })
        .collect();
    if skills.is_empty() {
        skills.push(json!({"id": "chat", "name": "chat", "description": "Answers messages.", "tags": ["chat"]}));
    }
    let description = if c.description.trim().is_empty() {
        format!("{} (a Stop & Go agent)", c.name)
    } else {
        c.description.clone()
    };
    let mut card = json!({
        "name": c.name,
        "description": description,
        "version": env!("CARGO_PKG_VERSION"),
        "supportedInterfaces": [
            {"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
            {"url": endpoint, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
            {"url": crate::a2a::grpc::interface_url(&base), "protocolBinding": "GRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": true, "pushNotifications": true,
                         "extendedAgentCard": state.auth.enforced()},
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain", "application/json"],
        "skills": skills,
    });
    let mut extensions: Vec<serde_json::Value> = c
        .a2a_extensions
        .iter()
        .map(|e| {
            let mut x = json!({"uri": e.uri, "required": e.required});
            if !e.description.is_empty() {
                x["description"] = json!(e.description);
            }
            x
        })
        .collect();
    if c.mcp_endpoint.enabled {
        extensions.push(crate::http::mcp::card_extension(&base));
    }
    if c.receipts.is_some() {
        extensions.push(json!({
            "uri": crate::a2a::wire::RECEIPT_EXTENSION,
            "description": "Signed approval receipts (stopgo-receipt+jwt, keys at /.well-known/jwks.json): this agent signs each call it runs after a decision, and a continuation that approves may carry the caller's receipt in metadata[<this uri>].receipt, which this agent's receipt then names in `chain`.",
            "required": false,
        }));
    }
    if !extensions.is_empty() {
        card["capabilities"]["extensions"] = json!(extensions);
    }
    if c.a2a_card == A2aCardMode::Dual {
        card["url"] = json!(endpoint);
        card["protocolVersion"] = json!("0.3.0");
        card["preferredTransport"] = json!("JSONRPC");
        card["supportsAuthenticatedExtendedCard"] = json!(state.auth.enforced());
    }
    declare_security(&mut card, c);
    sign(state, &base, &mut card);
    card
}

/// Signs the card with `a2a_card_signing`'s key (A2A 1.0 §8.4), naming
/// our JWKS as `jku`. A card that cannot be signed is served unsigned and
/// the reason logged (it cannot happen with a key that loaded: the card
/// is always an AgentCard).
fn sign(state: &AppState, base: &str, card: &mut Value) {
    if let Some(s) = &state.card_signer {
        let jku = format!("{base}{JWKS_PATH}");
        if let Err(e) = s.sign(card, Some(&jku)) {
            tracing::error!(error = %e, "cannot sign the agent card");
        }
    }
}

/// Where our card's public signing key is published.
pub(crate) const JWKS_PATH: &str = "/.well-known/jwks.json";

/// `GET /.well-known/jwks.json`: the public keys the card and the
/// approval receipts are signed with (one entry when one key serves both;
/// 404 when neither is configured).
pub(crate) async fn jwks(State(state): State<AppState>) -> Response {
    let mut keys: Vec<serde_json::Value> = state
        .card_signer
        .iter()
        .filter_map(|s| s.jwks().get("keys").and_then(|k| k.as_array()).cloned())
        .flatten()
        .collect();
    if let Some(r) = &state.receipt_signer
        && !keys.iter().any(|k| k == r.jwk())
    {
        keys.push(r.jwk().clone());
    }
    if keys.is_empty() {
        return crate::http::error::ApiError::NotFound(
            "this agent signs neither its card nor receipts (a2a_card_signing and receipts are not set)"
                .into(),
        )
        .into_response();
    }
    (
        [(
            header::CACHE_CONTROL,
            HeaderValue::from_static("public, max-age=300"),
        )],
        axum::Json(serde_json::json!({ "keys": keys })),
    )
        .into_response()
}

/// With auth on, the card says how to authenticate (AUTH.md §3): a bearer
/// (an operator token, or a JWT from the OpenID provider). The 1.0 card
/// uses the 1.0 field shapes; the dual card the 0.3 ones, which 0.3
/// clients read (1.0 clients ignore them).
fn declare_security(card: &mut Value, c: &crate::config::Config) {
    use crate::config::AuthMode;
    let oidc_url = c.auth.oidc.as_ref().map(|o| {
        format!(
            "{}/.well-known/openid-configuration",
            o.issuer.trim_end_matches('/')
        )
    });
    match (c.auth.mode, c.a2a_card) {
        (AuthMode::None | AuthMode::Proxy, _) => {}
        (mode, A2aCardMode::V1) => {
            let scheme = match (mode, &oidc_url) {
                (AuthMode::Oidc, Some(u)) => {
                    json!({"openIdConnectSecurityScheme": {"openIdConnectUrl": u}})
                }
                _ => json!({"httpAuthSecurityScheme": {"scheme": "Bearer"}}),
            };
            card["securitySchemes"] = json!({"bearer": scheme});
            card["securityRequirements"] = json!([{"schemes": {"bearer": {"list": []}}}]);
        }
        (mode, A2aCardMode::Dual) => {
            let scheme = match (mode, &oidc_url) {
                (AuthMode::Oidc, Some(u)) => {
                    json!({"type": "openIdConnect", "openIdConnectUrl": u})
                }
                _ => json!({"type": "http", "scheme": "bearer"}),
            };
            card["securitySchemes"] = json!({"bearer": scheme});
            card["security"] = json!([{"bearer": []}]);
        }
    }
}

/// `public_url`, else `http://<Host>`.
fn base_url(state: &AppState, headers: &HeaderMap) -> String {
    crate::http::paths::base_url(
        state.config.public_url.as_deref(),
        headers,
        state.config.port,
    )
}

/// The extended card (`GetExtendedAgentCard`,
/// `agent/getAuthenticatedExtendedCard`, `GET /a2a/extendedAgentCard`):
/// with operator authentication on, a known caller gets the card with
/// every skill and, per skill, whether it stops for approval and which
/// rule decides (`-32007` without authentication: there is nothing more
/// to show than the public card).
pub(crate) fn extended(
    state: &AppState,
    headers: &HeaderMap,
    d: crate::a2a::wire::Dialect,
) -> Result<Value, super::rpc::RpcError> {
    if !state.auth.enforced() {
        return Err(super::rpc::RpcError::new(
            -32007,
            "this agent has no extended agent card (operator authentication is off); GET /.well-known/agent-card.json",
        ));
    }
    let mut c = card(state, headers);
    if d == crate::a2a::wire::Dialect::V1 {
        // The 1.0 shape only: the 0.3 fields of a dual card are for 0.3 callers.
        if let Some(o) = c.as_object_mut() {
            for k in [
                "url",
                "protocolVersion",
                "preferredTransport",
                "supportsAuthenticatedExtendedCard",
                "security",
            ] {
                o.remove(k);
            }
        }
    }
    let sub_agents: Vec<Value> = state
        .config
        .a2a
        .iter()
        .map(|a| {
            json!({"id": format!("a2a_{}", a.name), "name": format!("a2a_{}", a.name),
                        "description": format!("Delegates to the sub-agent {}", a.name),
                        "tags": ["sub-agent"]})
        })
        .collect();
    let needs_approval: std::collections::HashSet<String> = state
        .engine
        .all_tools()
        .iter()
        .filter(|t| t.destructive)
        .map(|t| t.name.clone())
        .collect();
    if let Some(skills) = c["skills"].as_array_mut() {
        for s in skills.iter_mut() {
            if s["id"]
                .as_str()
                .is_some_and(|id| needs_approval.contains(id))
            {
                let d = s["description"].as_str().unwrap_or_default().to_string();
                s["description"] = json!(format!("{d} (stops for a human's approval)"));
            }
        }
        for a in sub_agents {
            if !skills.iter().any(|s| s["id"] == a["id"]) {
                skills.push(a);
            }
        }
    }
    // What the extended card adds is signed too.
    sign(state, &base_url(state, headers), &mut c);
    Ok(c)
}

/// When each card body this server served was first served: its
/// `Last-Modified` (a card changes when the tools or the config do).
fn first_served(state: &AppState, etag: &str) -> String {
    let mut seen = state.card_served.lock().unwrap_or_else(|p| p.into_inner());
    seen.entry(etag.to_string())
        .or_insert_with(|| {
            chrono::Utc::now()
                .format("%a, %d %b %Y %H:%M:%S GMT")
                .to_string()
        })
        .clone()
}

/// `GET /.well-known/agent-card.json` and `/.well-known/agent.json`.
pub(crate) async fn get(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let body = card(&state, &headers).to_string();
    let etag = format!("\"{:016x}\"", fnv(body.as_bytes()));
    let modified = first_served(&state, &etag);
    let fresh = match headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
    {
        Some(v) => v.split(',').any(|t| t.trim() == etag || t.trim() == "*"),
        None => headers
            .get(header::IF_MODIFIED_SINCE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| chrono::DateTime::parse_from_rfc2822(v).ok())
            .zip(chrono::DateTime::parse_from_rfc2822(&modified).ok())
            .is_some_and(|(since, m)| m <= since),
    };
    if fresh {
        let mut r = (StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response();
        if let Ok(v) = HeaderValue::from_str(&modified) {
            r.headers_mut().insert(header::LAST_MODIFIED, v);
        }
        return r;
    }
    let mut resp = (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(&modified) {
        h.insert(header::LAST_MODIFIED, v);
    }
    resp
}

/// FNV-1a: a stable, dependency-free hash for the ETag.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100000001b3)
    })
}
