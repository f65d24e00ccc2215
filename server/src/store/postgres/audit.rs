//! The audit trail on PostgreSQL: the statements of [`AuditTx`] on a
//! [`PgTx`]. A transaction's events wait for its commit, where they are
//! chained after the head and sent with `COMMIT` in one round trip
//! (hashed here with a key, by the database without one).

use super::tx::PgTx;
use crate::domain::ids::now;
use crate::store::audit::{self, Event};
use crate::store::error::StoreError;
use crate::store::tx::AuditTx;

impl AuditTx for PgTx<'_> {
    fn audit(&self, e: &Event<'_>) -> Result<(), StoreError> {
        self.audit.borrow_mut().push(PendingAudit {
            at: now(),
            actor: e.actor.to_string(),
            event: e.event.to_string(),
            conversation_id: e.conversation_id.map(str::to_string),
            approval_uuid: e.approval_uuid.map(str::to_string),
            details: e.details.clone(),
        });
        Ok(())
    }
    fn audit_page(&self, after: i64, limit: u32) -> Result<Vec<audit::Row>, StoreError> {
        let rows = self.query(
            "SELECT seq, at, actor, event, conversation_id, approval_uuid, details, prev_hash, hash \
             FROM audit WHERE seq > $1 ORDER BY seq LIMIT $2",
            &[&after, &i64::from(limit)],
        )?;
        Ok(rows
            .iter()
            .map(|r| {
                audit::Row::decode(
                    r.get(0),
                    r.get(1),
                    r.get(2),
                    r.get(3),
                    r.get(4),
                    r.get(5),
                    r.get(6),
                    r.get(7),
                    r.get(8),
                )
            })
            .collect())
    }
    fn audit_head(&self) -> Result<(i64, String), StoreError> {
        Ok(self
            .first("SELECT seq, hash FROM audit_head", &[])?
            .map(|r| (r.get(0), r.get(1)))
            .unwrap_or((0, audit::GENESIS.to_string())))
    }
}

impl PgTx<'_> {
    /// The audit rows hashed here (with the key), the new head and
    /// `COMMIT`, as one simple query.
    pub(super) fn chained_here(&self, events: Vec<PendingAudit>) -> Result<String, StoreError> {
        let head = self
            .first("SELECT seq, hash FROM audit_head FOR UPDATE", &[])?
            .ok_or_else(|| StoreError::Corrupt("the audit head row is missing".into()))?;
        let (mut seq, mut prev): (i64, String) = (head.get(0), head.get(1));
        let mut rows = Vec::with_capacity(events.len());
        for e in events {
            seq += 1;
            let canonical = e.canonical(seq);
            let hash = audit::chain_hash(self.key, &prev, &canonical);
            rows.push(format!(
                "({seq}, {}, {}, {}, {}, {}, {}, {}, {})",
                literal(&e.at)?,
                literal(&e.actor)?,
                literal(&e.event)?,
                e.conversation_id
                    .as_deref()
                    .map(literal)
                    .transpose()?
                    .unwrap_or("NULL".into()),
                e.approval_uuid
                    .as_deref()
                    .map(literal)
                    .transpose()?
                    .unwrap_or("NULL".into()),
                literal(&crate::domain::digest::canonical(&e.details))?,
                literal(&prev)?,
                literal(&hash)?,
            ));
            prev = hash;
        }
        Ok(format!(
            "INSERT INTO audit (seq, at, actor, event, conversation_id, approval_uuid, details, prev_hash, hash) \
             VALUES {}; UPDATE audit_head SET seq = {seq}, hash = {}; COMMIT",
            rows.join(", "),
            literal(&prev)?
        ))
    }

    /// Without a key the chain is plain SHA-256, which the database computes
    /// (`stopgo_audit_append`, schema v4): the rows, the call and `COMMIT`
    /// go in one simple query, so the head's lock is never held across a
    /// round trip. Each row's canonical JSON is sent up to its `seq`, which
    /// sorts last and which only the database knows.
    pub(super) fn chained_in_database(
        &self,
        events: Vec<PendingAudit>,
    ) -> Result<String, StoreError> {
        let mut cols: [Vec<String>; 7] = Default::default();
        for e in events {
            let canonical = e.canonical(0);
            let prefix = canonical.strip_suffix("0}").ok_or_else(|| {
                StoreError::Corrupt(
                    "an audit row's canonical form does not end with its seq".into(),
                )
            })?;
            let optional = |v: Option<&str>| v.map(literal).unwrap_or_else(|| Ok("NULL".into()));
            for (col, v) in cols.iter_mut().zip([
                literal(&e.at)?,
                literal(&e.actor)?,
                literal(&e.event)?,
                optional(e.conversation_id.as_deref())?,
                optional(e.approval_uuid.as_deref())?,
                literal(&crate::domain::digest::canonical(&e.details))?,
                literal(prefix)?,
            ]) {
                col.push(v);
            }
        }
        let arrays: Vec<String> = cols
            .iter()
            .map(|c| format!("ARRAY[{}]::text[]", c.join(", ")))
            .collect();
        Ok(format!(
            "SELECT stopgo_audit_append({}); COMMIT",
            arrays.join(", ")
        ))
    }
}

/// An audit event waiting for the end of the transaction.
pub(super) struct PendingAudit {
    pub(super) at: String,
    pub(super) actor: String,
    pub(super) event: String,
    pub(super) conversation_id: Option<String>,
    pub(super) approval_uuid: Option<String>,
    pub(super) details: serde_json::Value,
}

impl PendingAudit {
    /// The row as it is hashed (AUTH.md §7), at `seq`.
    fn canonical(&self, seq: i64) -> String {
        audit::canonical_row(
            seq,
            &self.at,
            &self.actor,
            &self.event,
            self.conversation_id.as_deref(),
            self.approval_uuid.as_deref(),
            &self.details,
        )
    }
}

/// `s` as an SQL string literal. Safe because every connection sets
/// `standard_conforming_strings = on` (see `connect`): a quote is then the
/// only character with a meaning inside '...', and it is doubled. NUL,
/// which PostgreSQL's text cannot hold, is refused.
fn literal(s: &str) -> Result<String, StoreError> {
    if s.contains('\0') {
        return Err(StoreError::Unstorable(
            "text cannot contain the NUL character (U+0000)".into(),
        ));
    }
    Ok(format!("'{}'", s.replace('\'', "''")))
}
