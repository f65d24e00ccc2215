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
use super::error::StoreError;
use super::tx::Tx;
use crate::domain::ids::new_id;
use crate::domain::ids::now;
use app::models::Delivery;
use serde_json::{Value, json};
use std::time::Duration;

/// How long a delivered or skipped row is kept (`/ui/notifications` shows
/// recent deliveries; older ones are pruned so the outbox, and its counts,
/// do not grow with history).
pub(crate) const KEEP_FINISHED: Duration = Duration::from_secs(7 * 24 * 3600);
/// How long a dead letter is kept for an operator to retry.
pub(crate) const KEEP_DEAD: Duration = Duration::from_secs(30 * 24 * 3600);
/// Rows deleted per transaction when pruning.
pub(super) const PRUNE_BATCH: u32 = 1000;

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

pub(super) const COLUMNS: &str = "id, target, event, approval_uuid, status, attempts, next_at, created_at, updated_at, last_error, delivered_at, payload, since";

/// Decodes a row of [`COLUMNS`] (both backends use it).
#[allow(clippy::too_many_arguments)]
pub(super) fn decode(
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
pub(super) fn outcome_columns<'a>(
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
pub(super) fn announce(
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
pub(super) fn announce_question(
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
pub(super) fn announce_tool(tx: &dyn Tx, routes: &Routes, tool: Value) -> Result<(), StoreError> {
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
