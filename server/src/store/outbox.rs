//! The notification outbox (POLICY.md §5): one row per event per target,
//! written in the transaction of the state change it announces, so a
//! committed approval is never without its notifications and a rolled
//! back one never has any. A background worker ([`crate::notify`]) claims
//! due rows, delivers them and records the outcome; a row left claimed by
//! a process that died is claimed again once its claim runs out, so
//! delivery is at least once and the row's `id` is the idempotency key.
//!
//! Reminders are rows too: written with the request, due at the configured
//! delays, and skipped at delivery if the approval was decided meanwhile.
//! Links are not stored (they are signed when a row is sent), nor is any
//! secret: a row holds the event's public facts only.

use super::approvals::Approval;
use super::{Store, StoreError, Tx, new_id, now};
use app::models::{ApprovalStatus, Delivery, DeliveryList};
use serde_json::{Value, json};
use std::time::Duration;

/// How long a delivered or skipped row is kept (`/ui/notifications` shows
/// recent deliveries; older ones are pruned so the outbox, and its counts,
/// do not grow with history).
pub(crate) const KEEP_FINISHED: Duration = Duration::from_secs(7 * 24 * 3600);
/// How long a dead letter is kept for an operator to retry.
pub(crate) const KEEP_DEAD: Duration = Duration::from_secs(30 * 24 * 3600);
/// Rows deleted per transaction when pruning.
const PRUNE_BATCH: u32 = 1000;

/// Which targets want which events: set once at startup from
/// `notifications:` (empty: nothing is written).
#[derive(Debug, Default)]
pub(crate) struct Routes {
    /// The agent's name, in every body.
    pub(crate) agent: String,
    pub(crate) targets: Vec<Route>,
    /// Delays after a request for `approval.reminder`.
    pub(crate) reminders: Vec<Duration>,
    /// Woken when a row is written, so the worker looks at once.
    pub(crate) wake: tokio::sync::Notify,
}

/// One target's name and events.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    pub(crate) name: String,
    /// `None`: every event.
    pub(crate) events: Option<Vec<String>>,
}

impl Route {
    fn wants(&self, event: &str) -> bool {
        self.events
            .as_ref()
            .is_none_or(|e| e.iter().any(|x| x == event))
    }
}

impl Routes {
    /// Whether any target wants `event`.
    pub(crate) fn wants(&self, event: &str) -> bool {
        self.targets.iter().any(|t| t.wants(event))
    }

    fn wanting<'a>(&'a self, event: &'a str) -> impl Iterator<Item = &'a Route> + 'a {
        self.targets.iter().filter(move |t| t.wants(event))
    }

    fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }
}

/// One stored row.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Notification {
    pub(crate) delivery: Delivery,
    /// The event's facts (`at`, `agent`, `approval` or `tool`...), as JSON.
    pub(crate) payload: Value,
    /// When the current retry window began (the row's creation, or a
    /// manual retry of a dead letter).
    pub(crate) since: String,
}

/// How one attempt ended.
#[derive(Clone, Debug)]
pub(crate) enum Attempt {
    Delivered,
    /// Try again at `next_at` (the error says why this one failed).
    Retry {
        next_at: String,
        error: String,
    },
    /// Give up: a dead letter.
    Dead {
        error: String,
    },
    /// Nothing to send any more (a reminder of a decided approval).
    Skipped {
        why: String,
    },
}

pub(in crate::store) const COLUMNS: &str = "id, target, event, approval_uuid, status, attempts, next_at, created_at, updated_at, last_error, delivered_at, payload, since";

/// Decodes a row of [`COLUMNS`] (both backends use it).
#[allow(clippy::too_many_arguments)]
pub(in crate::store) fn decode(
    id: String,
    target: String,
    event: String,
    approval_uuid: Option<String>,
    status: String,
    attempts: i64,
    next_at: String,
    created_at: String,
    updated_at: String,
    last_error: Option<String>,
    delivered_at: Option<String>,
    payload: String,
    since: String,
) -> Notification {
    Notification {
        delivery: Delivery {
            id,
            target,
            event,
            approval_uuid,
            status,
            attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
            next_at,
            created_at,
            updated_at,
            last_error,
            delivered_at,
        },
        payload: serde_json::from_str(&payload).unwrap_or(Value::Null),
        since,
    }
}

/// `now` plus `d`, as stored.
pub(crate) fn later(d: Duration) -> String {
    super::approvals::later(&now(), d)
}

/// The columns an attempt's outcome sets: status, next attempt, error,
/// delivery time.
pub(in crate::store) fn outcome_columns<'a>(
    a: &'a Attempt,
    at: &'a str,
) -> (
    &'static str,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
) {
    match a {
        Attempt::Delivered => ("delivered", None, None, Some(at)),
        Attempt::Retry { next_at, error } => ("pending", Some(next_at), Some(error), None),
        Attempt::Dead { error } => ("dead", None, Some(error), None),
        Attempt::Skipped { why } => ("skipped", None, Some(why), None),
    }
}

/// The approval as a notification tells it (POLICY.md §5's `approval`).
pub(crate) fn approval_facts(a: &Approval) -> Value {
    let p = &a.approval;
    json!({
        "uuid": p.uuid,
        "conversation_id": p.conversation_id,
        "tool": p.tool_name,
        "server": p.server,
        "arguments": p.tool_args,
        "description": p.description,
        "rule": p.rule,
        "requested_by": p.requested_by,
        "expires_at": p.expires_at,
        "chain": p.chain.clone().unwrap_or_default(),
        "quorum": p.needed(),
        "approvers": p.approvers,
        "status": a.status,
    })
}

fn row_for(
    routes: &Routes,
    target: &str,
    event: &str,
    approval: Option<&str>,
    payload: Value,
    due: String,
) -> Notification {
    let at = now();
    Notification {
        delivery: Delivery {
            id: new_id(),
            target: target.to_string(),
            event: event.to_string(),
            approval_uuid: approval.map(str::to_string),
            status: "pending".into(),
            attempts: 0,
            next_at: due,
            created_at: at.clone(),
            updated_at: at.clone(),
            last_error: None,
            delivered_at: None,
        },
        payload: {
            let mut p = payload;
            if let Value::Object(m) = &mut p {
                m.insert("at".into(), at.clone().into());
                m.insert("agent".into(), routes.agent.clone().into());
            }
            p
        },
        since: at,
    }
}

/// Writes the rows announcing `event` about `a` (with `extra` facts, e.g.
/// the decision) for every target that wants it; a request also writes
/// its reminders. Nothing when no target is configured.
pub(in crate::store) fn announce(
    tx: &dyn Tx,
    routes: &Routes,
    event: &str,
    a: &Approval,
    extra: Value,
) -> Result<(), StoreError> {
    if routes.is_empty() {
        return Ok(());
    }
    let uuid = Some(a.approval.uuid.as_str());
    let mut payload = json!({"approval": approval_facts(a)});
    if let (Value::Object(m), Value::Object(more)) = (&mut payload, extra) {
        m.extend(more);
    }
    let mut wrote = false;
    for t in routes.wanting(event) {
        tx.insert_notification(&row_for(
            routes,
            &t.name,
            event,
            uuid,
            payload.clone(),
            now(),
        ))?;
        wrote = true;
    }
    if event == "approval.requested" {
        for d in &routes.reminders {
            let mut p = payload.clone();
            p["reminder"] = crate::domain::duration::show(*d).into();
            for t in routes.wanting("approval.reminder") {
                tx.insert_notification(&row_for(
                    routes,
                    &t.name,
                    "approval.reminder",
                    uuid,
                    p.clone(),
                    later(*d),
                ))?;
            }
        }
    }
    if wrote {
        routes.wake.notify_one();
    }
    Ok(())
}

/// Writes the rows announcing a changed tool definition.
/// A question a tool asked (QUESTIONS.md §2), to every target that wants
/// `event` (`question.asked`, `question.expired`): its facts and a link to
/// its conversation, where it is answered. An asked question also writes
/// its reminders (`notifications.reminders`, as for approvals), sent only
/// if it still waits then.
pub(in crate::store) fn announce_question(
    tx: &dyn Tx,
    routes: &Routes,
    event: &str,
    question: Value,
) -> Result<(), StoreError> {
    let payload = json!({ "question": question });
    announce_facts(tx, routes, event, payload.clone())?;
    if event == "question.asked" && !routes.reminders.is_empty() {
        for d in &routes.reminders {
            let mut p = payload.clone();
            p["reminder"] = crate::domain::duration::show(*d).into();
            for t in routes.wanting("question.reminder") {
                tx.insert_notification(&row_for(
                    routes,
                    &t.name,
                    "question.reminder",
                    None,
                    p.clone(),
                    later(*d),
                ))?;
            }
        }
    }
    Ok(())
}

/// A tool whose definition changed (POLICY.md §4).
pub(in crate::store) fn announce_tool(
    tx: &dyn Tx,
    routes: &Routes,
    tool: Value,
) -> Result<(), StoreError> {
    announce_facts(tx, routes, "tool.changed", json!({ "tool": tool }))
}

/// An event about no approval (so without signed links): `payload` to
/// every target that wants it, sent now.
fn announce_facts(
    tx: &dyn Tx,
    routes: &Routes,
    event: &str,
    payload: Value,
) -> Result<(), StoreError> {
    let mut wrote = false;
    for t in routes.wanting(event) {
        tx.insert_notification(&row_for(
            routes,
            &t.name,
            event,
            None,
            payload.clone(),
            now(),
        ))?;
        wrote = true;
    }
    if wrote {
        routes.wake.notify_one();
    }
    Ok(())
}

impl Store {
    /// Sets which targets want which events (once, at startup).
    pub(crate) fn set_routes(&mut self, routes: Routes) {
        self.routes = std::sync::Arc::new(routes);
    }

    /// The routes, for the worker (its wake-up signal).
    pub(crate) fn routes(&self) -> std::sync::Arc<Routes> {
        self.routes.clone()
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
        let finished = super::approvals::earlier(&at, KEEP_FINISHED);
        let dead = super::approvals::earlier(&at, KEEP_DEAD);
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
        let routes = self.routes.clone();
        let done = self
            .write(move |tx| {
                if !tx.retry_notification(&id, &now())? {
                    return Ok(false);
                }
                tx.audit(&super::audit::Event {
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
