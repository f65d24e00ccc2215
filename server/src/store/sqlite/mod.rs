//! The SQLite backend (`data_dir/agent.db`, one process): the engine that
//! runs the store's transactions on it, and, one file per entity, the
//! [`Tx`] statements in SQLite's dialect (mirrored by `postgres/`).
//!
//! - `migrations`: versioned schema upgrades.
//! - [`conversations`], [`messages`], [`approvals`], [`leases`], [`pins`],
//!   [`outbox`], [`push`], [`audit`], [`sessions`]: each entity's SQL, as
//!   plain functions on a connection, and its sub-trait of [`Tx`] on
//!   [`Connection`] calling them.
//!
//! Decisions that matter:
//! - **Every write is one transaction, committed before the caller answers
//!   its HTTP request.** The database runs in WAL mode with
//!   `synchronous=NORMAL`: a committed transaction survives a crash or
//!   `kill -9` of the agent (it is in the WAL, which the OS holds); only a
//!   power cut can lose the last few commits, a trade that keeps a commit
//!   well under a millisecond.
//! - **One write connection, a small pool of readers.** SQLite serialises
//!   writers anyway. A write that finds the write connection free and
//!   nothing queued commits right away on the caller's thread (a commit in
//!   WAL mode without `fsync` takes microseconds); otherwise it is queued
//!   for the writer thread, which commits queued writes in groups (each in
//!   its own savepoint, so one failing write never undoes another): under
//!   load, many writers share one commit. WAL lets readers run beside it,
//!   so a busy turn never blocks the UI.
//! - **No thread hop on the fast path.** Measured on a 2-core VM, a hop to
//!   another thread and back (two wake-ups) cost more than the query
//!   itself: short reads run inline on the write connection when it is
//!   free (its page cache is warm), else on an idle pooled connection;
//!   [`Store::read_long`](crate::store::Store::read_long) (pages, scans) only ever uses the pool, so writes
//!   never wait for it; a read that finds no idle connection goes to
//!   `spawn_blocking` (where new connections are opened). Writes run inline
//!   when the write connection is free. The one slow
//!   thing a commit can do, a WAL checkpoint with its `fsync`, is taken
//!   off the commit path (`wal_autocheckpoint=0`) and run by the writer
//!   thread every [`CHECKPOINT_EVERY`] writes. Reads are bounded by a
//!   semaphore to the pool's size; no `std::sync::Mutex` is ever held
//!   across an `.await`.

mod approvals;
mod audit;
mod card_pins;
mod conversations;
mod grants;
mod keys;
mod leases;
mod messages;
mod migrations;
mod outbox;
mod pins;
mod push;
mod questions;
mod sessions;

use super::audit::Verdict;
use super::error::StoreError;
use super::tx::Tx;
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Every entity's statements (each in its file); the statements that span
/// entities keep [`Tx`]'s defaults.
impl Tx for Connection {}

/// Read connections (and so concurrent reads).
const READERS: usize = 8;
/// Most write closures committed in one transaction.
const MAX_BATCH: usize = 256;
/// Commits between two WAL checkpoints. SQLite's automatic checkpoint
/// (every 1,000 pages) would run inside whichever commit crosses the line,
/// `fsync` included, possibly on an async worker; the writer thread runs it
/// instead.
pub(super) const CHECKPOINT_EVERY: usize = 500;

/// The SQLite engine: one writer, a pool of readers.
#[derive(Clone)]
pub(super) struct Sqlite {
    inner: Arc<Inner>,
}

pub(super) struct Inner {
    /// The database file.
    path: PathBuf,
    /// The one write connection. The writer thread locks it for each batch;
    /// a write that finds it free (and nothing queued) runs right away on
    /// the caller's thread.
    pub(super) writer: Arc<Mutex<Connection>>,
    /// Queue of the writer thread: writes that found the connection busy,
    /// and checkpoint requests (`None`).
    jobs: std::sync::mpsc::Sender<Option<Box<dyn WriteJob>>>,
    /// Writes queued and not yet taken by the writer thread.
    pub(super) queued: Arc<std::sync::atomic::AtomicUsize>,
    /// Commits since the last checkpoint.
    commits: std::sync::atomic::AtomicUsize,
    /// Idle read connections. Locked only to take or return one, never while
    /// a query runs.
    readers: Mutex<Vec<Connection>>,
    /// Bounds concurrent reads to the pool's size, so a burst of reads waits
    /// for a connection instead of opening hundreds.
    read_permits: tokio::sync::Semaphore,
    /// The audit chain's HMAC key (`audit.key`), registered on every
    /// connection's `stopgo_audit_hash` (see [`audit`]).
    audit_key: Option<Arc<[u8]>>,
}

/// What a job does once its batch has committed (`None`) or failed (the error).
type Finisher = Box<dyn FnOnce(Option<&str>) + Send>;

/// One write closure queued for the writer thread.
trait WriteJob: Send {
    /// Runs inside the batch's transaction, in its own savepoint; returns
    /// what to do once the batch has committed (or failed to).
    fn run(self: Box<Self>, conn: &Connection) -> Finisher;
    /// The batch could not start: report `error`.
    fn abort(self: Box<Self>, error: String);
}

struct Job<T, F> {
    f: F,
    reply: tokio::sync::oneshot::Sender<Result<T, StoreError>>,
}

impl<T, F> WriteJob for Job<T, F>
where
    T: Send + 'static,
    F: FnOnce(&dyn Tx) -> Result<T, StoreError> + Send + 'static,
{
    fn run(self: Box<Self>, conn: &Connection) -> Finisher {
        let Job { f, reply } = *self;
        let out = in_savepoint(conn, f);
        Box::new(move |commit_error: Option<&str>| {
            let result = match (out, commit_error) {
                (Ok(v), None) => Ok(v),
                (Ok(_), Some(e)) => Err(StoreError::Worker(format!("commit failed: {e}"))),
                (Err(e), _) => Err(e),
            };
            let _ = reply.send(result);
        })
    }

    fn abort(self: Box<Self>, error: String) {
        let _ = self.reply.send(Err(StoreError::Worker(error)));
    }
}

/// Runs `f` in a savepoint: its changes are kept if it succeeds and undone
/// if it fails or panics, without touching the rest of the batch.
fn in_savepoint<T>(
    conn: &Connection,
    f: impl FnOnce(&dyn Tx) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    run_sql(conn, "SAVEPOINT job")?;
    let out =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(conn))).unwrap_or_else(|_| {
            Err(StoreError::Worker(
                "a write panicked; it was rolled back".into(),
            ))
        });
    match &out {
        Ok(_) => run_sql(conn, "RELEASE job")?,
        Err(_) => {
            run_sql(conn, "ROLLBACK TO job")?;
            run_sql(conn, "RELEASE job")?;
        }
    }
    out
}

/// Runs one parameterless statement (`BEGIN`, `COMMIT`, a savepoint) from
/// the connection's statement cache: a commit is several of these, and
/// parsing them anew each time showed up in profiles.
fn run_sql(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

/// Runs `f` in one read transaction (a consistent snapshot) on `conn`. A
/// panic in `f` becomes an error, so the connection never stays inside a
/// transaction.
fn read_on<T>(
    conn: &Connection,
    f: impl FnOnce(&dyn Tx) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    run_sql(conn, "BEGIN DEFERRED")?;
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(conn)))
        .unwrap_or_else(|_| Err(StoreError::Worker("a read panicked".into())));
    // A read changes nothing: ending it only releases the snapshot.
    run_sql(conn, "COMMIT")?;
    out
}

/// Runs `batch` (each job in its own savepoint) inside one
/// `BEGIN IMMEDIATE … COMMIT`, then answers every job.
fn commit_batch(conn: &Connection, batch: Vec<Box<dyn WriteJob>>) {
    if let Err(e) = run_sql(conn, "BEGIN IMMEDIATE") {
        for j in batch {
            j.abort(format!("cannot start a write transaction: {e}"));
        }
        return;
    }
    let finishers: Vec<_> = batch.into_iter().map(|j| j.run(conn)).collect();
    let commit = run_sql(conn, "COMMIT").map_err(|e| e.to_string());
    if commit.is_err() {
        let _ = run_sql(conn, "ROLLBACK");
    }
    for fin in finishers {
        fin(commit.as_ref().err().map(String::as_str));
    }
}

/// The writer thread: takes every queued job (up to [`MAX_BATCH`]) and
/// commits them as one batch. Many concurrent writers thus share one commit
/// (group commit) while each keeps all-or-nothing semantics. It also runs
/// the WAL checkpoints, so their `fsync` never stalls an async worker.
fn writer_loop(
    conn: Arc<Mutex<Connection>>,
    jobs: std::sync::mpsc::Receiver<Option<Box<dyn WriteJob>>>,
    queued: Arc<std::sync::atomic::AtomicUsize>,
) {
    use std::sync::atomic::Ordering;
    while let Ok(first) = jobs.recv() {
        let mut batch = Vec::new();
        let mut checkpoint = first.is_none();
        batch.extend(first);
        while batch.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(Some(j)) => batch.push(j),
                Ok(None) => checkpoint = true,
                Err(_) => break,
            }
        }
        let conn = conn.lock().unwrap_or_else(|p| p.into_inner());
        queued.fetch_sub(batch.len(), Ordering::AcqRel);
        if !batch.is_empty() {
            commit_batch(&conn, batch);
        }
        if checkpoint && let Err(e) = conn.execute_batch("PRAGMA wal_checkpoint(PASSIVE)") {
            tracing::warn!(error = %e, "WAL checkpoint failed; the next one will retry");
        }
    }
}

impl Sqlite {
    /// Opens the database file at `path`, migrates it and starts the writer
    /// thread.
    pub(super) fn open(path: &Path, audit_key: Option<&[u8]>) -> Result<Sqlite, StoreError> {
        let audit_key: Option<Arc<[u8]>> = audit_key.map(Arc::from);
        let shown = path.display().to_string();
        let mut writer = connect(path, &audit_key).map_err(|e| StoreError::Open {
            path: shown.clone(),
            reason: e.to_string(),
        })?;
        migrations::migrate(&mut writer, &shown)?;
        // Checkpoints are the writer thread's job (see `CHECKPOINT_EVERY`).
        writer.pragma_update(None, "wal_autocheckpoint", 0)?;
        let writer = Arc::new(Mutex::new(writer));
        let queued = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn({
                let (writer, queued) = (writer.clone(), queued.clone());
                move || writer_loop(writer, rx, queued)
            })
            .map_err(|e| StoreError::Worker(format!("cannot start the writer thread: {e}")))?;
        Ok(Sqlite {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                writer,
                jobs: tx,
                queued,
                commits: std::sync::atomic::AtomicUsize::new(0),
                readers: Mutex::new(Vec::new()),
                read_permits: tokio::sync::Semaphore::new(READERS),
                audit_key,
            }),
        })
    }

    /// The database file.
    pub(super) fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The engine's internals (tests that hold its writer).
    #[cfg(test)]
    pub(super) fn inner(&self) -> Arc<Inner> {
        self.inner.clone()
    }

    /// Runs `f` atomically; it has committed when this returns `Ok`.
    ///
    /// When the write connection is free and nothing is queued, `f` commits
    /// right here; otherwise it joins the writer thread's next batch.
    pub(super) async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&dyn Tx) -> Result<T, StoreError> + Send + 'static,
    {
        use std::sync::atomic::Ordering;
        let (reply, mut rx) = tokio::sync::oneshot::channel();
        let job: Box<dyn WriteJob> = Box::new(Job { f, reply });
        // Fast path, all synchronous (no guard lives across an `.await`).
        let done = {
            match self.idle_writer() {
                Some(conn) => {
                    commit_batch(&conn, vec![job]);
                    None
                }
                None => Some(job),
            }
        };
        match done {
            None => {
                self.count_commit();
                // The job has answered already.
                rx.try_recv()
                    .map_err(|_| StoreError::Worker("a write gave no answer".into()))?
            }
            Some(job) => {
                self.inner.queued.fetch_add(1, Ordering::AcqRel);
                if self.inner.jobs.send(Some(job)).is_err() {
                    self.inner.queued.fetch_sub(1, Ordering::AcqRel);
                    return Err(StoreError::Worker("the writer thread has stopped".into()));
                }
                self.count_commit();
                rx.await
                    .map_err(|_| StoreError::Worker("the writer thread has stopped".into()))?
            }
        }
    }

    /// The write connection, if it is free and no write is queued for the
    /// writer thread (queued writes go first). A poisoned lock is taken
    /// anyway: writes and reads catch panics, so the connection is never
    /// left inside a transaction.
    fn idle_writer(&self) -> Option<std::sync::MutexGuard<'_, Connection>> {
        let conn = match self.inner.writer.try_lock() {
            Ok(conn) => conn,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        (self.inner.queued.load(std::sync::atomic::Ordering::Acquire) == 0).then_some(conn)
    }

    /// Counts a write; every [`CHECKPOINT_EVERY`] writes, asks the writer
    /// thread for a checkpoint.
    fn count_commit(&self) {
        let n = self
            .inner
            .commits
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        if n.is_multiple_of(CHECKPOINT_EVERY) {
            let _ = self.inner.jobs.send(None);
        }
    }

    /// Runs `f` in one read transaction (a consistent snapshot). A short
    /// read may run on the write connection, holding writes back while it
    /// does; a long one always runs on a read connection.
    pub(super) async fn read_with<T, F>(&self, f: F, short: bool) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&dyn Tx) -> Result<T, StoreError> + Send + 'static,
    {
        let _permit = self
            .inner
            .read_permits
            .acquire()
            .await
            .map_err(|e| StoreError::Worker(e.to_string()))?;
        // Fastest path: the write connection, when free. Its page cache
        // holds what was just written; a pooled connection's cache is
        // dropped whenever another connection commits, and re-reading those
        // pages costs a `pread` each.
        if short && let Some(conn) = self.idle_writer() {
            return read_on(&conn, f);
        }
        // Fast path: with an idle connection at hand, run the read right
        // here. Reads are short (one conversation, one page), and a hop to
        // the blocking pool and back costs two thread wake-ups, which on a
        // small VM cost more than the read itself.
        let idle = self
            .inner
            .readers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop();
        if let Some(conn) = idle {
            let out = read_on(&conn, f);
            self.inner
                .readers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(conn);
            return out;
        }
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let idle = inner
                .readers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .pop();
            let conn = match idle {
                Some(c) => c,
                None => connect(&inner.path, &inner.audit_key)?,
            };
            let out = read_on(&conn, f);
            inner
                .readers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(conn);
            out
        })
        .await
        .map_err(|e| StoreError::Worker(e.to_string()))?
    }
}

/// Opens a connection with the settings every connection needs.
fn connect(path: &Path, audit_key: &Option<Arc<[u8]>>) -> Result<Connection, rusqlite::Error> {
    let conn = Connection::open(path)?;
    audit::register(&conn, audit_key.clone())?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    // Every query in `conversations`, `messages` and `approvals` is
    // prepared once per connection and kept.
    conn.set_prepared_statement_cache_capacity(64);
    // A cached statement stays compiled. Without the query planner
    // stability guarantee, SQLite 3.47+ recompiles a statement on every
    // run whose plan looked at a bound value: `LIMIT ?` (every page), and
    // `status = ?` on a table with a partial index `WHERE status = …`
    // (approvals). Measured: `sqlite3Reprepare` was 10 % of the home
    // page's CPU. Our plans never depend on the values bound.
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    Ok(conn)
}

/// Checks the audit chain of the database at `path` (read-only: a running
/// agent may keep writing).
pub(super) fn verify_audit(path: &Path, key: Option<&[u8]>) -> Result<Verdict, StoreError> {
    if !path.exists() {
        return Err(StoreError::Worker(format!(
            "no database at {}",
            path.display()
        )));
    }
    let conn = Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| StoreError::Open {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    read_on(&conn, |tx| crate::store::audit::verify(tx, key))
}
