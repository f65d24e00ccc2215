//! Addresses as the config and the HTTP layer read them: whether a host is
//! this machine only, a browser origin, a CIDR block. (Binding a socket is
//! `mcp_serve::listen`, shared with the built-in MCP servers.)

use std::net::IpAddr;

/// Whether `host` (a config's `host`) only listens on this machine.
pub fn is_loopback_host(host: &str) -> bool {
    let h = host.trim().trim_start_matches('[').trim_end_matches(']');
    h.eq_ignore_ascii_case("localhost")
        || h.parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Whether a secret may travel to `url`: `https`, or plain `http` only to
/// this machine (`localhost`, `*.localhost`, a loopback address), where no
/// network sees it.
pub(crate) fn is_https_or_loopback(url: &url::Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => url
            .host_str()
            .is_some_and(|h| is_loopback_host(h) || h.to_ascii_lowercase().ends_with(".localhost")),
        _ => false,
    }
}

/// An origin: `scheme://host[:port]`, lower-cased, default ports dropped.
pub(crate) fn parse_origin(s: &str) -> Option<String> {
    let s = s.trim();
    let (scheme, rest) = s.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let host = rest.split(['/', '?', '#']).next()?.to_ascii_lowercase();
    if host.is_empty() || host.contains('@') || host.contains(char::is_whitespace) {
        return None;
    }
    let host = match (scheme.as_str(), host.rsplit_once(':')) {
        ("http", Some((h, "80"))) | ("https", Some((h, "443"))) => h.to_string(),
        _ => host,
    };
    Some(format!("{scheme}://{host}"))
}

/// An address range (`127.0.0.1/32`, `::1/128`; a bare address is one host).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cidr {
    net: IpAddr,
    bits: u8,
}

/// Parses `addr[/bits]`.
pub(crate) fn parse_cidr(s: &str) -> Option<Cidr> {
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
    pub(crate) fn contains(&self, ip: IpAddr) -> bool {
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
