//! Mode `proxy`: identity headers set by an authenticating reverse proxy
//! (oauth2-proxy and the like).
//!
//! The headers are believed only from a peer address in `trusted_proxies`:
//! anyone else who sends them is trying to claim an identity and gets 401.
//! Groups (comma-separated) become roles through `role_map`.

use crate::config::ProxyConfig;
use crate::domain::net::Cidr;
pub(crate) use crate::domain::net::parse_cidr;
use crate::domain::principal::{Principal, Roles, Source};
use axum::http::HeaderMap;
use std::net::IpAddr;

/// The proxy settings, parsed.
pub(crate) struct Proxy {
    user_header: String,
    groups_header: Option<String>,
    role_map: Vec<(String, String)>,
    trusted: Vec<Cidr>,
}

/// What the headers say.
pub(crate) enum ProxyIdentity {
    /// No identity header: not authenticated.
    Absent,
    /// Identity headers from an untrusted peer.
    Untrusted,
    Found(Principal),
}

impl Proxy {
    pub(crate) fn new(c: &ProxyConfig) -> Proxy {
        Proxy {
            user_header: c.user_header.to_ascii_lowercase(),
            groups_header: c.groups_header.as_ref().map(|g| g.to_ascii_lowercase()),
            role_map: c
                .role_map
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            trusted: c
                .trusted_proxies
                .iter()
                .filter_map(|c| parse_cidr(c))
                .collect(),
        }
    }

    /// The principal the proxy vouches for.
    pub(crate) fn identify(&self, headers: &HeaderMap, peer: Option<IpAddr>) -> ProxyIdentity {
        let user = headers
            .get(self.user_header.as_str())
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|u| !u.is_empty());
        let groups_sent = self
            .groups_header
            .as_deref()
            .is_some_and(|g| headers.contains_key(g));
        if user.is_none() && !groups_sent {
            return ProxyIdentity::Absent;
        }
        if !peer.is_some_and(|ip| self.trusted.iter().any(|c| c.contains(ip))) {
            return ProxyIdentity::Untrusted;
        }
        let Some(user) = user else {
            return ProxyIdentity::Absent;
        };
        let groups: Vec<String> = self
            .groups_header
            .as_deref()
            .and_then(|g| headers.get(g))
            .and_then(|v| v.to_str().ok())
            .map(|v| {
                v.split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let roles = Roles::from_names(
            self.role_map
                .iter()
                .filter(|(group, _)| groups.contains(group))
                .map(|(_, role)| role.as_str()),
        );
        ProxyIdentity::Found(Principal {
            name: user.chars().take(200).collect(),
            roles,
            source: Source::Proxy,
            // The proxy says nothing about how long its word holds: grants
            // are capped instead (engine/calls/grants.rs, PROXY_FOR).
            expires_at: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidr_ranges_match_what_they_say() {
        let c = parse_cidr("10.1.0.0/16").unwrap();
        assert!(c.contains("10.1.200.3".parse().unwrap()));
        assert!(!c.contains("10.2.0.1".parse().unwrap()));
        assert!(
            parse_cidr("127.0.0.1")
                .unwrap()
                .contains("::ffff:127.0.0.1".parse().unwrap())
        );
        assert!(
            parse_cidr("::1/128")
                .unwrap()
                .contains("::1".parse().unwrap())
        );
        assert!(
            parse_cidr("0.0.0.0/0")
                .unwrap()
                .contains("8.8.8.8".parse().unwrap())
        );
        assert!(parse_cidr("1.2.3.4/33").is_none());
        assert!(parse_cidr("nonsense").is_none());
    }
}
