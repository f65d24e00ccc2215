//! The auth middleware: identify the caller, check the route table, and
//! answer for the caller when the table says no (AUTH.md §3).
//!
//! Credentials are tried in order: `Authorization: Bearer` (an operator
//! token or a JWT, by mode), the session cookie, the proxy's headers (mode
//! `proxy`). Bad credentials are a 401 and count against the peer's
//! failure budget ([`super::auth::ratelimit`]); an expired session is simply
//! no session. Pages without a session redirect to sign-in; API routes
//! answer 401 with `WWW-Authenticate: Bearer`; a known caller without the
//! role gets 403 naming it. The principal goes into the request's
//! extensions as [`Identity`] for handlers, the engine and the UI.

use crate::config::AuthMode;
use crate::domain::principal::{Principal, Role, Roles, Source};
use crate::http::a2a::rpc::RpcError;
use crate::http::auth::Auth;
use crate::http::auth::access::{self, Need};
use crate::http::auth::denied::deny;
use crate::http::auth::identity::{Identity, bearer, peer};
use crate::http::auth::proxy::ProxyIdentity;
use crate::http::auth::session::{self, COOKIE};
use crate::http::auth::target::encode;
use crate::http::error::ApiError;
use crate::http::paths::{A2A_GRPC_PREFIX, MCP, is_grpc};
use crate::http::routes::ROUTES;
use crate::http::state::AppState;
use axum::Json;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::IpAddr;
use std::sync::Arc;

/// Why identification failed.
enum Failure {
    /// Too many failures from this address: wait this many seconds.
    Limited(u64),
    /// Credentials that prove nothing (401).
    Invalid(String),
    /// The OpenID provider cannot be reached (503).
    Unavailable(String),
}

/// Who the request is (`signin`: set to the browser session it came with).
async fn identify(
    state: &AppState,
    h: &HeaderMap,
    ip: IpAddr,
    signin: &mut Option<crate::domain::principal::SignIn>,
) -> Result<Option<Principal>, Failure> {
    let auth = &state.auth;
    let token = bearer(h);
    let proxied = auth.proxy.as_ref().map(|p| p.identify(h, Some(ip)));
    let presents = token.is_some() && auth.mode != AuthMode::Proxy
        || matches!(proxied, Some(ProxyIdentity::Untrusted));
    if presents && let Some(wait) = auth.failures.blocked(ip) {
        return Err(Failure::Limited(wait));
    }
    if let Some(t) = token {
        match auth.mode {
            AuthMode::Tokens => {
                return auth.tokens.find(t).map(Some).ok_or_else(|| {
                    Failure::Invalid(
                        "the bearer token is not one of this agent's operator tokens".into(),
                    )
                });
            }
            AuthMode::Oidc => {
                if let Some(o) = &auth.oidc {
                    return o.authenticate(t).await.map(Some).map_err(|e| match e {
                        crate::http::auth::oidc::OidcError::Invalid(m) => Failure::Invalid(m),
                        crate::http::auth::oidc::OidcError::Unavailable(m) => {
                            Failure::Unavailable(m)
                        }
                    });
                }
            }
            AuthMode::None | AuthMode::Proxy => {}
        }
    }
    if let Some(c) = session::read_cookie(h, COOKIE) {
        let id_hash = session::digest(&c);
        let found = state
            .store
            .session(id_hash.clone())
            .await
            .map_err(|e| Failure::Unavailable(e.to_string()))?;
        if let Some(s) = found {
            *signin = Some(crate::domain::principal::SignIn {
                id_hash,
                expires_at: s.expires_at.clone(),
            });
            return Ok(Some(Principal {
                name: s.name,
                roles: Roles::from_names(s.roles.iter().map(String::as_str)),
                source: Source::Session,
                expires_at: chrono::DateTime::parse_from_rfc3339(&s.expires_at)
                    .ok()
                    .map(|t| t.with_timezone(&chrono::Utc)),
            }));
        }
    }
    match proxied {
        Some(ProxyIdentity::Found(p)) => Ok(Some(p)),
        Some(ProxyIdentity::Untrusted) => Err(Failure::Invalid(
            "identity headers are accepted only from the addresses in auth.proxy.trusted_proxies"
                .into(),
        )),
        _ => Ok(None),
    }
}

/// Middleware over every route.
pub(crate) async fn layer(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let auth: Arc<Auth> = state.auth.clone();
    if !auth.enforced() {
        req.extensions_mut()
            .insert(Identity(Arc::new(Principal::anonymous())));
        return next.run(req).await;
    }
    let path = req.uri().path().to_string();
    let site_root = state.leptos.site_root.to_string();
    let declared = ROUTES.iter().map(|r| (r.method, r.path, r.need));
    let need = access::need(req.method(), &path, declared, |p| {
        crate::http::ui::is_static_file(p, &site_root)
    });
    let ip = peer(&req);
    // A2A's gRPC binding: its clients read refusals as gRPC statuses.
    let grpc = path.starts_with(A2A_GRPC_PREFIX) && is_grpc(req.headers());
    let mut signin = None;
    let found = identify(&state, req.headers(), ip, &mut signin).await;
    let principal = match found {
        Ok(p) => p,
        Err(_) if need == Need::Open => None,
        Err(Failure::Limited(wait)) if grpc => {
            return crate::http::a2a::grpc::refusal_of(tonic::Status::resource_exhausted(format!(
                "too many failed sign-ins from this address: try again in {wait} s"
            )));
        }
        Err(Failure::Limited(wait)) => return too_many(wait),
        Err(Failure::Invalid(why)) => {
            auth.failures.fail(ip);
            deny(&state.auth, &state.store, ip, "-", &path, &why).await;
            return unknown(&state, &req, grpc, &why, true);
        }
        Err(Failure::Unavailable(why)) => {
            tracing::error!(error = %why, "cannot check credentials");
            if grpc {
                return crate::http::a2a::grpc::refusal_of(tonic::Status::unavailable(
                    "credentials cannot be checked right now (the identity provider is unreachable); try again shortly",
                ));
            }
            return ApiError::Unavailable(
                "credentials cannot be checked right now (the identity provider is unreachable); try again shortly".into(),
            )
            .into_response();
        }
    };
    let missing = |role: Role| -> String {
        format!("this needs the role `{role}` (or `admin`), which you do not have")
    };
    match (need, &principal) {
        (Need::Open, _) => {}
        (Need::Api(_) | Need::Known, None) => {
            let why = "authentication required: send Authorization: Bearer <token>, or sign in at /ui/sign-in";
            return unknown(&state, &req, grpc, why, false);
        }
        (Need::Page(_), None) => return to_sign_in(req.uri()),
        (Need::Api(role) | Need::Page(role), Some(p)) if !p.allow(role) => {
            let why = missing(role);
            deny(&state.auth, &state.store, ip, &p.name, &path, &why).await;
            if grpc {
                return crate::http::a2a::grpc::refusal(&RpcError::forbidden(&why));
            }
            if is_a2a_rest(&path) {
                return a2a_rest(RpcError::forbidden(&why));
            }
            if path.starts_with("/a2a") {
                return a2a_forbidden(&why);
            }
            return ApiError::Forbidden(why).into_response();
        }
        _ => {}
    }
    if let (Some(s), Some(p)) = (signin, &principal)
        && p.source == Source::Session
    {
        req.extensions_mut().insert(s);
    }
    req.extensions_mut().insert(match principal {
        Some(p) => Identity(Arc::new(p)),
        None => Identity::nobody(),
    });
    next.run(req).await
}

/// A 401 for a caller not known (`invalid`: its credentials prove
/// nothing), in the form its protocol reads: a gRPC status, an A2A
/// HTTP+JSON error, a challenge naming `/mcp`'s resource metadata, or the
/// API's error.
fn unknown(state: &AppState, req: &Request, grpc: bool, why: &str, invalid: bool) -> Response {
    let path = req.uri().path();
    if grpc {
        return crate::http::a2a::grpc::refusal(&RpcError::unauthenticated(why));
    }
    if is_a2a_rest(path) {
        return challenged(a2a_rest(RpcError::unauthenticated(why)), invalid);
    }
    if path == MCP {
        let c = crate::http::mcp::resource::challenge(state, req.headers(), invalid);
        return with_challenge(unauthorized(why, invalid), &c);
    }
    unauthorized(why, invalid)
}

fn unauthorized(why: &str, invalid: bool) -> Response {
    let r = (
        StatusCode::UNAUTHORIZED,
        Json(serde_json::json!({"error": why})),
    )
        .into_response();
    challenged(r, invalid)
}

/// A 401 with its `WWW-Authenticate` challenge.
fn challenged(mut r: Response, invalid: bool) -> Response {
    let challenge = if invalid {
        "Bearer error=\"invalid_token\""
    } else {
        "Bearer"
    };
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(challenge),
    );
    r
}

/// `r` with `challenge` as its `WWW-Authenticate` (RFC 9728's
/// `resource_metadata` for `/mcp`).
fn with_challenge(mut r: Response, challenge: &str) -> Response {
    if let Ok(v) = HeaderValue::from_str(challenge) {
        r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    r
}

/// Whether `path` is in A2A's HTTP+JSON binding (`/a2a/...`; `/a2a`
/// itself is JSON-RPC), whose clients read its AIP-193 error bodies.
fn is_a2a_rest(path: &str) -> bool {
    path.starts_with("/a2a/")
}

/// A refusal as the HTTP+JSON binding answers errors.
fn a2a_rest(e: RpcError) -> Response {
    crate::http::a2a::errors::rest_error(&e)
}

fn too_many(wait: u64) -> Response {
    let mut r = (
        StatusCode::TOO_MANY_REQUESTS,
        Json(serde_json::json!({"error": format!("too many failed sign-ins from this address: try again in {wait} s")})),
    )
        .into_response();
    if let Ok(v) = HeaderValue::from_str(&wait.to_string()) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// HTTP 403 with a JSON-RPC error body (A2A clients read the body).
pub(crate) fn a2a_forbidden(why: &str) -> Response {
    (
        StatusCode::FORBIDDEN,
        Json(serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": format!("forbidden: {why}")}})),
    )
        .into_response()
}

/// 303 to the sign-in page, remembering where to come back to.
fn to_sign_in(uri: &axum::http::Uri) -> Response {
    let back = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let location = format!("/ui/sign-in?next={}", encode(back));
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(&location) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}
