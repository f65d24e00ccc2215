//! Form tokens: what lets a plain HTML form post change state, before the
//! page's WebAssembly has loaded or with JavaScript off (REACH.md §1).
//!
//! A JSON body is what keeps the API safe from other sites (a foreign page
//! cannot send one without a CORS preflight), and a form post is exactly
//! what a foreign page can send; so every form carries a token bound to
//! this browser, and a post without the right one is refused (403) before
//! anything is decided. The `Origin` check of `origin.rs` holds as well.
//!
//! The token is `SHA-256("stopgo form token v1" ‖ binding)`, where the
//! binding is a secret only this browser holds:
//! - signed in (modes tokens and oidc): the session cookie's value, so a
//!   token dies with its session;
//! - otherwise (mode none, mode proxy, the sign-in page itself): the
//!   `stopgo_form` cookie (32 random bytes, `HttpOnly`, `SameSite=Strict`)
//!   that every page sets when the browser has none, with the principal's
//!   name beside it, so a token works only for the person it was given to.
//!
//! Nothing is stored: any replica computes the same token from the
//! request, and the binding is never sent back (the token is a one-way
//! digest of it).

use super::identity::Identity;
use super::session::{self, COOKIE};
use crate::domain::principal::Source;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::Response;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The cookie a form token is bound to when there is no session.
pub(crate) const FORM_COOKIE: &str = "stopgo_form";
/// The form field that carries the token.
pub(crate) const FIELD: &str = "form_token";
/// How long the form cookie lives: a page left open for a month still posts.
const COOKIE_SECONDS: u64 = 30 * 24 * 3600;

/// This request's form cookie, as the page layer saw or made it.
#[derive(Clone, Debug)]
pub(crate) struct FormCookie(pub String);

/// The token of `binding`.
fn token_of(binding: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"stopgo form token v1\0");
    h.update(binding.as_bytes());
    crate::domain::digest::hex(&h.finalize())
}

/// The token forms on this request's pages carry, if the browser has what
/// one is bound to.
pub(crate) fn token(headers: &HeaderMap, ext: &axum::http::Extensions) -> Option<String> {
    let identity = ext.get::<Identity>();
    let signed_in = identity.is_some_and(|i| i.0.source == Source::Session);
    if signed_in && let Some(s) = session::read_cookie(headers, COOKIE) {
        return Some(token_of(&format!("session\0{s}")));
    }
    let cookie = ext
        .get::<FormCookie>()
        .map(|c| c.0.clone())
        .or_else(|| session::read_cookie(headers, FORM_COOKIE))?;
    let name = identity.map(|i| i.0.name.as_str()).unwrap_or("");
    Some(token_of(&format!("browser\0{cookie}\0{name}")))
}

/// Whether `sent` is this request's form token (compared in constant time).
pub(crate) fn check(headers: &HeaderMap, ext: &axum::http::Extensions, sent: Option<&str>) -> bool {
    match (token(headers, ext), sent) {
        (Some(want), Some(got)) => want.as_bytes().ct_eq(got.trim().as_bytes()).into(),
        _ => false,
    }
}

/// Whether `path` is a page (where forms are rendered).
fn is_page(path: &str) -> bool {
    path == "/" || path.starts_with("/ui/")
}

/// Middleware: a page request from a browser without a form cookie gets
/// one (in the response, and for the page being rendered now); every
/// request carries the cookie it has as a [`FormCookie`] extension.
pub(crate) async fn layer(State(secure): State<bool>, mut req: Request, next: Next) -> Response {
    let existing = session::read_cookie(req.headers(), FORM_COOKIE).filter(|v| {
        v.len() >= 32
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    });
    let made = match existing {
        Some(v) => {
            req.extensions_mut().insert(FormCookie(v));
            None
        }
        None if *req.method() == Method::GET && is_page(req.uri().path()) => {
            let v = session::random_token(32);
            req.extensions_mut().insert(FormCookie(v.clone()));
            Some(v)
        }
        None => None,
    };
    let mut resp = next.run(req).await;
    if let Some(v) = made {
        let secure = if secure { "; Secure" } else { "" };
        if let Ok(h) = HeaderValue::from_str(&format!(
            "{FORM_COOKIE}={v}; HttpOnly; SameSite=Strict; Path=/; Max-Age={COOKIE_SECONDS}{secure}"
        )) {
            resp.headers_mut().append(header::SET_COOKIE, h);
        }
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::principal::{Principal, Roles};
    use std::sync::Arc;

    fn ext(cookie: Option<&str>, name: &str, source: Source) -> axum::http::Extensions {
        let mut e = axum::http::Extensions::new();
        if let Some(c) = cookie {
            e.insert(FormCookie(c.into()));
        }
        e.insert(Identity(Arc::new(Principal {
            name: name.into(),
            roles: Roles::NONE,
            source,
            expires_at: None,
        })));
        e
    }

    /// A token is bound to the browser's secret and the person: another
    /// browser, another person or another session gets another token, and
    /// nothing is accepted without one.
    #[test]
    fn tokens_are_bound_to_the_browser_and_the_person() {
        let h = HeaderMap::new();
        let a = ext(
            Some("cookie-a-0123456789abcdef0123456789"),
            "anonymous",
            Source::Anonymous,
        );
        let t = token(&h, &a).unwrap();
        assert!(check(&h, &a, Some(&t)));
        assert!(!check(&h, &a, Some("")));
        assert!(!check(&h, &a, None));
        let b = ext(
            Some("cookie-b-0123456789abcdef0123456789"),
            "anonymous",
            Source::Anonymous,
        );
        assert!(!check(&h, &b, Some(&t)), "another browser");
        let bob = ext(
            Some("cookie-a-0123456789abcdef0123456789"),
            "bob",
            Source::Proxy,
        );
        assert!(!check(&h, &bob, Some(&t)), "another person");
        assert!(token(&h, &ext(None, "x", Source::Anonymous)).is_none());
        let mut signed = HeaderMap::new();
        signed.insert(
            header::COOKIE,
            HeaderValue::from_static("stopgo_session=s1"),
        );
        let s = ext(None, "alice", Source::Session);
        let ts = token(&signed, &s).unwrap();
        let mut other = HeaderMap::new();
        other.insert(
            header::COOKIE,
            HeaderValue::from_static("stopgo_session=s2"),
        );
        assert!(!check(&other, &s, Some(&ts)), "another session");
        assert!(!ts.contains("s1"));
    }
}
