//! Durable state in SQLite (`data_dir/agent.db`).
//!
//! - `migrations`: versioned schema upgrades.
//! - [`conversations`], [`messages`], [`approvals`]: the SQL, as plain
//!   functions on a connection; callers compose them into one transaction
//!   with [`Store::write`] (e.g. "record the tool result and mark the approval
//!   executed" commits together or not at all).
//!
//! [`Store`] is the async facade the server uses. Decisions that matter:
//! - **Every write is one transaction, committed before the caller answers
//!   its HTTP request.** The database runs in WAL mode with
//!   `synchronous=NORMAL`: a committed transaction survives a crash or
//!   `kill -9` of the agent (it is in the WAL, which the OS holds); only a
//!   power cut can lose the last few commits, a trade that keeps a commit
//!   well under a millisecond.
//! - **One writer thread, a small pool of readers.** SQLite serialises
//!   writers anyway, so one thread owns the write connection and commits
//!   queued writes in groups (each in its own savepoint, so one failing
//!   write never undoes another): under load, many writers share one commit.
//!   WAL lets readers run beside it, so a busy turn never blocks the UI.
//! - **Writes never run on the async runtime's worker threads** (they go
//!   to the writer thread). Reads are short (a conversation, a page) and
//!   run inline on the worker when a pooled connection is idle: measured on
//!   a 2-core VM, the hop to `spawn_blocking` and back (two thread
//!   wake-ups) cost more than the read, and removing it more than doubled
//!   turns per second. Only a read that finds no idle connection goes to
//!   `spawn_blocking` (where new connections are opened). Reads are bounded
//!   by a semaphore to the pool's size; the pool's `std::sync::Mutex` is
//!   held only to take or return a connection, never across an `.await`.
//!
//! Only SQLite is implemented. The public surface is kept to plain async
//! methods over the shared models so that a PostgreSQL backend (several
//! replicas sharing one state) can later sit behind the same methods.

pub mod approvals;
pub mod conversations;
mod error;
pub mod messages;
mod migrations;

pub use conversations::{Page, PageRequest};
pub use error::StoreError;
pub use messages::{NewMessage, NodeTag, StoredMessage};

/// The current time as stored: RFC 3339, UTC, milliseconds.
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A fresh random id.
pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

use app::models::{Conversation, ConversationStatus, Message, Summary};
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Read connections (and so concurrent reads).
const READERS: usize = 8;
/// Most write closures committed in one transaction.
const MAX_BATCH: usize = 256;

/// A cheap, cloneable handle to the database.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    /// The database file.
    path: PathBuf,
    /// Queue of the writer thread, which owns the one write connection.
    jobs: std::sync::mpsc::Sender<Box<dyn WriteJob>>,
    /// Idle read connections. Locked only to take or return one, never while
    /// a query runs.
    readers: Mutex<Vec<Connection>>,
    /// Bounds concurrent reads to the pool's size, so a burst of reads waits
    /// for a connection instead of opening hundreds.
    read_permits: tokio::sync::Semaphore,
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
    F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
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
    f: impl FnOnce(&Connection) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    conn.execute_batch("SAVEPOINT job")?;
    let out =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(conn))).unwrap_or_else(|_| {
            Err(StoreError::Worker(
                "a write panicked; it was rolled back".into(),
            ))
        });
    match &out {
        Ok(_) => conn.execute_batch("RELEASE job")?,
        Err(_) => conn.execute_batch("ROLLBACK TO job; RELEASE job")?,
    }
    out
}

/// Runs `f` in one read transaction (a consistent snapshot) on `conn`.
fn read_on<T>(
    conn: &mut Connection,
    f: impl FnOnce(&Connection) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Deferred)?;
    let out = f(&tx);
    tx.finish()?;
    out
}

/// The writer thread: takes every queued job (up to [`MAX_BATCH`]), runs
/// each in its own savepoint inside one `BEGIN IMMEDIATE … COMMIT`, then
/// answers them all. Many concurrent writers thus share one commit (group
/// commit) while each keeps all-or-nothing semantics.
fn writer_loop(conn: Connection, jobs: std::sync::mpsc::Receiver<Box<dyn WriteJob>>) {
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(j) => batch.push(j),
                Err(_) => break,
            }
        }
        if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
            for j in batch {
                j.abort(format!("cannot start a write transaction: {e}"));
            }
            continue;
        }
        let finishers: Vec<_> = batch.into_iter().map(|j| j.run(&conn)).collect();
        let commit = conn.execute_batch("COMMIT").map_err(|e| e.to_string());
        if commit.is_err() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        for fin in finishers {
            fin(commit.as_ref().err().map(String::as_str));
        }
    }
}

impl Store {
    /// Opens (creating if needed) `data_dir/agent.db` and migrates it.
    pub fn open(data_dir: &Path) -> Result<Store, StoreError> {
        std::fs::create_dir_all(data_dir).map_err(|source| StoreError::CreateDir {
            path: data_dir.display().to_string(),
            source,
        })?;
        Self::open_file(&data_dir.join("agent.db"))
    }

    /// Opens the database file at `path`, migrates it and starts the writer.
    pub fn open_file(path: &Path) -> Result<Store, StoreError> {
        let shown = path.display().to_string();
        let mut writer = connect(path).map_err(|source| StoreError::Open {
            path: shown.clone(),
            source,
        })?;
        migrations::migrate(&mut writer, &shown)?;
        let (tx, rx) = std::sync::mpsc::channel::<Box<dyn WriteJob>>();
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || writer_loop(writer, rx))
            .map_err(|e| StoreError::Worker(format!("cannot start the writer thread: {e}")))?;
        Ok(Store {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                jobs: tx,
                readers: Mutex::new(Vec::new()),
                read_permits: tokio::sync::Semaphore::new(READERS),
            }),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs `f` atomically on the writer thread; it has committed when this
    /// returns `Ok`.
    pub async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply, rx) = tokio::sync::oneshot::channel();
        self.inner
            .jobs
            .send(Box::new(Job { f, reply }))
            .map_err(|_| StoreError::Worker("the writer thread has stopped".into()))?;
        rx.await
            .map_err(|_| StoreError::Worker("the writer thread has stopped".into()))?
    }

    /// Runs `f` in one read transaction (a consistent snapshot) on the blocking pool.
    pub async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let _permit = self
            .inner
            .read_permits
            .acquire()
            .await
            .map_err(|e| StoreError::Worker(e.to_string()))?;
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
        if let Some(mut conn) = idle {
            let out = read_on(&mut conn, f);
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
            let mut conn = match idle {
                Some(c) => c,
                None => connect(&inner.path)?,
            };
            let out = read_on(&mut conn, f);
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

    /// Creates an empty, active conversation for `session_id`.
    pub async fn create_conversation(
        &self,
        session_id: String,
    ) -> Result<Conversation, StoreError> {
        self.write(move |tx| conversations::insert(tx, &session_id))
            .await
    }

    /// Creates a conversation and its first message in one transaction.
    pub async fn create_conversation_with(
        &self,
        session_id: String,
        first: NewMessage,
    ) -> Result<Conversation, StoreError> {
        self.write(move |tx| {
            let mut c = conversations::insert(tx, &session_id)?;
            let m = messages::append(tx, &c.id, first)?.ok_or_else(|| {
                StoreError::Corrupt("conversation vanished inside its own transaction".into())
            })?;
            c.updated_at = m.created_at.clone();
            c.messages.push(m);
            Ok(c)
        })
        .await
    }

    /// Appends a message; `None` if the conversation does not exist.
    pub async fn append_message(
        &self,
        conversation_id: String,
        m: NewMessage,
    ) -> Result<Option<Message>, StoreError> {
        self.write(move |tx| messages::append(tx, &conversation_id, m))
            .await
    }

    /// Sets a conversation's status; false if it does not exist.
    pub async fn set_status(
        &self,
        id: String,
        status: ConversationStatus,
    ) -> Result<bool, StoreError> {
        self.write(move |tx| conversations::set_status(tx, &id, status))
            .await
    }

    /// One conversation with its messages.
    pub async fn get_conversation(&self, id: String) -> Result<Option<Conversation>, StoreError> {
        self.read(move |tx| conversations::get(tx, &id)).await
    }

    /// One page of conversations and the summary, from one snapshot.
    pub async fn list_conversations(
        &self,
        req: PageRequest,
    ) -> Result<(Page, Summary), StoreError> {
        self.read(move |tx| Ok((conversations::list(tx, &req)?, conversations::summary(tx)?)))
            .await
    }
}

/// Opens a connection with the settings every connection needs.
fn connect(path: &Path) -> Result<Connection, rusqlite::Error> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    Ok(conn)
}

#[cfg(test)]
mod tests;
