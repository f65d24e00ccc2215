//! Small reads and writes of the API and A2A layers: whether a
//! conversation exists, who created it, its A2A context, task rows.

use super::conversations::TaskRow;
use super::{Store, StoreError};

impl Store {
    pub async fn conversation_exists(&self, id: &str) -> Result<bool, StoreError> {
        let id = id.to_string();
        self.read(move |tx| tx.exists(&id)).await
    }

    /// The principal that created the conversation (`None` before
    /// requesters were recorded, or when it does not exist).
    pub async fn created_by(&self, id: &str) -> Result<Option<String>, StoreError> {
        let id = id.to_string();
        self.read(move |tx| tx.created_by(&id)).await
    }

    /// Records the A2A context a conversation belongs to.
    pub async fn set_context(&self, id: &str, context_id: &str) -> Result<(), StoreError> {
        let (id, context) = (id.to_string(), context_id.to_string());
        self.write(move |tx| tx.set_context(&id, &context)).await
    }

    /// The newest conversation whose id or A2A context is `context_id`.
    pub async fn by_context(&self, context_id: &str) -> Result<Option<String>, StoreError> {
        let cid = context_id.to_string();
        self.read(move |tx| tx.by_context(&cid)).await
    }

    /// One light row per conversation, newest first (a scan).
    pub async fn task_rows(&self) -> Result<Vec<TaskRow>, StoreError> {
        self.read_long(|tx| tx.task_rows()).await
    }
}
