//! What each replica does in the background when several share PostgreSQL
//! (REPLICAS.md §3):
//! - **Heartbeat** every `lease_seconds / 3`: renews the leases of the
//!   turns it runs; a lease found taken over is logged (the turn's next
//!   write fails its fence and stops it); a cancel another replica asked
//!   for trips the turn's switch.
//! - **Sweeper**, on the same beat: takes over turns whose lease expired
//!   (their replica stopped) one at a time, applies the crash rules in the
//!   takeover's transaction, and resumes those with an approved call
//!   waiting; the others' leases are released.
//! - **Event rows** beyond the newest 100,000 are deleted every few
//!   minutes.
//! - **Task counts**: the deltas the turns left are folded into the kept
//!   totals on every beat (by one replica at a time).
//! - **Small hot tables** (counts, leases, chain heads) are vacuumed every
//!   few seconds, so the counts every list reads stay a few pages
//!   (`store/postgres/counts.rs`).

use crate::engine::handle::Engine;
use std::time::Duration;

/// Event rows kept for `Last-Event-ID` catch-up.
const EVENTS_KEPT: i64 = 100_000;
/// Beats between two prunings of the event rows.
const PRUNE_EVERY: u64 = 30;
/// How often the small hot tables are vacuumed.
const VACUUM_EVERY: Duration = Duration::from_secs(2);

impl Engine {
    /// Starts the heartbeat and the sweeper (several replicas).
    pub(crate) fn start_replica_tasks(&self, lease_seconds: u64) {
        let beat = Duration::from_millis(lease_seconds.max(3) * 1000 / 3);
        let store = self.inner.store.clone();
        self.inner.tasks.spawn_background("vacuum", async move {
            let mut every = tokio::time::interval(VACUUM_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                if let Err(e) = store.vacuum_hot_tables().await {
                    tracing::warn!(error = %e, "could not vacuum the counts and leases");
                }
            }
        });
        let engine = self.clone();
        self.inner.tasks.spawn_background("heartbeat", async move {
            let mut every = tokio::time::interval(beat);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut n: u64 = 0;
            loop {
                every.tick().await;
                n += 1;
                engine.heartbeat().await;
                engine.sweep().await;
                if let Err(e) = engine.inner.store.fold_task_counts().await {
                    tracing::warn!(error = %e, "could not fold the task counts");
                }
                if n.is_multiple_of(PRUNE_EVERY)
                    && let Err(e) = engine.inner.store.prune_events(EVENTS_KEPT).await
                {
                    tracing::warn!(error = %e, "could not prune old events");
                }
            }
        });
    }

    async fn heartbeat(&self) {
        match self.inner.store.heartbeat().await {
            Ok(beat) => {
                for id in beat.lost {
                    tracing::warn!(conversation = %id, "lost the lease of a running turn to another replica");
                }
                for id in beat.cancel {
                    if self.inner.turns.cancel(&id) {
                        tracing::info!(conversation = %id, "another replica asked to cancel this turn");
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "heartbeat failed; leases may expire"),
        }
    }

    /// Settles every turn whose lease expired.
    async fn sweep(&self) {
        loop {
            let swept = match self
                .inner
                .store
                .sweep_one(self.inner.tools.keyed_servers())
                .await
            {
                Ok(Some(s)) => s,
                Ok(None) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "the sweeper could not take over an expired turn");
                    return;
                }
            };
            let id = swept.lease.conversation_id().to_string();
            tracing::warn!(conversation = %id, resume = swept.resume, in_doubt = swept.in_doubt, "took over a turn whose replica stopped");
            crate::telemetry::metrics::get().approvals_ended("in_doubt", swept.in_doubt);
            if !swept.resume {
                swept.lease.release().await;
                self.emit_status(&id, None, false);
                continue;
            }
            match self.inner.locks.try_lock(&id) {
                Some(guard) => {
                    let engine = self.clone();
                    let guard = guard.with_lease(swept.lease);
                    self.inner
                        .tasks
                        .spawn_background("resume after a takeover", async move {
                            engine.resume(id, guard).await
                        });
                }
                // Cannot happen (the lease was another replica's); never
                // two writers: give it back.
                None => swept.lease.release().await,
            }
        }
    }
}
