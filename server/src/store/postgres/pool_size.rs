//! How many connections a replica's pool holds when `store.max_connections`
//! is not set.
//!
//! A connection is a PostgreSQL backend process, and here also a thread of
//! the agent's blocking pool driving it. When the database runs on the
//! agent's own host (its Unix socket, `localhost` or a loopback address),
//! both share the host's cores: connections beyond about two per core only
//! add processes that the scheduler swaps in and out, often while one holds
//! a row lock the others wait for. Measured on a 2-core machine, 32
//! concurrent turns on one agent: a pool of 4 ran 880-1,000 turns/s with a
//! p99 of 42-45 ms, a pool of 16 830-870/s with 100-140 ms, and 32 ~750/s
//! with 125-150 ms; `GET /conversations` at 32 connections had a p99 of
//! 6-9 ms against 10-11 ms. A database on another host keeps the
//! documented default of 16 (REPLICAS.md §1): there, more connections
//! hide the network's latency and take none of the agent's cores. A value
//! set in the configuration is always used as it is.

use tokio_postgres::config::Host;

/// `store.max_connections`' default for a database on another host.
pub(crate) const REMOTE: u32 = 16;

/// The pool size for `config` when none is configured, and why.
pub(crate) fn default_for(config: &tokio_postgres::Config) -> (u32, &'static str) {
    if on_this_host(config) {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let size = u32::try_from(2 * cores).unwrap_or(REMOTE).clamp(4, REMOTE);
        (
            size,
            "the database is on this host: two connections per core",
        )
    } else {
        (REMOTE, "the database is on another host")
    }
}

/// Whether every address `config` names is this host's: its Unix socket
/// (also what no host at all means), `localhost`, or a loopback address.
fn on_this_host(config: &tokio_postgres::Config) -> bool {
    let hosts = config.get_hosts().iter().all(|h| match h {
        Host::Unix(_) => true,
        Host::Tcp(name) => crate::domain::net::is_loopback_host(name),
    });
    let addrs = config.get_hostaddrs().iter().all(|ip| ip.is_loopback());
    hosts && addrs
}

#[cfg(test)]
mod tests {
    use super::{REMOTE, default_for};

    fn size(url: &str) -> u32 {
        default_for(&url.parse().expect("a URL")).0
    }

    #[test]
    fn a_database_on_this_host_gets_two_connections_per_core() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        let local = (2 * cores).clamp(4, REMOTE);
        for url in [
            "postgresql://u@127.0.0.1:5432/db",
            "postgresql://u@localhost/db",
            "postgresql://u@[::1]:5432/db",
            "postgresql://u@%2Frun%2Fpostgresql/db",
            "postgresql:///db",
        ] {
            assert_eq!(size(url), local, "{url}");
        }
    }

    #[test]
    fn a_database_elsewhere_gets_the_documented_default() {
        for url in [
            "postgresql://u@db.example:5432/db",
            "postgresql://u@10.0.0.5/db",
            "postgresql://u@127.0.0.1,db.example/db",
        ] {
            assert_eq!(size(url), REMOTE, "{url}");
        }
    }
}
