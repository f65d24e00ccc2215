//! A server's own record of what it let through (RECEIPTS.md §2-§3), in a
//! SQLite file that outlives the process: the receipts it accepted (by
//! `jti`: each allows one run) and each keyed call's arguments digest and
//! first outcome.
//!
//! `mcp-resources` keeps it in its database file, `mcp-filesystem` beside
//! its config; either way it is the server's, not the agent's, so a
//! client that calls the server directly meets the same record.

use rmcp::model::CallToolResult;
use rusqlite::{Connection, OptionalExtension, params};
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

/// How long a keyed call's outcome is kept (at least 24 h, RECEIPTS.md §3).
pub const KEEP: Duration = Duration::from_secs(24 * 3600);
/// How long a used `jti` is kept: a receipt lives at most 24 h after its
/// decision, so one older than twice that is refused as expired anyway.
const KEEP_JTI: Duration = Duration::from_secs(48 * 3600);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS stopgo_receipts_used (
    jti TEXT PRIMARY KEY,
    at  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS stopgo_keyed_calls (
    key             TEXT PRIMARY KEY,
    arguments_sha256 TEXT NOT NULL,
    outcome         TEXT,
    at              INTEGER NOT NULL
);
";

/// What the ledger knows of a key.
#[derive(Debug, PartialEq)]
pub enum Prior {
    /// Never seen (or forgotten after [`KEEP`]).
    None,
    /// Ran to the end with the same arguments: its outcome.
    Done(CallToolResult),
    /// Seen with other arguments.
    OtherArguments,
    /// Started with the same arguments, and no outcome was recorded (the
    /// server stopped while it ran).
    Unsettled,
}

/// The ledger file.
pub struct Ledger {
    conn: Mutex<Connection>,
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn secs(d: Duration) -> i64 {
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX)
}

impl Ledger {
    /// Opens (or creates) the ledger at `path` and forgets what is past
    /// keeping.
    pub fn open(path: &Path) -> anyhow::Result<Ledger> {
        Ledger::on(Connection::open(path)?)
    }

    /// A ledger that lasts as long as the process (where no file can be
    /// written: the server then does not say it honours keys).
    pub fn in_memory() -> anyhow::Result<Ledger> {
        Ledger::on(Connection::open_in_memory()?)
    }

    fn on(conn: Connection) -> anyhow::Result<Ledger> {
        conn.busy_timeout(Duration::from_secs(5))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // As durable as the data it guards (mcp-resources' own database):
        // a commit survives the process dying; the WAL is synced at
        // checkpoints, not at every commit.
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.execute_batch(SCHEMA)?;
        let l = Ledger {
            conn: Mutex::new(conn),
        };
        l.prune()?;
        Ok(l)
    }

    fn with<T>(&self, f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>) -> anyhow::Result<T> {
        let mut c = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        Ok(f(&mut c)?)
    }

    /// Forgets outcomes older than [`KEEP`] and `jti`s older than twice a
    /// receipt's longest life.
    pub fn prune(&self) -> anyhow::Result<()> {
        let t = now();
        self.with(|c| {
            c.execute(
                "DELETE FROM stopgo_keyed_calls WHERE at < ?1",
                [t - secs(KEEP)],
            )?;
            c.execute(
                "DELETE FROM stopgo_receipts_used WHERE at < ?1",
                [t - secs(KEEP_JTI)],
            )?;
            Ok(())
        })
    }

    /// What is known of `key` for a call with arguments digest `digest`.
    pub fn prior(&self, key: &str, digest: &str) -> anyhow::Result<Prior> {
        let row: Option<(String, Option<String>, i64)> = self.with(|c| {
            c.prepare_cached(
                "SELECT arguments_sha256, outcome, at FROM stopgo_keyed_calls WHERE key = ?1",
            )?
            .query_row([key], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()
        })?;
        Ok(match row {
            None => Prior::None,
            Some((_, _, at)) if at < now() - secs(KEEP) => Prior::None,
            Some((d, _, _)) if d != digest => Prior::OtherArguments,
            Some((_, Some(outcome), _)) => Prior::Done(serde_json::from_str(&outcome)?),
            Some((_, None, _)) => Prior::Unsettled,
        })
    }

    /// Takes receipt `jti` (once ever) and reserves `key` for a run, in one
    /// transaction; false when the receipt was used before (nothing taken).
    pub fn reserve(
        &self,
        jti: Option<&str>,
        key: Option<&str>,
        digest: &str,
    ) -> anyhow::Result<bool> {
        let t = now();
        self.with(|c| {
            let tx = c.transaction()?;
            if let Some(j) = jti {
                let fresh = tx.execute(
                    "INSERT OR IGNORE INTO stopgo_receipts_used (jti, at) VALUES (?1, ?2)",
                    params![j, t],
                )?;
                if fresh == 0 {
                    return Ok(false);
                }
            }
            if let Some(k) = key {
                tx.execute(
                    "INSERT OR REPLACE INTO stopgo_keyed_calls (key, arguments_sha256, outcome, at) VALUES (?1, ?2, NULL, ?3)",
                    params![k, digest, t],
                )?;
            }
            tx.commit()?;
            Ok(true)
        })
    }

    /// Records the outcome of the run `key` reserved.
    pub fn settle(&self, key: &str, outcome: &CallToolResult) -> anyhow::Result<()> {
        let text = serde_json::to_string(outcome)?;
        self.with(|c| {
            c.execute(
                "UPDATE stopgo_keyed_calls SET outcome = ?2 WHERE key = ?1",
                params![key, text],
            )?;
            Ok(())
        })
    }

    /// Forgets a reservation whose run did not finish with an outcome.
    pub fn release(&self, key: &str) -> anyhow::Result<()> {
        self.with(|c| {
            c.execute("DELETE FROM stopgo_keyed_calls WHERE key = ?1", [key])?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ContentBlock;

    #[test]
    fn a_key_keeps_its_first_outcome_and_its_arguments_across_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let l = Ledger::open(&path).unwrap();
        assert_eq!(l.prior("k1", "A").unwrap(), Prior::None);
        assert!(l.reserve(Some("j1"), Some("k1"), "A").unwrap());
        assert_eq!(l.prior("k1", "A").unwrap(), Prior::Unsettled);
        let out = CallToolResult::success(vec![ContentBlock::text("done")]);
        l.settle("k1", &out).unwrap();
        drop(l);
        let l = Ledger::open(&path).unwrap();
        assert_eq!(l.prior("k1", "A").unwrap(), Prior::Done(out));
        assert_eq!(l.prior("k1", "B").unwrap(), Prior::OtherArguments);
        // The receipt is used, under any key.
        assert!(!l.reserve(Some("j1"), Some("k2"), "A").unwrap());
        assert_eq!(l.prior("k2", "A").unwrap(), Prior::None);
        // A run that did not finish frees its key.
        assert!(l.reserve(None, Some("k3"), "A").unwrap());
        l.release("k3").unwrap();
        assert_eq!(l.prior("k3", "A").unwrap(), Prior::None);
    }
}
