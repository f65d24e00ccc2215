//! Durable state: SQLite (`data_dir/agent.db`) or PostgreSQL.
//!
//! [`Store`] is the async facade the server uses. Its intents (open a
//! conversation, record a step, claim a call, decide, recover...) are
//! written once over [`Tx`], the statements a transaction is made of, and
//! each runs as one transaction, committed before the caller answers its
//! HTTP request. Both backends implement [`Tx`]; only the facade knows
//! which one it runs on. No driver type leaves `store/` ([`StoreError`]
//! carries text). The layout:
//!
//! - `tx.rs`: [`Tx`], one sub-trait per entity, plus the statements that
//!   span entities.
//! - [`conversations`], [`messages`], [`approvals`], [`leases`], [`pins`],
//!   [`card_pins`], [`outbox`], [`push`], [`audit`], [`sessions`], [`grants`]: each entity's types,
//!   the decoders both backends share, and its intents (`impl Store`).
//! - `turns`, `calls`, `decisions`, `expiry`, [`recovery`], `inbox`,
//!   `lookups`, `event_rows`: intents that span entities.
//! - `sqlite/` (embedded, one process): the engine (one write connection
//!   with group commit, a pool of readers), the migrations, and
//!   `sqlite/<entity>.rs`, each entity's statements in SQLite's dialect.
//! - `postgres/` (several replicas sharing one state, REPLICAS.md): the
//!   pool, pipelined transactions (`postgres/tx.rs`), the migrations, and
//!   `postgres/<entity>.rs`, each entity's statements in PostgreSQL's
//!   dialect, mirroring `sqlite/<entity>.rs`.

pub(crate) mod approvals;
pub mod audit;
mod calls;
pub(crate) mod card_pins;
pub(crate) mod conversations;
mod decisions;
mod error;
mod event_rows;
mod expiry;
pub(crate) mod grants;
mod inbox;
pub(crate) mod leases;
mod lookups;
pub(crate) mod messages;
pub(crate) mod outbox;
pub(crate) mod pins;
mod postgres;
pub(crate) mod push;
pub(crate) mod questions;
pub(crate) mod recovery;
pub(crate) mod sessions;
mod sqlite;
mod turns;
mod tx;

pub(crate) use calls::{DeniedCall, FinishedCall, Settle};
pub(crate) use conversations::{Page, PageRequest};
pub(crate) use decisions::{Decided, DecisionRecord};
pub use error::StoreError;
pub(crate) use expiry::ExpiryOutcome;
#[cfg(test)]
pub(crate) use leases::Beat;
pub(crate) use leases::Lease;
pub(crate) use messages::{NewMessage, NodeTag, StoredMessage};
pub(crate) use postgres::EventRow;
pub(crate) use turns::{Requester, StepMessage, Waiting};
// `Tx` is the store's own: outside `store/` only the A2A conformance
// executor (feature `a2a-tck`) and tests that stage a state no intent makes
// (a crash half-way) name it, through `Store::write_raw`.
#[cfg(not(any(test, feature = "a2a-tck")))]
pub(in crate::store) use tx::Tx;
#[cfg(any(test, feature = "a2a-tck"))]
pub(crate) use tx::Tx;
// Ids and timestamps are the domain's; the store's files name them as
// `super::{new_id, now}`.
pub(crate) use crate::domain::ids::{new_id, now};

use app::models::{Conversation, Message, Summary};
use std::path::Path;
use std::sync::Arc;

/// A cheap, cloneable handle to the database: SQLite (embedded, one
/// process) or PostgreSQL (shared by replicas).
#[derive(Clone)]
pub struct Store {
    backend: Backend,
    /// Which notification targets want which events (POLICY.md §5).
    routes: Arc<outbox::Routes>,
    /// The owner of the store's background work (the pool's warm-up, a
    /// dropped lease's release); its own until [`Store::set_tasks`].
    tasks: crate::domain::tasks::Tasks,
    /// SQLite's round trips: one per transaction or read (tests count a
    /// flow's with [`Store::round_trips`]).
    #[cfg(test)]
    trips: Arc<std::sync::atomic::AtomicUsize>,
}

#[derive(Clone)]
enum Backend {
    Sqlite(sqlite::Sqlite),
    Postgres(postgres::Pg),
}

impl Store {
    /// Opens (creating if needed) `data_dir/agent.db` and migrates it.
    #[cfg(test)]
    pub(crate) fn open(data_dir: &Path) -> Result<Store, StoreError> {
        Self::open_keyed(data_dir, None)
    }

    /// Like [`Store::open`], hashing the audit chain with `audit_key`.
    pub(crate) fn open_keyed(
        data_dir: &Path,
        audit_key: Option<&[u8]>,
    ) -> Result<Store, StoreError> {
        std::fs::create_dir_all(data_dir).map_err(|source| StoreError::CreateDir {
            path: data_dir.display().to_string(),
            source,
        })?;
        Self::open_file_keyed(&data_dir.join("agent.db"), audit_key)
    }

    /// Opens the database file at `path`, migrates it and starts the writer.
    fn open_file_keyed(path: &Path, audit_key: Option<&[u8]>) -> Result<Store, StoreError> {
        Ok(Store {
            routes: Arc::default(),
            tasks: Default::default(),
            #[cfg(test)]
            trips: Arc::default(),
            backend: Backend::Sqlite(sqlite::Sqlite::open(path, audit_key)?),
        })
    }

    /// Opens the PostgreSQL database at `url` (retrying for 30 s) and
    /// migrates it, with a pool of `max_connections` (unset: sized to where
    /// the database is). Blocking: call it before the server starts.
    pub(crate) fn open_postgres(
        url: &str,
        max_connections: Option<u32>,
        lease_seconds: u32,
        audit_key: Option<&[u8]>,
    ) -> Result<Store, StoreError> {
        Ok(Store {
            routes: Arc::default(),
            tasks: Default::default(),
            #[cfg(test)]
            trips: Arc::default(),
            backend: Backend::Postgres(postgres::Pg::open(
                url,
                max_connections,
                lease_seconds,
                audit_key.map(Arc::from),
            )?),
        })
    }

    /// Opens the rest of PostgreSQL's pool in the background (see
    /// [`postgres::Pg::warm`]); nothing to do on SQLite.
    pub(crate) fn warm_pool(&self) {
        if let Backend::Postgres(pg) = &self.backend {
            let pg = pg.clone();
            self.tasks
                .spawn_background("pool warm-up", async move { pg.warm().await });
        }
    }

    /// Gives the store's background work to the agent's owner (set before
    /// the store is cloned).
    pub(crate) fn set_tasks(&mut self, tasks: crate::domain::tasks::Tasks) {
        self.tasks = tasks;
    }

    /// Where the data is, for logs: the file, or PostgreSQL's host, port
    /// and database (never credentials).
    pub fn describe(&self) -> String {
        match &self.backend {
            Backend::Sqlite(s) => s.path().display().to_string(),
            Backend::Postgres(pg) => format!("postgresql://{}", pg.shown()),
        }
    }

    /// The SQLite engine's internals (tests that hold its writer).
    #[cfg(test)]
    fn sqlite_inner(&self) -> Arc<sqlite::Inner> {
        match &self.backend {
            Backend::Sqlite(s) => s.inner(),
            Backend::Postgres(_) => panic!("not a SQLite store"),
        }
    }

    /// The store's round trips so far: on SQLite one per transaction or
    /// read, on PostgreSQL one per request sent and awaited (statements
    /// prepared once per connection are not counted).
    #[cfg(test)]
    pub(crate) fn round_trips(&self) -> usize {
        match &self.backend {
            Backend::Sqlite(_) => self.trips.load(std::sync::atomic::Ordering::SeqCst),
            Backend::Postgres(pg) => pg.round_trips(),
        }
    }

    /// Counts one SQLite round trip.
    fn trip(&self) {
        #[cfg(test)]
        if let Backend::Sqlite(_) = &self.backend {
            self.trips.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// The database file (SQLite only).
    #[cfg(test)]
    pub(crate) fn path(&self) -> Option<&Path> {
        match &self.backend {
            Backend::Sqlite(s) => Some(s.path()),
            Backend::Postgres(_) => None,
        }
    }

    /// Runs `f` in one transaction; it has committed when this returns
    /// `Ok`. The store's own intents are built on it: everything else
    /// calls an intent.
    pub(in crate::store) async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&dyn Tx) -> Result<T, StoreError> + Send + 'static,
    {
        self.trip();
        match &self.backend {
            Backend::Sqlite(s) => s.write(f).await,
            Backend::Postgres(pg) => pg.run(postgres::Mode::Write, f).await,
        }
    }

    /// [`Store::write`] for the A2A conformance executor (its scripted
    /// tasks are no intent of the agent's) and for tests that stage a
    /// state no intent makes: never in a production build.
    #[cfg(any(test, feature = "a2a-tck"))]
    pub(crate) async fn write_raw<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&dyn Tx) -> Result<T, StoreError> + Send + 'static,
    {
        self.write(f).await
    }

    /// [`Store::read`] for tests that look at a state no intent reads.
    #[cfg(test)]
    pub(crate) async fn read_raw<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&dyn Tx) -> Result<T, StoreError> + Send + 'static,
    {
        self.read(f).await
    }

    /// Runs `f` in one read transaction (a consistent snapshot); a short
    /// read (a conversation, a few rows).
    pub(in crate::store) async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&dyn Tx) -> Result<T, StoreError> + Send + 'static,
    {
        self.read_as(f, true).await
    }

    /// Like [`Store::read`], for a read of one statement (one statement is
    /// its own snapshot): on PostgreSQL it goes without `BEGIN`/`COMMIT`,
    /// two round trips fewer. A second statement in `f` is an error.
    pub(in crate::store) async fn read_one<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&dyn Tx) -> Result<T, StoreError> + Send + 'static,
    {
        self.trip();
        match &self.backend {
            Backend::Sqlite(s) => s.read_with(f, true).await,
            Backend::Postgres(pg) => pg.run(postgres::Mode::Single, f).await,
        }
    }

    /// Like [`Store::read`], for reads that may take long (a page, a text
    /// search, a scan): on SQLite, never on the write connection.
    pub(in crate::store) async fn read_long<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&dyn Tx) -> Result<T, StoreError> + Send + 'static,
    {
        self.read_as(f, false).await
    }

    async fn read_as<T, F>(&self, f: F, short: bool) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&dyn Tx) -> Result<T, StoreError> + Send + 'static,
    {
        self.trip();
        match &self.backend {
            Backend::Sqlite(s) => s.read_with(f, short).await,
            Backend::Postgres(pg) => pg.run(postgres::Mode::Read, f).await,
        }
    }
}

impl Store {
    /// Creates an empty, active conversation for `session_id`.
    #[cfg(test)]
    pub(crate) async fn create_conversation(
        &self,
        session_id: String,
    ) -> Result<Conversation, StoreError> {
        self.write(move |tx| tx.insert_conversation(&session_id))
            .await
    }

    /// Creates a conversation and its first message in one transaction.
    #[cfg(test)]
    pub(crate) async fn create_conversation_with(
        &self,
        session_id: String,
        first: NewMessage,
    ) -> Result<Conversation, StoreError> {
        self.write(move |tx| {
            let mut c = tx.insert_conversation(&session_id)?;
            let m = tx::append_existing(tx, &c.id, first)?;
            c.updated_at = m.created_at.clone();
            c.messages.push(m);
            Ok(c)
        })
        .await
    }

    /// Appends a message; `None` if the conversation does not exist.
    pub(crate) async fn append_message(
        &self,
        conversation_id: String,
        m: NewMessage,
    ) -> Result<Option<Message>, StoreError> {
        self.write(move |tx| tx.append(&conversation_id, m)).await
    }

    /// Sets a conversation's status; false if it does not exist.
    #[cfg(test)]
    pub(crate) async fn set_status(
        &self,
        id: String,
        status: app::models::ConversationStatus,
    ) -> Result<bool, StoreError> {
        self.write(move |tx| tx.set_status(&id, status)).await
    }

    /// One conversation with its messages.
    pub(crate) async fn get_conversation(
        &self,
        id: String,
    ) -> Result<Option<Conversation>, StoreError> {
        self.read(move |tx| {
            let mut c = tx.conversation(&id)?;
            // Only a conversation that waits for an answer has a question
            // to show (no read otherwise).
            if let Some(c) = c.as_mut()
                && c.status == app::models::ConversationStatus::WaitingInput
                && let Some(q) = tx.pending_questions_of(&id)?.into_iter().next()
            {
                c.pending_question = Some(questions::decode(q)?.question);
            }
            Ok(c)
        })
        .await
    }

    /// One page of conversations and the summary, from one snapshot.
    pub(crate) async fn list_conversations(
        &self,
        req: PageRequest,
    ) -> Result<(Page, Summary), StoreError> {
        self.read_long(move |tx| Ok((tx.list(&req)?, tx.summary()?)))
            .await
    }

    /// One page of list items and the summary, from one snapshot: one
    /// statement on PostgreSQL (see
    /// [`ConversationTx::list_items_counted`](tx::ConversationTx::list_items_counted)). A short
    /// read unless it searches message text (a scan).
    pub(crate) async fn list_items(
        &self,
        req: PageRequest,
    ) -> Result<(Page<app::models::ConversationItem>, Summary), StoreError> {
        let scans = req.text.is_some();
        let read = move |tx: &dyn Tx| tx.list_items_counted(&req);
        if scans {
            self.read_long(read).await
        } else {
            self.read_one(read).await
        }
    }
}

#[cfg(test)]
pub(crate) mod suite;
#[cfg(test)]
mod tests;
#[cfg(test)]
use sqlite::CHECKPOINT_EVERY;

/// Checks the audit chain of the PostgreSQL database at `url` (read-only).
/// Blocking: call it off the async workers.
pub fn audit_verify_postgres(url: &str, key: Option<&[u8]>) -> Result<audit::Verdict, StoreError> {
    postgres::verify_audit(url, key)
}

/// Checks the audit chain of the database at `path` (read-only: a running
/// agent may keep writing).
pub fn audit_verify(path: &Path, key: Option<&[u8]>) -> Result<audit::Verdict, StoreError> {
    sqlite::verify_audit(path, key)
}
