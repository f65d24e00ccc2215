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
//! - **One writer connection, several readers.** SQLite serialises writers
//!   anyway; WAL lets readers run beside the writer, so a busy turn never
//!   blocks the UI's reads.
//! - **Blocking work runs on `spawn_blocking`**, never on the async runtime's
//!   worker threads. The connections sit behind `std::sync::Mutex`es that are
//!   only locked inside those blocking closures, never across an `.await`.
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
pub use messages::{NewMessage, StoredMessage};

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

/// Most idle read connections kept open.
const MAX_IDLE_READERS: usize = 8;

/// A cheap, cloneable handle to the database.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    /// The database file.
    path: PathBuf,
    /// The one connection that writes. Locked only inside `spawn_blocking`.
    writer: Mutex<Connection>,
    /// Idle read-only connections, reused across reads. Locked only briefly
    /// to take or return one, never while a query runs.
    readers: Mutex<Vec<Connection>>,
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

    /// Opens the database file at `path` and migrates it.
    pub fn open_file(path: &Path) -> Result<Store, StoreError> {
        let shown = path.display().to_string();
        let mut writer = connect(path).map_err(|source| StoreError::Open {
            path: shown.clone(),
            source,
        })?;
        migrations::migrate(&mut writer, &shown)?;
        Ok(Store {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                writer: Mutex::new(writer),
                readers: Mutex::new(Vec::new()),
            }),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs `f` in one write transaction on the blocking pool.
    pub async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Transaction<'_>) -> Result<T, StoreError> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn = inner.writer.lock().unwrap_or_else(|p| p.into_inner());
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let out = f(&tx)?;
            tx.commit()?;
            Ok(out)
        })
        .await
        .map_err(|e| StoreError::Worker(e.to_string()))?
    }

    /// Runs `f` in one read transaction (a consistent snapshot) on the blocking pool.
    pub async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Transaction<'_>) -> Result<T, StoreError> + Send + 'static,
    {
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
            let out = {
                let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Deferred)?;
                let out = f(&tx);
                tx.finish()?;
                out
            };
            let mut idle = inner.readers.lock().unwrap_or_else(|p| p.into_inner());
            if idle.len() < MAX_IDLE_READERS {
                idle.push(conn);
            }
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
