//! [`Store`], the async facade over the two backends: a cheap, cloneable
//! handle that opens SQLite or PostgreSQL and runs a closure over [`Tx`]
//! as one transaction (or one read). The intents are written on it
//! elsewhere (`impl Store` in the entity and intent files); this file
//! knows only how a closure reaches a backend.

use super::error::StoreError;
use super::outbox::Routes;
use super::postgres;
use super::sqlite;
use super::tx::Tx;
use std::path::Path;
use std::sync::Arc;

/// A cheap, cloneable handle to the database: SQLite (embedded, one
/// process) or PostgreSQL (shared by replicas).
#[derive(Clone)]
pub struct Store {
    pub(super) backend: Backend,
    /// Which notification targets want which events (POLICY.md §5).
    pub(super) notify_routes: Arc<Routes>,
    /// The owner of the store's background work (the pool's warm-up, a
    /// dropped lease's release); its own until [`Store::set_tasks`].
    pub(super) tasks: crate::domain::tasks::Tasks,
    /// SQLite's round trips: one per transaction or read (tests count a
    /// flow's with [`Store::round_trips`]).
    #[cfg(test)]
    trips: Arc<std::sync::atomic::AtomicUsize>,
}

#[derive(Clone)]
pub(super) enum Backend {
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
            notify_routes: Arc::default(),
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
            notify_routes: Arc::default(),
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
    pub(super) fn sqlite_inner(&self) -> Arc<sqlite::Inner> {
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
    pub(super) fn trip(&self) {
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
    pub(super) async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
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
    pub(super) async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&dyn Tx) -> Result<T, StoreError> + Send + 'static,
    {
        self.read_as(f, true).await
    }

    /// Like [`Store::read`], for a read of one statement (one statement is
    /// its own snapshot): on PostgreSQL it goes without `BEGIN`/`COMMIT`,
    /// two round trips fewer. A second statement in `f` is an error.
    pub(super) async fn read_one<T, F>(&self, f: F) -> Result<T, StoreError>
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
    pub(super) async fn read_long<T, F>(&self, f: F) -> Result<T, StoreError>
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
