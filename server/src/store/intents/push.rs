//! A2A push configurations' intents: store, read and delete a task's
//! configurations, and announce a task's new state to each of them.

use crate::store::error::StoreError;
use crate::store::facade::Store;
use crate::store::push::{Announcement, PushConfig, delivery};

impl Store {
    /// Stores (or replaces) a config.
    pub(crate) async fn put_push_config(&self, p: PushConfig) -> Result<(), StoreError> {
        self.write(move |tx| tx.put_push_config(&p)).await
    }

    /// The configs of a task.
    pub(crate) async fn push_configs(&self, task_id: &str) -> Result<Vec<PushConfig>, StoreError> {
        let task_id = task_id.to_string();
        self.read_one(move |tx| tx.push_configs(&task_id)).await
    }

    /// A config by our id (the worker's lookup at send time).
    pub(crate) async fn push_config(&self, uid: &str) -> Result<Option<PushConfig>, StoreError> {
        let uid = uid.to_string();
        self.read_one(move |tx| tx.push_config(&uid)).await
    }

    /// Deletes a config; false when there was none.
    pub(crate) async fn delete_push_config(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<bool, StoreError> {
        let (t, c) = (task_id.to_string(), config_id.to_string());
        self.write(move |tx| tx.delete_push_config(&t, &c)).await
    }

    /// Configs that have not yet been sent a terminal state.
    pub(crate) async fn unsettled_push_configs(
        &self,
        limit: u32,
    ) -> Result<Vec<PushConfig>, StoreError> {
        self.read_one(move |tx| tx.unsettled_push_configs(limit))
            .await
    }

    /// Queues `a` for every config of its task that was not sent this
    /// state yet (one transaction); returns how many rows were written.
    pub(crate) async fn announce_push(&self, a: Announcement) -> Result<usize, StoreError> {
        let routes = self.notify_routes.clone();
        let n = self
            .write(move |tx| {
                let mut n = 0;
                for p in tx.push_configs(&a.task_id)? {
                    if !tx.advance_push(&p.uid, &a.state)? {
                        continue;
                    }
                    let payload = if p.dialect == "0.3" { &a.v03 } else { &a.v1 };
                    tx.insert_notification(&delivery(&p.uid, &a.state, payload.clone()))?;
                    n += 1;
                }
                Ok(n)
            })
            .await?;
        if n > 0 {
            routes.wake.notify_one();
        }
        Ok(n)
    }
}
