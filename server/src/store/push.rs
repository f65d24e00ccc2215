//! A2A push notification configs (`CreateTaskPushNotificationConfig` and
//! friends): stored durably, one row per (task, config id), and the
//! outbox rows that deliver a task's state changes to them.
//!
//! Each config remembers the last task state it was sent (`last_state`).
//! Announcing a state advances it with a conditional update and writes
//! the outbox row in the same transaction, so a state is queued once per
//! config even when two replicas see the same change, and a process that
//! died between a state change and its announcement is caught up at the
//! next start (`unsettled`). Secrets (the token, the credentials) arrive
//! here sealed by `a2a::push`: the store never holds them in the clear.

use super::outbox::Notification;
use crate::domain::ids::new_id;
use crate::domain::ids::now;
use app::models::Delivery;
use serde_json::Value;

/// One stored config.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PushConfig {
    /// Ours, unique: the outbox row's target is `a2a-push:<uid>`.
    pub(crate) uid: String,
    pub(crate) task_id: String,
    /// The client's id for it (unique per task).
    pub(crate) config_id: String,
    pub(crate) url: String,
    /// Sealed.
    pub(crate) token: Option<String>,
    pub(crate) auth_scheme: Option<String>,
    /// Sealed.
    pub(crate) credentials: Option<String>,
    /// `1.0` or `0.3`: the payload's shape.
    pub(crate) dialect: String,
    pub(crate) created_by: String,
    pub(crate) created_at: String,
    pub(crate) last_state: Option<String>,
}

/// The outbox target prefix of push deliveries.
pub(crate) const TARGET: &str = "a2a-push:";

pub(super) const COLUMNS: &str = "uid, task_id, config_id, url, token, auth_scheme, credentials, dialect, created_by, created_at, last_state";

/// Terminal states: a config that saw one has nothing more to send.
pub(super) const UNSETTLED: &str =
    "last_state IS NULL OR last_state NOT IN ('completed', 'failed', 'canceled', 'rejected')";

/// The `advance` statement (both backends, `?`-style placeholders are
/// rewritten for PostgreSQL): a config moves to a new state only from
/// another state that is not final. A task never leaves a final state,
/// so a stale announcement (read before the task ended, committed after)
/// queues nothing.
pub(super) const ADVANCE: &str = "UPDATE push_configs SET last_state = $2 WHERE uid = $1 \
     AND (last_state IS NULL OR last_state <> $2) \
     AND (last_state IS NULL OR last_state NOT IN ('completed', 'failed', 'canceled', 'rejected'))";

/// The claim's order rule for push rows (alias `n`): a push row waits
/// while an earlier row of the same config is pending (waiting for a
/// retry, or being sent by this or another replica), so a receiver gets
/// a task's states in the order they happened, never `working` after
/// `completed`. Other targets' rows are independent of each other.
pub(super) const IN_ORDER: &str = "(n.target NOT LIKE 'a2a-push:%' OR NOT EXISTS \
     (SELECT 1 FROM notifications o WHERE o.status = 'pending' AND o.target = n.target AND o.id < n.id))";

/// The outbox row delivering `payload` (a `StreamResponse`, or a 0.3
/// task) to the config `uid`.
pub(super) fn delivery(uid: &str, state: &str, payload: Value) -> Notification {
    let at = now();
    Notification {
        delivery: Delivery {
            id: new_id(),
            target: format!("{TARGET}{uid}"),
            event: format!("task.{state}"),
            approval_uuid: None,
            status: "pending".into(),
            attempts: 0,
            next_at: at.clone(),
            created_at: at.clone(),
            updated_at: at.clone(),
            last_error: None,
            delivered_at: None,
        },
        payload,
        since: at,
    }
}

/// A task's state as each config shape tells it.
#[derive(Clone, Debug)]
pub(crate) struct Announcement {
    pub(crate) task_id: String,
    /// The state, as stored in `last_state` (`input-required`...).
    pub(crate) state: String,
    /// The payload for 1.0 configs and for 0.3 ones.
    pub(crate) v1: Value,
    pub(crate) v03: Value,
}
