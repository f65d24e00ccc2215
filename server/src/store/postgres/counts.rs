//! Upkeep of the small tables every change writes:
//! - the task counts' deltas folded into their totals (schema v5): a change
//!   of a task's state inserts delta rows and locks nothing; every replica,
//!   on its heartbeat, tries to fold them (one at a time: the others skip);
//! - those tables vacuumed every few seconds ([`HOT_TABLES`]). Each turn
//!   leaves dead versions of a few of their rows; under load the rows'
//!   pages fill before PostgreSQL can prune them in place, so a table of 64
//!   live rows grew to 515 pages in a bench's burst of turns, and the
//!   counts every list reads (a scan of `status_counts`) cost 1.4 ms
//!   instead of 0.05 ms until autovacuum's next round (a minute apart at
//!   best). A vacuum of a small table costs about a millisecond.

use super::pool::Pg;
use crate::store::error::StoreError;

/// The advisory lock one fold runs under ("FOLD").
const FOLD_LOCK: i64 = 0x464f_4c44;
/// Moves every delta into the totals, in one statement.
const FOLD: &str = "WITH moved AS (DELETE FROM task_deltas RETURNING state, n) \
     INSERT INTO task_counts (state, n) SELECT state, sum(n) FROM moved GROUP BY state \
     ON CONFLICT (state) DO UPDATE SET n = task_counts.n + EXCLUDED.n";

/// The small tables every turn updates (counts, leases, the heads of the
/// audit and event chains).
const HOT_TABLES: &str = "status_counts, task_counts, task_deltas, leases, event_head, audit_head";

impl Pg {
    /// Vacuums [`HOT_TABLES`]; a table another replica is vacuuming is
    /// skipped, not waited for.
    pub(crate) async fn vacuum_hot_tables(&self) -> Result<(), StoreError> {
        self.on_conn(|conn, _| conn.batch_execute(&format!("VACUUM (SKIP_LOCKED) {HOT_TABLES}")))
            .await
    }

    /// Folds the deltas into `task_counts` unless another replica is doing
    /// it; how many task states changed totals.
    pub(crate) async fn fold_task_counts(&self) -> Result<u64, StoreError> {
        self.on_conn(|conn, _| {
            conn.batch_execute("BEGIN")?;
            let out = (|| {
                let ours = conn
                    .query_opt("SELECT pg_try_advisory_xact_lock($1)", &[&FOLD_LOCK])?
                    .is_some_and(|r| r.get::<_, bool>(0));
                let n = if ours { conn.execute(FOLD, &[])? } else { 0 };
                conn.batch_execute("COMMIT")?;
                Ok(n)
            })();
            if out.is_err() {
                let _ = conn.batch_execute("ROLLBACK");
            }
            out
        })
        .await
    }
}
