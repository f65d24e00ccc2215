//! The browser's session cookie (`stopgo_session`, AUTH.md §3).
//!
//! The value is 32 bytes from a CSPRNG (rand's thread RNG, seeded by the OS); only its SHA-256 is stored
//! (`store::sessions`). The cookie is `HttpOnly` (no script reads it),
//! `SameSite=Lax` (not sent on cross-site subrequests) and `Secure` when
//! `public_url` is https.

use axum::http::{HeaderMap, HeaderValue, header};
use base64::Engine;
use rand::RngCore;
use sha2::{Digest, Sha256};

pub(crate) const COOKIE: &str = "stopgo_session";

/// A fresh session: the cookie value and the digest to store.
pub(crate) fn new_session() -> (String, String) {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let value = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let hash = digest(&value);
    (value, hash)
}

/// What the store keeps of a cookie value.
pub(crate) fn digest(value: &str) -> String {
    crate::domain::digest::hex(&Sha256::digest(value.as_bytes()))
}

/// A random URL-safe string of `n` bytes (state, nonce, PKCE verifier).
pub(crate) fn random_token(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    rand::rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A cookie's value from the request's `Cookie` headers.
pub(crate) fn read_cookie(h: &HeaderMap, name: &str) -> Option<String> {
    h.get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim().trim_matches('"').to_string())
        .filter(|v| !v.is_empty())
}

/// `Set-Cookie` for `name=value`, living `max_age` seconds (0 deletes it).
pub(crate) fn set_cookie(name: &str, value: &str, max_age: u64, secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{name}={value}; HttpOnly; SameSite=Lax; Path=/; Max-Age={max_age}{secure}"
    ))
    .unwrap_or_else(|_| HeaderValue::from_static("stopgo_invalid=; Max-Age=0; Path=/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_read_from_any_cookie_header() {
        let mut h = HeaderMap::new();
        h.append(
            header::COOKIE,
            HeaderValue::from_static("a=1; stopgo_session=abc"),
        );
        assert_eq!(read_cookie(&h, COOKIE).as_deref(), Some("abc"));
        assert_eq!(read_cookie(&h, "a").as_deref(), Some("1"));
        assert!(read_cookie(&h, "b").is_none());
        let (v, d) = new_session();
        assert_eq!(v.len(), 43);
        assert_eq!(d, digest(&v));
        assert_ne!(v, new_session().0);
    }
}
