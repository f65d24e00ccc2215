//! Mode `proxy`: identity headers set by an authenticating reverse proxy
//! (oauth2-proxy and the like).
//!
//! The headers are believed only from a peer address in `trusted_proxies`:
//! anyone else who sends them is trying to claim an identity and gets 401.
//! Groups (comma-separated) become roles through `role_map`.

use super::principal::{Principal, Roles, Source};
use crate::config::ProxyConfig;
use axum::http::HeaderMap;
use std::net::IpAddr;

/// An address range (`127.0.0.1/32`, `::1/128`; a bare address is one host).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    net: IpAddr,
    bits: u8,
}

/// Parses `addr[/bits]`.
pub fn parse_cidr(s: &str) -> Option<Cidr> {
    let s = s.trim();
    let (a, bits) = match s.split_once('/') {
        Some((a, b)) => (a, Some(b.parse::<u8>().ok()?)),
        None => (s, None),
    };
    let net: IpAddr = a.parse().ok()?;
    let max = if net.is_ipv4() { 32 } else { 128 };
    let bits = bits.unwrap_or(max);
    (bits <= max).then_some(Cidr { net, bits })
}

impl Cidr {
    pub fn contains(&self, ip: IpAddr) -> bool {
        // An IPv4 peer may arrive as an IPv4-mapped IPv6 address.
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        match (self.net, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.bits)).unwrap_or(0);
                u32::from(n) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.bits))
                    .unwrap_or(0);
                u128::from(n) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

/// The proxy settings, parsed.
pub struct Proxy {
    user_header: String,
    groups_header: Option<String>,
    role_map: Vec<(String, String)>,
    trusted: Vec<Cidr>,
}

/// What the headers say.
pub enum ProxyIdentity {
    /// No identity header: not authenticated.
    Absent,
    /// Identity headers from an untrusted peer.
    Untrusted,
    Found(Principal),
}

impl Proxy {
    pub fn new(c: &ProxyConfig) -> Proxy {
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
    pub fn identify(&self, headers: &HeaderMap, peer: Option<IpAddr>) -> ProxyIdentity {
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
