//! The pool of connections to one database ([`Pg`]): opening it (retrying
//! for 30 s, migrating), warming it, and running a closure's statements in
//! one transaction on a pooled connection.

use super::conn::Conn;
use super::held_leases::Leases;
use super::migrations::migrate;
use super::mode::Mode;
use super::pool_size;
use super::tx::PgTx;
use crate::store::error::StoreError;
use crate::store::tx::Tx;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long startup waits for the database.
const CONNECT_FOR: Duration = Duration::from_secs(30);

/// A pool of connections to one database.
#[derive(Clone)]
pub(crate) struct Pg {
    pub(super) inner: Arc<PgInner>,
}

pub(super) struct PgInner {
    pub(super) config: tokio_postgres::Config,
    /// Where the database is, without credentials (for messages).
    pub(super) shown: String,
    idle: Mutex<Vec<Conn>>,
    /// Connections open, idle or in use (see [`Pg::warm`]).
    opened: AtomicUsize,
    max_connections: usize,
    permits: tokio::sync::Semaphore,
    audit_key: Option<Arc<[u8]>>,
    pub(super) leases: Leases,
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
                leases: Leases::new(lease_seconds),
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
    pub(super) async fn on_conn<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Conn, &Leases) -> Result<T, postgres::Error> + Send + 'static,
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
    let leases = Leases::new(1);
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
    leases: &Leases,
    f: impl FnOnce(&dyn Tx) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let tx = PgTx::new(conn, mode, audit_key, leases);
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
