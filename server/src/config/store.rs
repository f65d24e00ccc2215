//! `store:` (REPLICAS.md §1): where durable state lives. SQLite in
//! `data_dir/agent.db` by default; PostgreSQL when several replicas share
//! one state.

use super::auth::Secret;
use super::error::Problem;
use serde::Deserialize;

/// `store:`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    #[serde(default)]
    pub backend: StoreBackend,
    /// `postgresql://user@host:port/db` (postgres only); a secret, since it
    /// may carry a password: never logged or shown.
    #[serde(default)]
    pub url: Option<Secret>,
    /// Pool size (postgres). Unset: 16, or two per core when the database
    /// is on this host (see `store/postgres/pool_size.rs`).
    #[serde(default)]
    pub max_connections: Option<u32>,
    /// How long a replica owns a running turn without a heartbeat.
    #[serde(default = "default_lease_seconds")]
    pub lease_seconds: u64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            backend: StoreBackend::default(),
            url: None,
            max_connections: None,
            lease_seconds: default_lease_seconds(),
        }
    }
}

/// `store.backend`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreBackend {
    #[default]
    Sqlite,
    Postgres,
}

fn default_lease_seconds() -> u64 {
    30
}

impl StoreConfig {
    /// What is wrong with it, by key path.
    pub fn problems(&self, p: &mut Vec<Problem>) {
        match (self.backend, &self.url) {
            (StoreBackend::Postgres, None) => p.push(Problem::new(
                "store.url",
                "is required with backend: postgres, e.g. \"${DATABASE_URL}\" holding postgresql://user@host:5432/db",
            )),
            (StoreBackend::Postgres, Some(url)) => {
                let u = url.expose();
                if !(u.starts_with("postgresql://") || u.starts_with("postgres://")) {
                    p.push(Problem::new(
                        "store.url",
                        "must start with postgresql:// (e.g. postgresql://user@host:5432/db)",
                    ));
                }
            }
            (StoreBackend::Sqlite, Some(_)) => p.push(Problem::new(
                "store.url",
                "is only used with backend: postgres (SQLite lives in data_dir/agent.db)",
            )),
            (StoreBackend::Sqlite, None) => {}
        }
        if let Some(n) = self.max_connections.filter(|n| !(1..=1000).contains(n)) {
            p.push(Problem::new(
                "store.max_connections",
                format!(
                    "{n} is out of range: use 1 to 1000 (default 16; two per core when the database is on this host)"
                ),
            ));
        }
        if !(3..=3600).contains(&self.lease_seconds) {
            p.push(Problem::new(
                "store.lease_seconds",
                format!(
                    "{} is out of range: use 3 to 3600 (default 30)",
                    self.lease_seconds
                ),
            ));
        }
    }
}
