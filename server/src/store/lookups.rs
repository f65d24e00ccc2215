//! Small reads and writes of the API and A2A layers: whether a
//! conversation exists, what it waits for, who created it, its A2A
//! context, tasks by state.

use super::conversations::TasksInState;
use super::error::StoreError;
use super::facade::Store;
use app::models::PendingApproval;

impl Store {
    /// One statement, on an index: the cheap check before work on a
    /// conversation (no history read).
    pub(crate) async fn conversation_exists(&self, id: &str) -> Result<bool, StoreError> {
        let id = id.to_string();
        self.read_one(move |tx| tx.exists(&id)).await
    }

    /// The approval the conversation waits for, if any: the same read its
    /// transactions check, without the history.
    pub(crate) async fn pending_approval(
        &self,
        id: &str,
    ) -> Result<Option<PendingApproval>, StoreError> {
        let id = id.to_string();
        self.read_one(move |tx| tx.pending_for(&id)).await
    }

    /// The principal that created the conversation (`None` before
    /// requesters were recorded, or when it does not exist).
    pub(crate) async fn created_by(&self, id: &str) -> Result<Option<String>, StoreError> {
        let id = id.to_string();
        self.read(move |tx| tx.created_by(&id)).await
    }

    /// The newest conversation whose id or A2A context is `context_id`.
    pub(crate) async fn by_context(&self, context_id: &str) -> Result<Option<String>, StoreError> {
        let cid = context_id.to_string();
        self.read(move |tx| tx.by_context(&cid)).await
    }

    /// A page of the conversations whose A2A task is in `state`, newest
    /// first from before `before`, and the count of all of them (one
    /// snapshot; an index and a kept count, whatever is stored).
    pub(crate) async fn tasks_in_state(
        &self,
        state: &str,
        before: i64,
        limit: u32,
    ) -> Result<TasksInState, StoreError> {
        let state = state.to_string();
        self.read(move |tx| tx.tasks_in_state(&state, before, limit))
            .await
    }

    /// Folds the task-count deltas of several replicas into the kept
    /// counts (PostgreSQL; a no-op on SQLite, whose triggers keep them).
    pub(crate) async fn fold_task_counts(&self) -> Result<u64, StoreError> {
        match &self.backend {
            super::facade::Backend::Sqlite(_) => Ok(0),
            super::facade::Backend::Postgres(pg) => pg.fold_task_counts().await,
        }
    }

    /// Vacuums the small tables every turn updates, so reading them stays
    /// cheap under load (PostgreSQL; a no-op on SQLite).
    pub(crate) async fn vacuum_hot_tables(&self) -> Result<(), StoreError> {
        match &self.backend {
            super::facade::Backend::Sqlite(_) => Ok(()),
            super::facade::Backend::Postgres(pg) => pg.vacuum_hot_tables().await,
        }
    }
}
