//! The audit trail (AUTH.md §7): an append-only, hash-chained table.
//!
//! Each row's `hash` is SHA-256 (HMAC-SHA-256 with `audit.key`) over the
//! previous row's hash followed by the row's canonical JSON
//! ([`canonical_row`]: keys sorted, no spaces). The first row's
//! `prev_hash` is 64 zeros. Rows are appended ([`AuditTx::audit`]) inside the
//! transaction of the state change they describe, so there is no decision
//! without its row, and nothing in the application updates or deletes one.
//!
//! On SQLite the hash is computed by an SQL function (`stopgo_audit_hash`,
//! `sqlite/audit.rs`) that each connection registers with the key when it
//! is opened: the key lives in the store's connections only, and any write
//! closure can append a row with nothing but the connection it already
//! has. PostgreSQL chains a transaction's rows at its commit
//! (`postgres/audit.rs`). [`verify`] recomputes the chain in Rust with the
//! same function and names the first bad row.

use super::error::StoreError;
#[cfg(doc)]
use super::tx::AuditTx;
use crate::domain::digest::{canonical, hex};
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The `prev_hash` of the first row.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// One event to record.
#[derive(Clone, Debug)]
pub(crate) struct Event<'a> {
    /// Who did it: a principal's name, or `agent` for the agent itself.
    pub(crate) actor: &'a str,
    /// e.g. `approval.decided`.
    pub(crate) event: &'a str,
    pub(crate) conversation_id: Option<&'a str>,
    pub(crate) approval_uuid: Option<&'a str>,
    pub(crate) details: Value,
}

/// A stored row.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub(crate) struct Row {
    pub(crate) seq: i64,
    pub(crate) at: String,
    pub(crate) actor: String,
    pub(crate) event: String,
    pub(crate) conversation_id: Option<String>,
    pub(crate) approval_uuid: Option<String>,
    pub(crate) details: Value,
    pub(crate) prev_hash: String,
    pub(crate) hash: String,
}

/// Hex SHA-256 (or HMAC-SHA-256 with `key`) of `prev_hash` then `canonical`.
pub fn chain_hash(key: Option<&[u8]>, prev_hash: &str, canonical: &str) -> String {
    let bytes = match key {
        Some(k) => match <Hmac<Sha256> as Mac>::new_from_slice(k) {
            Ok(mut m) => {
                m.update(prev_hash.as_bytes());
                m.update(canonical.as_bytes());
                m.finalize().into_bytes().to_vec()
            }
            // HMAC takes keys of any length, so this does not happen; if it
            // did, no row would verify (never a panic, never an unkeyed hash).
            Err(_) => return "invalid-audit-key".into(),
        },
        None => {
            let mut h = Sha256::new();
            h.update(prev_hash.as_bytes());
            h.update(canonical.as_bytes());
            h.finalize().to_vec()
        }
    };
    hex(&bytes)
}

/// The canonical JSON a row's hash covers: every column but the hashes.
pub fn canonical_row(
    seq: i64,
    at: &str,
    actor: &str,
    event: &str,
    conversation_id: Option<&str>,
    approval_uuid: Option<&str>,
    details: &Value,
) -> String {
    canonical(&serde_json::json!({
        "seq": seq,
        "at": at,
        "actor": actor,
        "event": event,
        "conversation_id": conversation_id,
        "approval_uuid": approval_uuid,
        "details": details,
    }))
}

/// Records `conversation.created`.
pub(crate) fn conversation_created(
    tx: &dyn super::tx::Tx,
    who: &str,
    id: &str,
    session: &str,
) -> Result<(), StoreError> {
    tx.audit(&Event {
        actor: who,
        event: "conversation.created",
        conversation_id: Some(id),
        approval_uuid: None,
        details: serde_json::json!({"session_id": session}),
    })
}

/// Records `message.sent` (its id, not its text: the trail holds who did
/// what, the conversation holds what was said).
pub(crate) fn message_sent(
    tx: &dyn super::tx::Tx,
    who: &str,
    id: &str,
    message_id: Option<&str>,
) -> Result<(), StoreError> {
    tx.audit(&Event {
        actor: who,
        event: "message.sent",
        conversation_id: Some(id),
        approval_uuid: None,
        details: serde_json::json!({"message_id": message_id}),
    })
}

impl Row {
    /// From its columns. A row whose details are not JSON (edited by hand)
    /// still reads, as a string, so `verify` can name it instead of failing
    /// to read.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn decode(
        seq: i64,
        at: String,
        actor: String,
        event: String,
        conversation_id: Option<String>,
        approval_uuid: Option<String>,
        details: String,
        prev_hash: String,
        hash: String,
    ) -> Row {
        let details = serde_json::from_str(&details).unwrap_or(Value::String(details));
        Row {
            seq,
            at,
            actor,
            event,
            conversation_id,
            approval_uuid,
            details,
            prev_hash,
            hash,
        }
    }
}

/// What [`verify`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Intact { rows: i64, head: String },
    Broken { seq: i64, problem: String },
}

/// Walks the whole chain from the first row.
pub(crate) fn verify(tx: &dyn super::tx::Tx, key: Option<&[u8]>) -> Result<Verdict, StoreError> {
    let mut expected_seq = 1;
    let mut prev = GENESIS.to_string();
    let mut after = 0;
    loop {
        let rows = tx.audit_page(after, 1000)?;
        let Some(last) = rows.last() else { break };
        after = last.seq;
        for r in rows {
            if r.seq != expected_seq {
                let problem = if r.seq > expected_seq {
                    format!("row {expected_seq} is missing (the next row is {})", r.seq)
                } else {
                    format!("row {} is out of order", r.seq)
                };
                return Ok(Verdict::Broken {
                    seq: expected_seq.min(r.seq),
                    problem,
                });
            }
            if r.prev_hash != prev {
                return Ok(Verdict::Broken {
                    seq: r.seq,
                    problem: format!(
                        "row {} does not follow row {} (prev_hash differs): a row was deleted, inserted or reordered",
                        r.seq,
                        r.seq - 1
                    ),
                });
            }
            let canonical = canonical_row(
                r.seq,
                &r.at,
                &r.actor,
                &r.event,
                r.conversation_id.as_deref(),
                r.approval_uuid.as_deref(),
                &r.details,
            );
            if chain_hash(key, &r.prev_hash, &canonical) != r.hash {
                return Ok(Verdict::Broken {
                    seq: r.seq,
                    problem: format!(
                        "row {} was changed after it was written (its hash does not match its content{})",
                        r.seq,
                        if key.is_some() {
                            ", or it was rewritten without the audit key"
                        } else {
                            ""
                        }
                    ),
                });
            }
            prev = r.hash;
            expected_seq += 1;
        }
    }
    Ok(Verdict::Intact {
        rows: expected_seq - 1,
        head: prev,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_json_sorts_keys_at_every_level() {
        let v = serde_json::json!({"b": 1, "a": {"d": [1, {"z": true, "y": null}], "c": "x"}});
        assert_eq!(
            canonical(&v),
            r#"{"a":{"c":"x","d":[1,{"y":null,"z":true}]},"b":1}"#
        );
    }

    #[test]
    fn keyed_and_plain_hashes_differ() {
        let a = chain_hash(None, GENESIS, "{}");
        let b = chain_hash(Some(b"k".as_slice()), GENESIS, "{}");
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert_eq!(a, chain_hash(None, GENESIS, "{}"));
    }
}
