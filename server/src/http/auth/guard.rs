//! The auth middleware: identify the caller, check the route table, and
//! answer for the caller when the table says no (AUTH.md §3).
//!
//! Credentials are tried in order: `Authorization: Bearer` (an operator
//! token or a JWT, by mode), the session cookie, the proxy's headers (mode
//! `proxy`). Bad credentials are a 401 and count against the peer's
//! failure budget ([`super::ratelimit`]); an expired session is simply
//! no session. Pages without a session redirect to sign-in; API routes
//! answer 401 with `WWW-Authenticate: Bearer`; a known caller without the
//! role gets 403 naming it. The principal goes into the request's
//! extensions as [`Identity`] for handlers, the engine and the UI.

use super::Auth;
use super::access::{self, Need};
use super::proxy::ProxyIdentity;
use super::session::{self, COOKIE};
use crate::config::AuthMode;
use crate::domain::principal::{Principal, Role, Roles, Source};
use crate::http::a2a::rpc::RpcError;
use crate::http::state::AppState;
use axum::Json;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

/// The caller, in request extensions.
#[derive(Clone, Debug)]
pub(crate) struct Identity(pub Arc<Principal>);

impl Identity {
    /// A caller who proved nothing (auth on, no credentials).
    pub(crate) fn nobody() -> Identity {
        Identity(Arc::new(Principal {
            name: crate::domain::principal::ANONYMOUS.into(),
            roles: Roles::NONE,
            source: Source::Anonymous,
            expires_at: None,
        }))
    }

    /// Whether the caller proved who they are (or nothing is enforced).
    pub(crate) fn known(&self) -> bool {
        !self.0.roles.is_empty() || self.0.source != Source::Anonymous
    }
}

/// Why identification failed.
enum Failure {
    /// Too many failures from this address: wait this many seconds.
    Limited(u64),
    /// Credentials that prove nothing (401).
    Invalid(String),
    /// The OpenID provider cannot be reached (503).
    Unavailable(String),
}

/// The bearer token of a request, if any.
pub(crate) fn bearer(h: &HeaderMap) -> Option<&str> {
    let v = h.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// The peer's address (absent when the router is called without a socket,
/// as in in-process tests).
pub(crate) fn peer(req: &Request) -> IpAddr {
    req.extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())
        .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
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
                        super::oidc::OidcError::Invalid(m) => Failure::Invalid(m),
                        super::oidc::OidcError::Unavailable(m) => Failure::Unavailable(m),
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
    let need = access::need(req.method(), &path, |p| {
        crate::http::ui::is_static_file(p, &site_root)
    });
    let ip = peer(&req);
    // A2A's gRPC binding: its clients read refusals as gRPC statuses.
    let grpc = path.starts_with(crate::http::a2a::grpc::PREFIX)
        && crate::http::a2a::grpc::is_grpc(req.headers());
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
            deny(&state, ip, "-", &path, &why).await;
            if grpc {
                return crate::http::a2a::grpc::refusal(&RpcError::unauthenticated(&why));
            }
            if is_a2a_rest(&path) {
                return challenged(a2a_rest(RpcError::unauthenticated(&why)), true);
            }
            return unauthorized(&why, true);
        }
        Err(Failure::Unavailable(why)) => {
            tracing::error!(error = %why, "cannot check credentials");
            if grpc {
                return crate::http::a2a::grpc::refusal_of(tonic::Status::unavailable(
                    "credentials cannot be checked right now (the identity provider is unreachable); try again shortly",
                ));
            }
            return crate::http::ApiError::Unavailable(
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
            if grpc {
                return crate::http::a2a::grpc::refusal(&RpcError::unauthenticated(why));
            }
            if is_a2a_rest(&path) {
                return challenged(a2a_rest(RpcError::unauthenticated(why)), false);
            }
            return unauthorized(why, false);
        }
        (Need::Page(_), None) => return to_sign_in(req.uri()),
        (Need::Api(role) | Need::Page(role), Some(p)) if !p.allow(role) => {
            let why = missing(role);
            deny(&state, ip, &p.name, &path, &why).await;
            if grpc {
                return crate::http::a2a::grpc::refusal(&RpcError::forbidden(&why));
            }
            if is_a2a_rest(&path) {
                return a2a_rest(RpcError::forbidden(&why));
            }
            if path.starts_with("/a2a") {
                return a2a_forbidden(&why);
            }
            return crate::http::ApiError::Forbidden(why).into_response();
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

/// Records `auth.denied` (at most ten a minute per address).
pub(crate) async fn deny(state: &AppState, ip: IpAddr, actor: &str, route: &str, reason: &str) {
    if state.auth.denied_rows.blocked(ip).is_some() {
        return;
    }
    state.auth.denied_rows.fail(ip);
    let details = serde_json::json!({"route": route, "reason": reason, "peer": ip.to_string()});
    if let Err(e) = state
        .store
        .audit(actor.to_string(), "auth.denied", details)
        .await
    {
        tracing::error!(error = %e, "could not record auth.denied");
    }
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

/// Whether `path` is in A2A's HTTP+JSON binding (`/a2a/...`; `/a2a`
/// itself is JSON-RPC), whose clients read its AIP-193 error bodies.
fn is_a2a_rest(path: &str) -> bool {
    path.starts_with("/a2a/")
}

/// A refusal as the HTTP+JSON binding answers errors.
fn a2a_rest(e: RpcError) -> Response {
    crate::http::a2a::rest::error(&e)
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

/// Percent-encodes everything but unreserved characters and `/`.
pub(crate) fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A `next` or `back` target that stays on this site: a path of our own
/// origin, as the browser will read it, else `/`. Every redirect after
/// sign-in and every "Back" link goes through here.
///
/// Browsers drop TAB, CR and LF anywhere in a URL and trim leading control
/// characters and spaces (the WHATWG URL parser), so `/<TAB>/evil.example`
/// is `//evil.example` to them, another site. A target with any control
/// character is refused outright; what is left must start with one `/`,
/// hold no `\` (read as `/`), and resolve, by the same parser browsers
/// use, to the origin it was resolved against. The answer is the parser's
/// own serialization of the path, query and fragment, so what is sent is
/// exactly what was judged.
pub(crate) fn local_target(next: Option<&str>) -> String {
    const HOME: &str = "/";
    let Some(n) = next else {
        return HOME.into();
    };
    if !n.starts_with('/')
        || n.starts_with("//")
        || n.contains('\\')
        || n.chars().any(char::is_control)
    {
        return HOME.into();
    }
    let Ok(base) = url::Url::parse("http://stopgo.invalid/") else {
        return HOME.into();
    };
    match base.join(n) {
        Ok(u) if u.origin() == base.origin() => u[url::Position::BeforePath..].to_string(),
        _ => HOME.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_in_targets_stay_on_this_site() {
        assert_eq!(local_target(Some("/ui/approvals?x=1")), "/ui/approvals?x=1");
        assert_eq!(local_target(Some("//evil.example/")), "/");
        assert_eq!(local_target(Some("https://evil.example/")), "/");
        assert_eq!(local_target(Some("/\\evil.example")), "/");
        assert_eq!(local_target(None), "/");
        // Browsers drop TAB, CR and LF and trim leading controls: none of
        // these may lead off-site once they have.
        for bad in [
            "/\t/evil.example",
            "/\r/evil.example",
            "/\n/evil.example",
            "\t//evil.example",
            "/\t\t/evil.example/x",
            "/\u{0}/evil.example",
            "/\u{7f}/evil.example",
            "/\u{1b}/evil.example",
            " //evil.example",
            "/\t\\evil.example",
            "/ui/\r\nSet-Cookie: x=1",
        ] {
            assert_eq!(local_target(Some(bad)), "/", "{bad:?}");
        }
        assert_eq!(local_target(Some("/ui/a b#f")), "/ui/a%20b#f");
        assert_eq!(local_target(Some("/./ui/../ui/tools")), "/ui/tools");
        assert_eq!(encode("/ui/a?b=c&d"), "/ui/a%3Fb%3Dc%26d");
    }

    #[test]
    fn bearer_is_case_insensitive_and_never_empty() {
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("bearer abc"),
        );
        assert_eq!(bearer(&h), Some("abc"));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer "));
        assert_eq!(bearer(&h), None);
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert_eq!(bearer(&h), None);
    }
}
