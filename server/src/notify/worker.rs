//! The outbox worker: claim due rows, send them side by side, record how
//! each attempt ended, repeat.
//!
//! A claim holds a row for [`HOLD`] (longer than an attempt's 10 s
//! timeout): if this process dies mid-send, the row is due again after
//! that and another worker (after a restart, or on another replica) sends
//! it again, so delivery is at least once. Outcomes are written in one
//! transaction per batch.

use super::body::{self, LinkSet};
use super::links::{Action, Claims};
use super::notifier::{Kind, Notifier};
use crate::config::Format;
use crate::domain::pages::SharedPages;
use crate::store::outbox::{Attempt, Notification, later};
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::Duration;

/// Rows claimed per look.
const BATCH: u32 = 64;
/// Attempts in flight at once.
const PARALLEL: usize = 16;
/// How long a claimed row is held by its claimer.
const HOLD: Duration = Duration::from_secs(30);
/// How often the worker looks when nothing woke it.
const IDLE: Duration = Duration::from_millis(250);
/// How long the worker waits after a wake-up before it claims.
const GATHER: Duration = Duration::from_millis(25);
/// The first retry's delay; each further one doubles, up to [`MAX_DELAY`].
const FIRST_DELAY: Duration = Duration::from_secs(1);
const MAX_DELAY: Duration = Duration::from_secs(3600);
/// How often the outbox is pruned of rows past their keeping time (and
/// once at start).
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// The delay before retry `n` (0: the first retry): exponential with
/// "equal jitter" (half fixed, half random), so receivers coming back up
/// are not hit by every sender at once.
pub(crate) fn backoff(n: u32) -> Duration {
    let full = FIRST_DELAY
        .saturating_mul(1u32.checked_shl(n.min(20)).unwrap_or(u32::MAX))
        .min(MAX_DELAY);
    let half = full / 2;
    half + half.mul_f64(rand::random::<f64>())
}

/// Prunes the outbox of rows past their keeping time, at start and every
/// [`PRUNE_EVERY`], for as long as the process runs.
pub(super) async fn prune(store: crate::store::Store) {
    let mut every = tokio::time::interval(PRUNE_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        match store.prune_notifications().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(rows = n, "pruned the notification outbox"),
            Err(e) => tracing::warn!(error = %e, "could not prune the notification outbox"),
        }
    }
}

impl Notifier {
    /// Starts the worker, as a task of `tasks`; links are `pages`' (under
    /// `public_url`, else the address the agent listens on). A delivery
    /// cut by shutdown is sent again once its claim expires.
    pub(crate) fn start(self: &Arc<Self>, pages: SharedPages, tasks: &crate::domain::tasks::Tasks) {
        let _ = self.pages.set(pages);
        // Always: A2A push deliveries go through the outbox too.
        let me = self.clone();
        tasks.spawn_background("notifications", async move { me.run().await });
        // Beside it, so a long prune never holds a delivery back.
        tasks.spawn_background("outbox prune", prune(self.store.clone()));
    }
}

impl Notifier {
    pub(super) async fn run(self: Arc<Self>) {
        let routes = self.store.notify_routes();
        loop {
            let claimed = match self.store.claim_notifications(BATCH, HOLD).await {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(error = %e, "could not read the notification outbox");
                    tokio::time::sleep(IDLE * 4).await;
                    continue;
                }
            };
            let full = claimed.len() as u32 == BATCH;
            if !claimed.is_empty() {
                let outcomes: Vec<(String, Attempt)> = futures_util::stream::iter(claimed)
                    .map(|n| {
                        let me = self.clone();
                        async move {
                            let id = n.delivery.id.clone();
                            (id, me.attempt(n).await)
                        }
                    })
                    .buffer_unordered(PARALLEL)
                    .collect()
                    .await;
                if let Err(e) = self.store.finish_notifications(outcomes).await {
                    // The rows are due again once their claim runs out.
                    tracing::warn!(error = %e, "could not record notification outcomes");
                }
            }
            if !full {
                // Without targets only A2A pushes come, and they wake us.
                let idle = if self.targets.is_empty() {
                    IDLE * 8
                } else {
                    IDLE
                };
                tokio::select! {
                    _ = routes.wake.notified() => {
                        // Gather what the next few turns write, so a busy
                        // agent pays one claim per batch, not per turn.
                        tokio::time::sleep(GATHER).await;
                    }
                    _ = tokio::time::sleep(idle) => {}
                }
            }
        }
    }

    /// One attempt at `n`, and what it means for the row.
    async fn attempt(&self, n: Notification) -> Attempt {
        let d = &n.delivery;
        let outcome = self.send(&n).await;
        let attempt = match outcome {
            Send::Sent => Attempt::Delivered,
            Send::Skip(why) => Attempt::Skipped { why },
            Send::Dead(error) => Attempt::Dead { error },
            Send::Failed(f) => {
                let wait = f
                    .retry_after
                    .unwrap_or_else(|| backoff(d.attempts))
                    .min(self.retry_for + Duration::from_secs(1));
                let give_up = chrono::DateTime::parse_from_rfc3339(&n.since)
                    .ok()
                    .map(|since| {
                        let end = since.with_timezone(&chrono::Utc)
                            + chrono::Duration::from_std(self.retry_for)
                                .unwrap_or(chrono::Duration::zero());
                        let next = chrono::Utc::now()
                            + chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::zero());
                        next > end
                    })
                    .unwrap_or(true);
                if give_up {
                    Attempt::Dead {
                        error: format!("{} (gave up after {} attempts)", f.error, d.attempts + 1),
                    }
                } else {
                    Attempt::Retry {
                        next_at: later(wait),
                        error: f.error,
                    }
                }
            }
        };
        let outcome = match &attempt {
            Attempt::Delivered => "delivered",
            Attempt::Retry { .. } => "retried",
            Attempt::Dead { .. } => "dead",
            Attempt::Skipped { .. } => "skipped",
        };
        crate::telemetry::metrics::get().notification(outcome);
        let n = d.attempts + 1;
        match &attempt {
            Attempt::Dead { error } => {
                tracing::error!(id = %d.id, target = %d.target, event = %d.event, error, "notification dead-lettered")
            }
            Attempt::Retry { error, .. } => {
                tracing::warn!(id = %d.id, target = %d.target, event = %d.event, attempt = n, error, "notification attempt failed; will retry")
            }
            _ => {
                tracing::info!(id = %d.id, target = %d.target, event = %d.event, attempt = n, outcome, "notification")
            }
        }
        attempt
    }

    async fn send(&self, n: &Notification) -> Send {
        let d = &n.delivery;
        if let Some(uid) = d.target.strip_prefix(crate::store::push::TARGET) {
            return self.push(uid, n).await;
        }
        let Some(kind) = self.targets.get(&d.target) else {
            return Send::Dead(format!("the target {:?} is no longer configured", d.target));
        };
        if d.event == "approval.reminder"
            && let Some(uuid) = &d.approval_uuid
        {
            match self.store.still_pending(uuid).await {
                Ok(true) => {}
                Ok(false) => return Send::Skip("the approval was no longer pending".into()),
                Err(e) => {
                    tracing::warn!(error = %e, "could not check a reminder's approval");
                    return Send::Failed(super::webhook::Failure {
                        error: "the store could not be read".into(),
                        retry_after: None,
                    });
                }
            }
        }
        if d.event == "question.reminder"
            && let Some(uuid) = n.payload["question"]["uuid"].as_str()
        {
            match self.store.question(uuid).await {
                Ok(Some(q)) if q.question.status == app::models::QuestionStatus::Pending => {}
                Ok(_) => return Send::Skip("the question was no longer pending".into()),
                Err(e) => {
                    tracing::warn!(error = %e, "could not check a reminder's question");
                    return Send::Failed(super::webhook::Failure {
                        error: "the store could not be read".into(),
                        retry_after: None,
                    });
                }
            }
        }
        let links = self.links_for(n);
        match kind {
            Kind::Webhook {
                url,
                secret,
                format,
                interactive,
            } => {
                let body = match format {
                    Format::Json => body::json_body(n, &links),
                    Format::Slack => body::slack_body(n, &links, *interactive),
                };
                let bytes = serde_json::to_vec(&body).unwrap_or_default();
                match super::webhook::post(
                    &self.http,
                    url,
                    secret.as_deref(),
                    &d.id,
                    &d.event,
                    bytes,
                )
                .await
                {
                    Ok(()) => Send::Sent,
                    Err(f) => Send::Failed(f),
                }
            }
            Kind::Email(mailer) => {
                let (subject, text, html) = body::email(n, &links);
                match mailer.send(&d.id, &subject, text, html).await {
                    Ok(()) => Send::Sent,
                    Err(error) => Send::Failed(super::webhook::Failure {
                        error,
                        retry_after: None,
                    }),
                }
            }
        }
    }

    /// The links of a row: for an approval still to be decided, Open,
    /// Approve and Reject; for one that ended, Open; for a changed tool,
    /// the tools page.
    pub(crate) fn links_for(&self, n: &Notification) -> LinkSet {
        let Some(pages) = self.pages.get() else {
            // Not started: nothing is delivered, so there is nothing to link.
            return LinkSet::default();
        };
        let d = &n.delivery;
        let Some(uuid) = &d.approval_uuid else {
            // A question is answered on its conversation's page; a changed
            // tool is accepted on the tools page.
            let open = match n.payload["question"]["conversation_id"].as_str() {
                Some(c) => pages.conversation(c),
                None => pages.tools(),
            };
            return LinkSet {
                open,
                ..LinkSet::default()
            };
        };
        let link = |action| {
            let token = self.links.sign(&Claims {
                link: d.id.clone(),
                approval: uuid.clone(),
                action,
            });
            pages.signed_link(&token)
        };
        let open_ended = matches!(
            d.event.as_str(),
            "approval.requested" | "approval.reminder" | "approval.escalated"
        );
        if open_ended {
            LinkSet {
                open: link(Action::Open),
                approve: Some(link(Action::Approve)),
                reject: Some(link(Action::Reject)),
            }
        } else {
            let conversation = n.payload["approval"]["conversation_id"]
                .as_str()
                .unwrap_or_default();
            LinkSet {
                open: pages.conversation(conversation),
                ..LinkSet::default()
            }
        }
    }
}

impl Notifier {
    /// An A2A push: the config as it stands now (deleted: nothing to
    /// send), its secrets opened, the task update POSTed.
    async fn push(&self, uid: &str, n: &Notification) -> Send {
        let p = match self.store.push_config(uid).await {
            Ok(Some(p)) => p,
            Ok(None) => return Send::Skip("the push config was deleted".into()),
            Err(e) => {
                tracing::warn!(error = %e, "could not read a push config");
                return Send::Failed(super::webhook::Failure {
                    error: "the store could not be read".into(),
                    retry_after: None,
                });
            }
        };
        let open = |s: &Option<String>| s.as_deref().map(|s| self.sealer.open(s)).transpose();
        let (token, credentials) = match (open(&p.token), open(&p.credentials)) {
            (Ok(t), Ok(c)) => (t, c),
            (Err(e), _) | (_, Err(e)) => return Send::Dead(e),
        };
        let creds = super::push::Credentials {
            authorization: match (&p.auth_scheme, credentials) {
                (Some(s), Some(c)) => Some(format!("{s} {c}")),
                _ => None,
            },
            token,
        };
        let body = serde_json::to_vec(&n.payload).unwrap_or_default();
        match super::push::post(
            &self.push_http,
            &p.url,
            self.allow_private,
            &creds,
            &n.delivery.id,
            body,
        )
        .await
        {
            Ok(()) => Send::Sent,
            Err(f) => Send::Failed(f),
        }
    }
}

/// What one send did.
enum Send {
    Sent,
    Skip(String),
    Dead(String),
    Failed(super::webhook::Failure),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        for n in 0..30 {
            let full = FIRST_DELAY
                .saturating_mul(1u32.checked_shl(n.min(20)).unwrap_or(u32::MAX))
                .min(MAX_DELAY);
            let b = backoff(n);
            assert!(b >= full / 2 && b <= full, "retry {n}: {b:?} of {full:?}");
        }
        assert_eq!(MAX_DELAY, Duration::from_secs(3600));
        assert!(backoff(0) <= Duration::from_secs(1));
    }
}
