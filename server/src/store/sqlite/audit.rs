//! The audit trail on SQLite: the statements of [`AuditTx`], and the SQL
//! function `stopgo_audit_hash` every connection registers with the
//! chain's key, so a row is hashed inside the statement that appends it.

use crate::domain::digest::canonical;
use crate::domain::ids::now;
use crate::store::audit::{self, Event, GENESIS, canonical_row, chain_hash};
use crate::store::error::StoreError;
use crate::store::tx::AuditTx;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

impl AuditTx for Connection {
    fn audit(&self, e: &Event<'_>) -> Result<(), StoreError> {
        append(self, e)
    }
    fn audit_page(&self, after: i64, limit: u32) -> Result<Vec<audit::Row>, StoreError> {
        page(self, after, limit)
    }
    fn audit_head(&self) -> Result<(i64, String), StoreError> {
        head(self)
    }
}

/// Registers `stopgo_audit_hash(prev_hash, canonical)` on `conn`.
pub(super) fn register(
    conn: &Connection,
    key: Option<std::sync::Arc<[u8]>>,
) -> rusqlite::Result<()> {
    use rusqlite::functions::FunctionFlags;
    conn.create_scalar_function(
        "stopgo_audit_hash",
        2,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        move |ctx| {
            let prev: String = ctx.get(0)?;
            let canonical: String = ctx.get(1)?;
            Ok(chain_hash(key.as_deref(), &prev, &canonical))
        },
    )
}

/// Appends `e` inside the caller's transaction.
fn append(conn: &Connection, e: &Event<'_>) -> Result<(), StoreError> {
    let head: Option<(i64, String)> = conn
        .prepare_cached("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1")?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let (prev_seq, prev_hash) = head.unwrap_or((0, GENESIS.to_string()));
    let seq = prev_seq + 1;
    let at = now();
    let canonical = canonical_row(
        seq,
        &at,
        e.actor,
        e.event,
        e.conversation_id,
        e.approval_uuid,
        &e.details,
    );
    conn.prepare_cached(
        "INSERT INTO audit (seq, at, actor, event, conversation_id, approval_uuid, details, prev_hash, hash) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, stopgo_audit_hash(?8, ?9))",
    )?
    .execute(params![
        seq,
        at,
        e.actor,
        e.event,
        e.conversation_id,
        e.approval_uuid,
        canonical_details(&e.details),
        prev_hash,
        canonical
    ])?;
    Ok(())
}

fn canonical_details(v: &Value) -> String {
    canonical(v)
}

/// Up to `limit` rows after `after`, oldest first.
fn page(conn: &Connection, after: i64, limit: u32) -> Result<Vec<audit::Row>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, at, actor, event, conversation_id, approval_uuid, details, prev_hash, hash \
         FROM audit WHERE seq > ?1 ORDER BY seq LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![after, limit], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, String>(3)?,
            r.get::<_, Option<String>>(4)?,
            r.get::<_, Option<String>>(5)?,
            r.get::<_, String>(6)?,
            r.get::<_, String>(7)?,
            r.get::<_, String>(8)?,
        ))
    })?;
    rows.map(|row| {
        let (seq, at, actor, event, conversation_id, approval_uuid, details, prev_hash, hash) =
            row?;
        Ok(audit::Row::decode(
            seq,
            at,
            actor,
            event,
            conversation_id,
            approval_uuid,
            details,
            prev_hash,
            hash,
        ))
    })
    .collect()
}

/// The newest row's `(seq, hash)`, or `(0, GENESIS)` for an empty trail.
fn head(conn: &Connection) -> Result<(i64, String), StoreError> {
    Ok(conn
        .prepare_cached("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1")?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?
        .unwrap_or((0, GENESIS.to_string())))
}
