//! Live events as rows (PostgreSQL): the store's side of the event bus
//! when several replicas share the database (see `crate::events`). SQLite
//! serves one process, whose bus needs no rows.

use super::error::StoreError;
use super::facade::Backend;
use super::facade::Store;
use super::postgres::EventRow;

impl Store {
    /// Appends events (conversation, JSON) in order and wakes every
    /// replica's listener; the `seq` of the last one.
    pub(crate) async fn append_events(
        &self,
        events: Vec<(Option<String>, String)>,
    ) -> Result<i64, StoreError> {
        match &self.backend {
            Backend::Sqlite(_) => Ok(0),
            Backend::Postgres(pg) => pg.append_events(events).await,
        }
    }

    /// Up to `limit` events after `seq`, oldest first.
    pub(crate) async fn events_after(
        &self,
        seq: i64,
        limit: i64,
    ) -> Result<Vec<EventRow>, StoreError> {
        match &self.backend {
            Backend::Sqlite(_) => Ok(Vec::new()),
            Backend::Postgres(pg) => pg.events_after(seq, limit).await,
        }
    }

    /// The newest `n` events, oldest first.
    pub(crate) async fn newest_events(&self, n: i64) -> Result<Vec<EventRow>, StoreError> {
        match &self.backend {
            Backend::Sqlite(_) => Ok(Vec::new()),
            Backend::Postgres(pg) => pg.newest_events(n).await,
        }
    }

    /// Deletes all but the newest `keep` events.
    pub(crate) async fn prune_events(&self, keep: i64) -> Result<u64, StoreError> {
        match &self.backend {
            Backend::Sqlite(_) => Ok(0),
            Backend::Postgres(pg) => pg.prune_events(keep).await,
        }
    }

    /// Calls `wake` whenever a replica may have appended events, with the
    /// newest `seq` announced (and with `None` at least once a second),
    /// until it returns false.
    pub(crate) fn listen_events(
        &self,
        wake: impl Fn(Option<i64>) -> bool + Send + 'static,
    ) -> std::io::Result<()> {
        match &self.backend {
            Backend::Sqlite(_) => Ok(()),
            Backend::Postgres(pg) => pg.listen(wake),
        }
    }
}
