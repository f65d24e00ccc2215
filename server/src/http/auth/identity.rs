//! Who the caller is, as the request carries it: the [`Identity`] the
//! guard puts into the request's extensions, the bearer token it read and
//! the peer it came from. Here, below the guard, because handlers, the
//! caller's context and the form token read them too.

use crate::domain::principal::{Principal, Roles, Source};
use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderMap, header};
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

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

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
