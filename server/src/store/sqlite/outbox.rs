//! The notification outbox on SQLite: the statements of [`OutboxTx`], as
//! plain functions on a connection.

use crate::store::error::StoreError;
use crate::store::outbox::{Attempt, COLUMNS, Notification, decode, outcome_columns};
use crate::store::tx::OutboxTx;
use rusqlite::{Connection, Row, params};

impl OutboxTx for Connection {
    fn insert_notification(&self, n: &Notification) -> Result<(), StoreError> {
        insert(self, n)
    }
    fn claim_notifications(
        &self,
        now: &str,
        until: &str,
        limit: u32,
    ) -> Result<Vec<Notification>, StoreError> {
        claim(self, now, until, limit)
    }
    fn finish_notification(&self, id: &str, a: &Attempt, at: &str) -> Result<(), StoreError> {
        finish(self, id, a, at)
    }
    fn recent_notifications(
        &self,
        status: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Notification>, StoreError> {
        recent(self, status, limit)
    }
    fn notification_counts(&self) -> Result<Vec<(String, u64)>, StoreError> {
        counts(self)
    }
    fn retry_notification(&self, id: &str, at: &str) -> Result<bool, StoreError> {
        retry(self, id, at)
    }
    fn prune_notifications(
        &self,
        finished: &str,
        dead: &str,
        limit: u32,
    ) -> Result<u64, StoreError> {
        prune(self, finished, dead, limit)
    }
    fn use_link(&self, link: &str, uuid: &str, by: &str, at: &str) -> Result<bool, StoreError> {
        use_link(self, link, uuid, by, at)
    }
    fn link_used(&self, link: &str) -> Result<bool, StoreError> {
        link_used(self, link)
    }
}

fn row(r: &Row<'_>) -> rusqlite::Result<Notification> {
    Ok(decode(
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
        r.get(7)?,
        r.get(8)?,
        r.get(9)?,
        r.get(10)?,
        r.get(11)?,
        r.get(12)?,
    ))
}

fn insert(conn: &Connection, n: &Notification) -> Result<(), StoreError> {
    let d = &n.delivery;
    conn.prepare_cached(&format!(
        "INSERT INTO notifications ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"
    ))?
    .execute(params![
        d.id,
        d.target,
        d.event,
        d.approval_uuid,
        d.status,
        d.attempts,
        d.next_at,
        d.created_at,
        d.updated_at,
        d.last_error,
        d.delivered_at,
        n.payload.to_string(),
        n.since,
    ])?;
    Ok(())
}

fn claim(
    conn: &Connection,
    now: &str,
    until: &str,
    limit: u32,
) -> Result<Vec<Notification>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "UPDATE notifications SET next_at = ?2 WHERE id IN \
         (SELECT id FROM notifications n WHERE status = 'pending' AND next_at <= ?1 AND {} \
          ORDER BY next_at LIMIT ?3) \
         RETURNING {COLUMNS}",
        crate::store::push::IN_ORDER
    ))?;
    let rows = stmt.query_map(params![now, until, limit], row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

fn finish(conn: &Connection, id: &str, a: &Attempt, at: &str) -> Result<(), StoreError> {
    let (status, next_at, error, delivered) = outcome_columns(a, at);
    conn.prepare_cached(
        "UPDATE notifications SET status = ?2, attempts = attempts + ?3, next_at = COALESCE(?4, next_at), \
         last_error = COALESCE(?5, last_error), delivered_at = ?6, updated_at = ?7 WHERE id = ?1",
    )?
    .execute(params![
        id,
        status,
        i64::from(!matches!(a, Attempt::Skipped { .. })),
        next_at,
        error,
        delivered,
        at
    ])?;
    Ok(())
}

fn recent(
    conn: &Connection,
    status: Option<&str>,
    limit: u32,
) -> Result<Vec<Notification>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM notifications WHERE ?1 IS NULL OR status = ?1 ORDER BY created_at DESC, id DESC LIMIT ?2"
    ))?;
    let rows = stmt.query_map(params![status, limit], row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

fn counts(conn: &Connection) -> Result<Vec<(String, u64)>, StoreError> {
    let mut stmt =
        conn.prepare_cached("SELECT status, COUNT(*) FROM notifications GROUP BY status")?;
    let rows = stmt.query_map([], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?.max(0) as u64))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

fn retry(conn: &Connection, id: &str, at: &str) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached(
            "UPDATE notifications SET status = 'pending', next_at = ?2, since = ?2, updated_at = ?2 \
             WHERE id = ?1 AND status = 'dead'",
        )?
        .execute(params![id, at])?
        == 1)
}

/// The oldest rows past their keeping time (see
/// [`OutboxTx::prune_notifications`]): `finished` is the later cut-off, so the `created_at` index bounds the scan.
fn prune(conn: &Connection, finished: &str, dead: &str, limit: u32) -> Result<u64, StoreError> {
    let n = conn
        .prepare_cached(
            "DELETE FROM notifications WHERE id IN (SELECT id FROM notifications \
             WHERE created_at < ?1 AND (status IN ('delivered', 'skipped') OR (status = 'dead' AND created_at < ?2)) \
             LIMIT ?3)",
        )?
        .execute(params![finished, dead, limit])?;
    Ok(n as u64)
}

fn use_link(
    conn: &Connection,
    link: &str,
    uuid: &str,
    by: &str,
    at: &str,
) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached(
            "INSERT INTO link_uses (link_id, approval_uuid, used_by, used_at) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (link_id) DO NOTHING",
        )?
        .execute(params![link, uuid, by, at])?
        == 1)
}

fn link_used(conn: &Connection, link: &str) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM link_uses WHERE link_id = ?1")?
        .exists(params![link])?)
}
