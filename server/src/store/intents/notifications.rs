//! The notification outbox's intents: the notification routes the store
//! announces to, claiming and finishing deliveries (the notifier's worker),
//! the delivery list, pruning and an operator's retry.

use crate::domain::ids::now;
use crate::store::approvals::earlier;
use crate::store::audit::Event;
use crate::store::error::StoreError;
use crate::store::facade::Store;
use crate::store::outbox::{
    Attempt, KEEP_DEAD, KEEP_FINISHED, Notification, PRUNE_BATCH, Routes, later,
};
use app::models::{ApprovalStatus, DeliveryList};
use serde_json::json;
use std::time::Duration;

impl Store {
    /// Sets which targets want which events (once, at startup).
    pub(crate) fn set_notify_routes(&mut self, routes: Routes) {
        self.notify_routes = std::sync::Arc::new(routes);
    }

    /// The routes, for the worker (its wake-up signal).
    pub(crate) fn notify_routes(&self) -> std::sync::Arc<Routes> {
        self.notify_routes.clone()
    }

    /// Claims up to `limit` due rows for `hold` (another worker, on this
    /// replica or another, skips them until then).
    pub(crate) async fn claim_notifications(
        &self,
        limit: u32,
        hold: Duration,
    ) -> Result<Vec<Notification>, StoreError> {
        self.write(move |tx| tx.claim_notifications(&now(), &later(hold), limit))
            .await
    }

    /// Records how attempts ended, in one transaction.
    pub(crate) async fn finish_notifications(
        &self,
        outcomes: Vec<(String, Attempt)>,
    ) -> Result<(), StoreError> {
        self.write(move |tx| {
            let at = now();
            for (id, a) in &outcomes {
                tx.finish_notification(id, a, &at)?;
            }
            Ok(())
        })
        .await
    }

    /// The approval a reminder is about, if it is still pending.
    pub(crate) async fn still_pending(&self, uuid: &str) -> Result<bool, StoreError> {
        let uuid = uuid.to_string();
        self.read_one(move |tx| {
            Ok(tx
                .approval(&uuid)?
                .is_some_and(|a| a.status == ApprovalStatus::Pending))
        })
        .await
    }

    /// The newest `limit` rows (of one status) and the count per status.
    pub(crate) async fn notifications(
        &self,
        status: Option<String>,
        limit: u32,
    ) -> Result<DeliveryList, StoreError> {
        self.read(move |tx| {
            let deliveries = tx
                .recent_notifications(status.as_deref(), limit)?
                .into_iter()
                .map(|n| n.delivery)
                .collect();
            let counts = tx.notification_counts()?.into_iter().collect();
            Ok(DeliveryList { deliveries, counts })
        })
        .await
    }

    /// Counts per status (for `/metrics`).
    pub(crate) async fn notification_counts(&self) -> Result<Vec<(String, u64)>, StoreError> {
        self.read_one(|tx| tx.notification_counts()).await
    }

    /// Deletes what is past its keeping time ([`KEEP_FINISHED`],
    /// [`KEEP_DEAD`]), a batch per transaction; how many rows went.
    pub(crate) async fn prune_notifications(&self) -> Result<u64, StoreError> {
        let at = now();
        let finished = earlier(&at, KEEP_FINISHED);
        let dead = earlier(&at, KEEP_DEAD);
        let mut total = 0;
        loop {
            let (f, d) = (finished.clone(), dead.clone());
            let n = self
                .write(move |tx| tx.prune_notifications(&f, &d, PRUNE_BATCH))
                .await?;
            total += n;
            if n < u64::from(PRUNE_BATCH) {
                return Ok(total);
            }
        }
    }

    /// Sends a dead letter again, with a fresh retry window (audited as
    /// `notification.retried`); false when it is not a dead letter.
    pub(crate) async fn retry_notification(&self, id: &str, by: &str) -> Result<bool, StoreError> {
        let (id, by) = (id.to_string(), by.to_string());
        let routes = self.notify_routes.clone();
        let done = self
            .write(move |tx| {
                if !tx.retry_notification(&id, &now())? {
                    return Ok(false);
                }
                tx.audit(&Event {
                    actor: &by,
                    event: "notification.retried",
                    conversation_id: None,
                    approval_uuid: None,
                    details: json!({"id": id}),
                })?;
                Ok(true)
            })
            .await?;
        if done {
            routes.wake.notify_one();
        }
        Ok(done)
    }

    /// Whether the link `link` was used already.
    pub(crate) async fn link_used(&self, link: &str) -> Result<bool, StoreError> {
        let link = link.to_string();
        self.read_one(move |tx| tx.link_used(&link)).await
    }
}
