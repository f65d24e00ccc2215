//! Network facts about a configured address.
//!
//! Binding a socket is `mcp_serve::listen` (shared with the built-in MCP
//! servers and the tests' fakes).

/// Whether `host` (a config's `host`) only listens on this machine.
pub fn is_loopback_host(host: &str) -> bool {
    let h = host.trim().trim_start_matches('[').trim_end_matches(']');
    h.eq_ignore_ascii_case("localhost")
        || h.parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}
