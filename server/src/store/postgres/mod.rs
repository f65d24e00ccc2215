//! The PostgreSQL backend (`store.backend: postgres`): several replicas
//! share one database.
//!
//! - **Synchronous intents, blocking pool.** The store's intents are
//!   written once against [`Tx`](super::Tx), a synchronous trait (rusqlite
//!   is synchronous). A pooled connection is `tokio-postgres` driven from
//!   the blocking pool on a runtime of its own (`conn.rs`), so the same
//!   closures run on PostgreSQL. `sqlx` is async-only: every intent would
//!   have to be written twice. An async semaphore of `max_connections`
//!   permits bounds how many transactions run, so a burst of turns waits
//!   without tying up threads.
//! - **Statements are prepared once per connection** and cached by their
//!   text, and planned the way PostgreSQL chooses (`plan_cache_mode =
//!   auto`). Forcing generic plans in write transactions (session 17) had a
//!   connection keep the plan made while a table was empty: the turn's
//!   read of its messages became a sequential scan of every message, 5 ms
//!   a turn after 17,000 messages, until autovacuum's next `ANALYZE`.
//! - **Writes run under READ COMMITTED** with conditional updates (the loser
//!   of a race sees zero rows); reads run in a `REPEATABLE READ READ ONLY`
//!   transaction, so a page and its counts come from one snapshot.
//! - **One file per entity** (`conversations.rs`, `messages.rs`, ...,
//!   mirroring `sqlite/`), each implementing its sub-trait of
//!   [`Tx`](super::Tx) on [`PgTx`](tx::PgTx) in PostgreSQL's dialect.
//! - **Round trips are what a turn costs** here, so statements are
//!   pipelined (`tx.rs`): `BEGIN`, the fence and every write whose answer
//!   nobody waits for go with the next statement that is waited for, or
//!   with the audit rows and `COMMIT`; a transaction that issued nothing
//!   sends nothing, and a read of one statement ([`Mode::Single`]) runs
//!   without `BEGIN`/`COMMIT` (one statement is one snapshot).
//! - **Migrations** take an advisory lock, so replicas starting together
//!   migrate once. A database that cannot be reached is retried for 30 s.

mod approvals;
mod audit;
mod card_pins;
mod conn;
mod conversations;
mod counts;
mod events;
mod grants;
mod leases;
mod messages;
mod outbox;
mod pins;
mod pool_size;
mod push;
mod questions;
mod sessions;
mod tx;

pub(crate) use events::EventRow;
pub(crate) use leases::Beat;

/// How a closure's statements are grouped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A read-write transaction (READ COMMITTED).
    Write,
    /// A read-only snapshot (REPEATABLE READ READ ONLY).
    Read,
    /// One read statement on its own, no transaction around it; a second
    /// statement is refused (it would not share the first one's snapshot).
    Single,
}

impl Mode {
    /// What opens the transaction (`None`: there is none).
    fn begin(self) -> Option<&'static str> {
        match self {
            Mode::Write => Some("BEGIN"),
            Mode::Read => Some("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"),
            Mode::Single => None,
        }
    }
}

use super::StoreError;
use super::tx::Tx;
use conn::Conn;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Schema versions, in order; index 0 creates version 1.
const MIGRATIONS: &[&str] = &[
    include_str!("v1.sql"),
    include_str!("v2.sql"),
    include_str!("v3.sql"),
    include_str!("v4.sql"),
    include_str!("v5.sql"),
    include_str!("v6.sql"),
    include_str!("v7.sql"),
    include_str!("v8.sql"),
    include_str!("v9.sql"),
    include_str!("v10.sql"),
    include_str!("../grants.sql"),    // v11
    include_str!("../card_pins.sql"), // v12
];
/// The advisory lock migrations run under (any constant shared by replicas).
const MIGRATION_LOCK: i64 = 0x5354_4f50_474f; // "STOPGO"
/// How long startup waits for the database.
const CONNECT_FOR: Duration = Duration::from_secs(30);

/// A pool of connections to one database.
#[derive(Clone)]
pub(crate) struct Pg {
    inner: Arc<PgInner>,
}

struct PgInner {
    config: tokio_postgres::Config,
    /// Where the database is, without credentials (for messages).
    shown: String,
    idle: Mutex<Vec<Conn>>,
    /// Connections open, idle or in use (see [`Pg::warm`]).
    opened: AtomicUsize,
    max_connections: usize,
    permits: tokio::sync::Semaphore,
    audit_key: Option<Arc<[u8]>>,
    leases: leases::Leases,
    /// Round trips of the pool's connections (see [`Pg::round_trips`]).
    #[cfg(test)]
    trips: Arc<AtomicUsize>,
}

impl Pg {
    /// Connects (retrying for 30 s), migrates under the migration lock, and
    /// keeps up to `max_connections` connections (unset: see `pool_size`).
    /// Blocking: call it before the server starts, off the async workers.
    pub(crate) fn open(
        url: &str,
        max_connections: Option<u32>,
        lease_seconds: u32,
        audit_key: Option<Arc<[u8]>>,
    ) -> Result<Pg, StoreError> {
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|e| StoreError::Backend(format!("store.url is not a PostgreSQL URL: {e}")))?;
        config
            .connect_timeout(Duration::from_secs(5))
            .application_name("stopgo-agent");
        let shown = describe(&config);
        let started = std::time::Instant::now();
        let first = loop {
            match Conn::connect(&config) {
                Ok(c) => break c,
                Err(e) if started.elapsed() < CONNECT_FOR => {
                    tracing::warn!(database = %shown, error = %e, "PostgreSQL is not reachable yet; retrying for up to 30 s");
                    std::thread::sleep(Duration::from_secs(1));
                }
                Err(e) => {
                    return Err(StoreError::Backend(format!(
                        "cannot reach PostgreSQL at {shown} after 30 s: {e}"
                    )));
                }
            }
        };
        migrate(&config, &shown)?;
        let (size, why) = match max_connections {
            Some(n) => (n, "store.max_connections"),
            None => pool_size::default_for(&config),
        };
        tracing::info!(database = %shown, connections = size, why, "PostgreSQL pool");
        let max_connections = size.max(1) as usize;
        let pg = Pg {
            inner: Arc::new(PgInner {
                config,
                shown,
                idle: Mutex::new(vec![first]),
                opened: AtomicUsize::new(1),
                max_connections,
                permits: tokio::sync::Semaphore::new(max_connections),
                audit_key,
                leases: leases::Leases::new(lease_seconds),
                #[cfg(test)]
                trips: Arc::default(),
            }),
        };
        Ok(pg)
    }

    /// Opens the pool's other connections in the background, one at a
    /// time, so that the first burst of work after a start does not pay
    /// for them: each is a PostgreSQL backend to start, with its caches
    /// cold. 1,000 turns in flight on three fresh replicas took 2.0-2.2 s,
    /// against 1.56 s once their pools were open. Each connection waits for
    /// a permit like any job; the first failure ends the warming (work
    /// opens connections on demand anyway).
    pub(crate) async fn warm(&self) {
        while self.inner.opened.load(Ordering::Relaxed) < self.inner.max_connections {
            let Ok(_permit) = self.inner.permits.acquire().await else {
                return;
            };
            let inner = self.inner.clone();
            let opened = tokio::task::spawn_blocking(move || match inner.connect() {
                Ok(conn) => {
                    inner.idle.lock().unwrap_or_else(|p| p.into_inner()).push(conn);
                    true
                }
                Err(e) => {
                    tracing::debug!(error = %e, "stopped opening the pool's connections ahead of use");
                    false
                }
            })
            .await;
            if !matches!(opened, Ok(true)) {
                return;
            }
        }
    }

    /// Where the database is (host, port, name; never a password).
    pub(crate) fn shown(&self) -> &str {
        &self.inner.shown
    }

    /// Runs `f` in one transaction: a write under READ COMMITTED, or a
    /// read in a consistent read-only snapshot (or a single statement, see
    /// [`Mode`]). Committed when it returns `Ok`; rolled back if `f` fails
    /// or panics.
    pub(crate) async fn run<T, F>(&self, mode: Mode, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&dyn Tx) -> Result<T, StoreError> + Send + 'static,
    {
        let inner = self.inner.clone();
        self.with_conn(move |conn| {
            in_transaction(conn, mode, inner.audit_key.as_deref(), &inner.leases, f)
        })
        .await
    }

    /// Runs `f` on a pooled connection outside an explicit transaction
    /// (each statement commits on its own, unless `f` pipelines one), with
    /// the connection's prepared statements: one round trip per statement.
    async fn on_conn<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Conn, &leases::Leases) -> Result<T, postgres::Error> + Send + 'static,
    {
        let inner = self.inner.clone();
        self.with_conn(move |conn| Ok(f(conn, &inner.leases)?))
            .await
    }

    /// Runs `f` with a pooled connection on the blocking pool, within the
    /// pool's bound; a connection that broke is not returned to the pool.
    async fn with_conn<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Conn) -> Result<T, StoreError> + Send + 'static,
    {
        let _permit = self
            .inner
            .permits
            .acquire()
            .await
            .map_err(|e| StoreError::Worker(e.to_string()))?;
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let idle = inner.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
            let mut conn = match idle {
                Some(c) if !c.is_closed() => c,
                stale => {
                    if stale.is_some() {
                        inner.opened.fetch_sub(1, Ordering::Relaxed);
                    }
                    inner
                        .connect()
                        .map_err(|e| StoreError::Backend(format!("cannot connect: {e}")))?
                }
            };
            #[cfg(test)]
            {
                conn.trips = Some(inner.trips.clone());
            }
            let out = f(&mut conn);
            if conn.is_closed() {
                inner.opened.fetch_sub(1, Ordering::Relaxed);
            } else {
                inner
                    .idle
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(conn);
            }
            out
        })
        .await
        .map_err(|e| StoreError::Worker(e.to_string()))?
    }
}

impl Pg {
    /// Requests sent and awaited on the pool's connections so far.
    #[cfg(test)]
    pub(crate) fn round_trips(&self) -> usize {
        self.inner.trips.load(Ordering::SeqCst)
    }
}

impl PgInner {
    /// A new connection for the pool, counted in `opened`. Blocking.
    fn connect(&self) -> Result<Conn, StoreError> {
        let conn = Conn::connect(&self.config)?;
        self.opened.fetch_add(1, Ordering::Relaxed);
        Ok(conn)
    }
}

impl Drop for PgInner {
    /// A connection's runtime cannot be dropped on an async worker (it
    /// panics there): the pool is dropped on a thread of its own.
    fn drop(&mut self) {
        let idle = std::mem::take(&mut *self.idle.lock().unwrap_or_else(|p| p.into_inner()));
        if !idle.is_empty() {
            let _ = std::thread::Builder::new()
                .name("pg-close".into())
                .spawn(move || drop(idle));
        }
    }
}

/// Checks the audit chain of the database at `url` in one read-only
/// snapshot (`agent audit verify`; a running replica may keep writing).
/// Blocking, and not on an async worker.
pub(crate) fn verify_audit(
    url: &str,
    key: Option<&[u8]>,
) -> Result<crate::store::audit::Verdict, StoreError> {
    let config: tokio_postgres::Config = url
        .parse()
        .map_err(|e| StoreError::Backend(format!("store.url is not a PostgreSQL URL: {e}")))?;
    let mut conn = Conn::connect(&config).map_err(|e| {
        StoreError::Backend(format!(
            "cannot reach PostgreSQL at {}: {e}",
            describe(&config)
        ))
    })?;
    let leases = leases::Leases::new(1);
    in_transaction(&mut conn, Mode::Read, key, &leases, |tx| {
        crate::store::audit::verify(tx, key)
    })
}

/// Runs `f` between `BEGIN` and `COMMIT` (or `ROLLBACK`); `BEGIN` is sent
/// with `f`'s first statement, and nothing at all when it issued none.
fn in_transaction<T>(
    conn: &mut Conn,
    mode: Mode,
    audit_key: Option<&[u8]>,
    leases: &leases::Leases,
    f: impl FnOnce(&dyn Tx) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let tx = tx::PgTx::new(conn, mode, audit_key, leases);
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let v = f(&tx)?;
        // The writes nobody waited for, the audit rows and `COMMIT` go in
        // one round trip, the audit rows last so the chain's head is
        // locked only for the end of the transaction (and always after any
        // other lock).
        tx.commit()?;
        tx.committed();
        Ok(v)
    }))
    .unwrap_or_else(|_| {
        Err(StoreError::Worker(
            "a transaction panicked; it was rolled back".into(),
        ))
    });
    let open = tx.open();
    drop(tx);
    if out.is_err() && open {
        // A broken connection is dropped by the caller (`is_closed`).
        let _ = conn.batch_execute("ROLLBACK");
    }
    out
}

/// `host:port/dbname` of a config.
fn describe(config: &tokio_postgres::Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(h) => h.clone(),
            tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
        })
        .unwrap_or_else(|| "localhost".into());
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config.get_dbname().unwrap_or("(default)");
    format!("{host}:{port}/{db}")
}

/// Brings the schema up to date under the migration lock; refuses a
/// database newer than this binary.
fn migrate(config: &tokio_postgres::Config, shown: &str) -> Result<(), StoreError> {
    // The synchronous client, on a connection of its own: migrations run
    // once, before the pool serves anything.
    let mut client = postgres::Config::from(config.clone()).connect(postgres::NoTls)?;
    let client = &mut client;
    client.execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])?;
    let out = (|| {
        client.batch_execute(
            "CREATE TABLE IF NOT EXISTS stopgo_schema (version BIGINT NOT NULL); \
             INSERT INTO stopgo_schema (version) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM stopgo_schema)",
        )?;
        let found: i64 = client
            .query_one("SELECT version FROM stopgo_schema", &[])?
            .get(0);
        let known = MIGRATIONS.len() as i64;
        if found > known {
            return Err(StoreError::TooNew {
                path: shown.to_string(),
                found,
                known,
            });
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
            let mut tx = client.transaction()?;
            tx.batch_execute(sql)?;
            tx.execute("UPDATE stopgo_schema SET version = $1", &[&(i as i64 + 1)])?;
            tx.commit()?;
            tracing::info!(database = %shown, version = i + 1, "PostgreSQL schema migrated");
        }
        Ok(())
    })();
    let unlocked = client.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK]);
    out?;
    unlocked?;
    Ok(())
}
