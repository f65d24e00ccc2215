//! Signing in and out in the browser (AUTH.md §3).
//!
//! - `GET /ui/sign-in`: the page. Mode `tokens`: paste a token, in a plain
//!   form post carrying this browser's form token (`forms`), so signing in
//!   needs no JavaScript. Mode `oidc`: "Sign in with <issuer>".
//! - `POST /ui/sign-in`: a token becomes a session cookie: the page's form
//!   (urlencoded, its form token checked; 303 to `next`, or back to the
//!   page saying why) or `{"token", "next"?}` as JSON (`{"next"}`).
//! - `GET /ui/auth/oidc`: to the provider with authorization code + PKCE
//!   (S256) + state + nonce; the three are kept in a short-lived HttpOnly
//!   cookie, so any replica can finish the sign-in.
//! - `GET /ui/auth/callback`: the code is exchanged, the ID token checked
//!   (signature, issuer, audience = client id, expiry, nonce), and a
//!   session row created.
//! - `POST /ui/sign-out` with the form token (the header's form, or
//!   `{"form_token"}`): the row is deleted, the cookie cleared.
//! - `GET /auth/me`: who the caller is, for the UI.

use crate::config::AuthMode;
use crate::domain::principal::{Principal, Role};
use crate::http::auth::identity::{Identity, peer};
use crate::http::auth::session::{self, COOKIE};
use crate::http::auth::target::{encode, local_target};
use crate::http::error::ApiError;
use crate::http::extract::ApiJson;
use crate::http::html::{escape, html_page};
use crate::http::state::AppState;
use crate::store::sessions::Session;
use app::models::Viewer;
use axum::Json;
use axum::extract::{FromRequest, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde::Deserialize;
use sha2::{Digest, Sha256};

const OIDC_COOKIE: &str = "stopgo_oidc";

#[derive(Deserialize)]
pub(crate) struct NextQuery {
    next: Option<String>,
    /// Set when a posted sign-in failed: `token` (not one of ours) or
    /// `wait` (too many failures from this address).
    failed: Option<String>,
}

/// `GET /ui/sign-in`.
pub(crate) async fn page(
    State(state): State<AppState>,
    Query(q): Query<NextQuery>,
    req: Request,
) -> Response {
    let next = local_target(q.next.as_deref());
    let body = match state.auth.mode {
        AuthMode::Tokens => {
            let token = crate::http::auth::form_token::token(req.headers(), req.extensions())
                .unwrap_or_default();
            let error = match q.failed.as_deref() {
                Some("wait") => {
                    Some("Too many failed sign-ins from this address: wait a minute and try again.")
                }
                Some(_) => Some("That token is not one of this agent's operator tokens."),
                None => None,
            };
            format!(
                r#"<form id="sign-in" method="post" action="/ui/sign-in">
<input type="hidden" name="next" value="{next}">
<input type="hidden" name="form_token" value="{token}">
<label for="token">Operator token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<button type="submit" class="primary">Sign in</button>
<p id="sign-in-error" class="error" role="alert"{hidden}>{error}</p>
</form>"#,
                next = escape(&next),
                token = escape(&token),
                hidden = if error.is_some() { "" } else { " hidden" },
                error = error.unwrap_or(""),
            )
        }
        AuthMode::Oidc => {
            let issuer = state
                .auth
                .oidc
                .as_ref()
                .map(|o| o.config().issuer.clone())
                .unwrap_or_default();
            format!(
                r#"<p><a class="button primary" id="oidc-sign-in" href="/ui/auth/oidc?next={}">Sign in with {}</a></p>"#,
                encode(&next),
                escape(&issuer)
            )
        }
        AuthMode::Proxy => {
            "<p>Sign-in is handled by the authenticating proxy in front of this agent.</p>".into()
        }
        AuthMode::None => format!(
            r#"<p>This agent has no operator authentication (auth mode <code>none</code>): no sign-in is needed.</p><p><a href="{}">Continue</a></p>"#,
            escape(&next)
        ),
    };
    html_page(&state.leptos, "Sign in", &body)
}

#[derive(Deserialize)]
pub(crate) struct TokenSignIn {
    token: String,
    #[serde(default)]
    next: Option<String>,
}

/// `POST /ui/sign-in`: the page's form (urlencoded: 303 to `next`, or
/// back to the page saying why), or `{"token", "next"?}` → `{"next"}`;
/// either way the session cookie.
pub(crate) async fn with_token(
    State(state): State<AppState>,
    req: Request,
) -> Result<Response, ApiError> {
    let ip = peer(&req);
    if !crate::http::auth::origin::is_json(req.headers()) {
        let super::forms::UiForm(f) = super::forms::UiForm::from_request(req, &state).await?;
        let next = local_target(f.get("next"));
        let body = TokenSignIn {
            token: f.get("token").unwrap_or_default().to_string(),
            next: Some(next.clone()),
        };
        return Ok(match sign_in_with(&state, ip, body).await {
            Ok((cookie, _)) => {
                let mut r = see_other(&next);
                r.headers_mut().append(header::SET_COOKIE, cookie);
                r
            }
            Err(e) => {
                let why = if matches!(e, ApiError::TooManyRequests { .. }) {
                    "wait"
                } else if matches!(e, ApiError::Unauthorized(_)) {
                    "token"
                } else {
                    return Err(e);
                };
                see_other(&format!("/ui/sign-in?next={}&failed={why}", encode(&next)))
            }
        });
    }
    let ApiJson(body) =
        <ApiJson<TokenSignIn> as axum::extract::FromRequest<AppState>>::from_request(req, &state)
            .await?;
    let next = local_target(body.next.as_deref());
    let (cookie, name) = sign_in_with(&state, ip, body).await?;
    let mut r = Json(serde_json::json!({"next": next, "name": name})).into_response();
    r.headers_mut().append(header::SET_COOKIE, cookie);
    Ok(r)
}

/// `303 See Other` to `to` (a path of this site).
fn see_other(to: &str) -> Response {
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(to) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

/// Checks a token sign-in: the session's `Set-Cookie` and the principal's
/// name, or why not (failures count against the address).
async fn sign_in_with(
    state: &AppState,
    ip: std::net::IpAddr,
    body: TokenSignIn,
) -> Result<(HeaderValue, String), ApiError> {
    if state.auth.mode != AuthMode::Tokens {
        return Err(ApiError::BadRequest(format!(
            "signing in with a token needs auth mode `tokens` (this agent uses `{}`)",
            state.auth.mode.as_str()
        )));
    }
    if let Some(wait) = state.auth.failures.blocked(ip) {
        return Err(ApiError::TooManyRequests { wait });
    }
    let Some(p) = state.auth.tokens.find(body.token.trim()) else {
        state.auth.failures.fail(ip);
        let details = serde_json::json!({"route": "/ui/sign-in", "reason": "unknown token", "peer": ip.to_string()});
        if state.auth.denied_rows.blocked(ip).is_none() {
            state.auth.denied_rows.fail(ip);
            state
                .store
                .audit("-".into(), "auth.denied", details)
                .await?;
        }
        return Err(ApiError::Unauthorized(
            "that token is not one of this agent's operator tokens".into(),
        ));
    };
    let cookie = start_session(state, &p, "token").await?;
    Ok((cookie, p.name.clone()))
}

/// Stores a session for `p`; returns its `Set-Cookie`.
async fn start_session(
    state: &AppState,
    p: &Principal,
    method: &'static str,
) -> Result<HeaderValue, ApiError> {
    let hours = u64::from(state.auth.session_hours);
    let (value, hash) = session::new_session();
    let expires = chrono::Utc::now() + chrono::Duration::hours(hours as i64);
    let s = Session {
        name: p.name.clone(),
        roles: p.roles.names().into_iter().map(str::to_string).collect(),
        expires_at: expires.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    };
    state.store.sign_in(hash, s, method).await?;
    tracing::info!(principal = %p.name, method, "signed in");
    Ok(session::set_cookie(
        COOKIE,
        &value,
        hours * 3600,
        state.auth.secure_cookies,
    ))
}

/// `POST /ui/sign-out`: the header's form (urlencoded) or
/// `{"form_token"}`, with this browser's form token.
pub(crate) async fn sign_out(
    State(state): State<AppState>,
    req: Request,
) -> Result<Response, ApiError> {
    let headers = req.headers().clone();
    if crate::http::auth::origin::is_json(&headers) {
        let (parts, body) = req.into_parts();
        let ApiJson(b) =
            <ApiJson<serde_json::Value> as axum::extract::FromRequest<AppState>>::from_request(
                Request::from_parts(parts.clone(), body),
                &state,
            )
            .await?;
        let sent = b
            .get(crate::http::auth::form_token::FIELD)
            .and_then(|v| v.as_str());
        if !crate::http::auth::form_token::check(&parts.headers, &parts.extensions, sent) {
            return Err(ApiError::Forbidden(
                "signing out needs this browser's form_token (from GET /auth/me)".into(),
            ));
        }
    } else {
        super::forms::UiForm::from_request(req, &state).await?;
    }
    if let Some(c) = session::read_cookie(&headers, COOKIE) {
        // A grant never outlives the sign-in it was made in: the sign-out
        // revokes them in its transaction.
        state.engine.sign_out(session::digest(&c)).await?;
    }
    let wants_html = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/html"));
    let mut r = if wants_html {
        let mut r = StatusCode::SEE_OTHER.into_response();
        r.headers_mut()
            .insert(header::LOCATION, HeaderValue::from_static("/ui/sign-in"));
        r
    } else {
        Json(serde_json::json!({"signed_out": true})).into_response()
    };
    r.headers_mut().append(
        header::SET_COOKIE,
        session::set_cookie(COOKIE, "", 0, state.auth.secure_cookies),
    );
    Ok(r)
}

/// Who `identity` is, as the UI shows it (`GET /auth/me`, and the page
/// renderer's context), with the token this request's forms carry.
pub(crate) fn me(state: &AppState, headers: &HeaderMap, ext: &axum::http::Extensions) -> Viewer {
    Viewer {
        form_token: crate::http::auth::form_token::token(headers, ext),
        ..viewer(state, ext.get::<Identity>())
    }
}

fn viewer(state: &AppState, identity: Option<&Identity>) -> Viewer {
    let p = identity.map(|i| i.0.clone());
    let known = identity.is_some_and(Identity::known);
    Viewer {
        mode: state.auth.mode.as_str().to_string(),
        signed_in: known && state.auth.enforced(),
        name: p.as_ref().filter(|_| known).map(|p| p.name.clone()),
        roles: p
            .as_ref()
            .map(|p| p.roles.names().into_iter().map(String::from).collect())
            .unwrap_or_default(),
        can_decide: p.is_some_and(|p| p.allow(Role::Approver)),
        separation_of_duties: state.auth.enforced() && state.auth.separation_of_duties,
        warning: state
            .auth
            .open_warning
            .then(|| crate::http::auth::NO_AUTH_BANNER.to_string()),
        form_token: None,
    }
}

/// `GET /auth/me`.
pub(crate) async fn whoami(State(state): State<AppState>, req: Request) -> Json<Viewer> {
    Json(me(&state, req.headers(), req.extensions()))
}

/// The site's base URL for redirects back to us.
fn base_url(state: &AppState, h: &HeaderMap) -> String {
    if let Some(u) = &state.auth.public_url {
        return u.trim_end_matches('/').to_string();
    }
    let host = h
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("localhost");
    format!("http://{host}")
}

#[derive(serde::Serialize, Deserialize)]
struct Pending {
    state: String,
    nonce: String,
    verifier: String,
    next: String,
}

/// `GET /ui/auth/oidc?next=`: off to the provider.
pub(crate) async fn oidc_start(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<NextQuery>,
) -> Response {
    let Some(o) = state.auth.oidc.as_ref() else {
        return html_error(
            &state,
            StatusCode::NOT_FOUND,
            "Sign-in with an OpenID provider is not configured (auth mode `oidc`).",
        );
    };
    let Some(client_id) = o.config().client_id.clone() else {
        return html_error(
            &state,
            StatusCode::NOT_FOUND,
            "Browser sign-in needs auth.oidc.client_id in agent.yaml.",
        );
    };
    let d = match o.discovery().await {
        Ok(d) => d,
        Err(e) => {
            tracing::error!(error = %e, "cannot start an OpenID sign-in");
            return html_error(
                &state,
                StatusCode::SERVICE_UNAVAILABLE,
                "The identity provider cannot be reached; try again shortly.",
            );
        }
    };
    let p = Pending {
        state: session::random_token(24),
        nonce: session::random_token(24),
        verifier: session::random_token(48),
        next: local_target(q.next.as_deref()),
    };
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(p.verifier.as_bytes()));
    let redirect = format!("{}/ui/auth/callback", base_url(&state, &headers));
    let sep = if d.authorization_endpoint.contains('?') {
        '&'
    } else {
        '?'
    };
    let url = format!(
        "{}{sep}response_type=code&client_id={}&redirect_uri={}&scope={}&state={}&nonce={}&code_challenge={challenge}&code_challenge_method=S256",
        d.authorization_endpoint,
        form(&client_id),
        form(&redirect),
        form("openid profile email"),
        p.state,
        p.nonce
    );
    let cookie = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(serde_json::to_vec(&p).unwrap_or_default());
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(&url) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r.headers_mut().append(
        header::SET_COOKIE,
        session::set_cookie(OIDC_COOKIE, &cookie, 600, state.auth.secure_cookies),
    );
    r
}

/// Percent-encodes a form or query value.
fn form(s: &str) -> String {
    encode(s).replace('/', "%2F")
}

#[derive(Deserialize)]
pub(crate) struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

/// `GET /ui/auth/callback`: the provider sent the browser back.
pub(crate) async fn oidc_callback(
    State(state): State<AppState>,
    Query(cb): Query<Callback>,
    req: Request,
) -> Response {
    let ip = peer(&req);
    let headers = req.headers().clone();
    let Some(o) = state.auth.oidc.as_ref() else {
        return html_error(
            &state,
            StatusCode::NOT_FOUND,
            "Sign-in with an OpenID provider is not configured.",
        );
    };
    let pending: Option<Pending> = session::read_cookie(&headers, OIDC_COOKIE)
        .and_then(|c| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(c)
                .ok()
        })
        .and_then(|b| serde_json::from_slice(&b).ok());
    let fail = |status: StatusCode, why: &str| {
        let mut r = html_error(&state, status, why);
        r.headers_mut().append(
            header::SET_COOKIE,
            session::set_cookie(OIDC_COOKIE, "", 0, false),
        );
        r
    };
    if let Some(e) = cb.error {
        return fail(
            StatusCode::UNAUTHORIZED,
            &format!("The identity provider refused the sign-in ({e})."),
        );
    }
    let (Some(p), Some(code), Some(got_state)) = (pending, cb.code, cb.state) else {
        return fail(
            StatusCode::BAD_REQUEST,
            "This sign-in link is incomplete or expired: start again.",
        );
    };
    if !bool::from(subtle::ConstantTimeEq::ct_eq(
        p.state.as_bytes(),
        got_state.as_bytes(),
    )) {
        state.auth.failures.fail(ip);
        return fail(
            StatusCode::BAD_REQUEST,
            "The sign-in state does not match (was it started in another browser?): start again.",
        );
    }
    match finish_oidc(&state, o, &headers, &p, &code).await {
        Ok(principal) => match start_session(&state, &principal, "oidc").await {
            Ok(cookie) => {
                let mut r = StatusCode::SEE_OTHER.into_response();
                if let Ok(v) = HeaderValue::from_str(&p.next) {
                    r.headers_mut().insert(header::LOCATION, v);
                }
                r.headers_mut().append(header::SET_COOKIE, cookie);
                r.headers_mut().append(
                    header::SET_COOKIE,
                    session::set_cookie(OIDC_COOKIE, "", 0, state.auth.secure_cookies),
                );
                r
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot store a session");
                fail(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "The session could not be stored; see the agent's log.",
                )
            }
        },
        Err((status, why)) => {
            tracing::warn!(reason = %why, "OpenID sign-in failed");
            if status == StatusCode::UNAUTHORIZED {
                state.auth.failures.fail(ip);
            }
            fail(status, &why)
        }
    }
}

async fn finish_oidc(
    state: &AppState,
    o: &crate::http::auth::oidc::Oidc,
    headers: &HeaderMap,
    p: &Pending,
    code: &str,
) -> Result<Principal, (StatusCode, String)> {
    let unavailable = |e: String| {
        (
            StatusCode::BAD_GATEWAY,
            format!("The identity provider could not be asked: {e}"),
        )
    };
    let d = o
        .discovery()
        .await
        .map_err(|e| unavailable(e.to_string()))?;
    let c = o.config();
    let client_id = c.client_id.clone().unwrap_or_default();
    let redirect = format!("{}/ui/auth/callback", base_url(state, headers));
    let mut body = format!(
        "grant_type=authorization_code&code={}&redirect_uri={}&code_verifier={}",
        form(code),
        form(&redirect),
        form(&p.verifier)
    );
    let mut req = o
        .http()
        .post(&d.token_endpoint)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    match &c.client_secret {
        Some(s) => req = req.basic_auth(&client_id, Some(s.expose())),
        None => body.push_str(&format!("&client_id={}", form(&client_id))),
    }
    let resp = req
        .body(body)
        .send()
        .await
        .map_err(|e| unavailable(e.to_string()))?;
    let status = resp.status();
    let json: serde_json::Value = resp.json().await.map_err(|e| unavailable(e.to_string()))?;
    if !status.is_success() {
        let err = json
            .get("error")
            .and_then(|e| e.as_str())
            .unwrap_or("unknown error");
        return Err((
            StatusCode::UNAUTHORIZED,
            format!("The identity provider refused the code ({err}): start again."),
        ));
    }
    let id_token = json
        .get("id_token")
        .and_then(|t| t.as_str())
        .ok_or_else(|| {
            (
                StatusCode::BAD_GATEWAY,
                "The identity provider sent no ID token.".to_string(),
            )
        })?;
    let claims = o.validate(id_token, &client_id).await.map_err(|e| {
        (
            StatusCode::UNAUTHORIZED,
            format!("The ID token was refused: {e}"),
        )
    })?;
    if claims.get("nonce").and_then(|n| n.as_str()) != Some(p.nonce.as_str()) {
        return Err((
            StatusCode::UNAUTHORIZED,
            "The ID token's nonce does not match this sign-in.".into(),
        ));
    }
    o.principal(&claims, crate::domain::principal::Source::Session)
        .map_err(|e| (StatusCode::UNAUTHORIZED, e.to_string()))
}

fn html_error(state: &AppState, status: StatusCode, why: &str) -> Response {
    let mut r = html_page(
        &state.leptos,
        "Sign-in failed",
        &format!(
            r#"<p class="error" role="alert">{}</p><p><a href="/ui/sign-in">Try again</a></p>"#,
            escape(why)
        ),
    );
    *r.status_mut() = status;
    r
}
