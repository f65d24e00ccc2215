//! The notification outbox on PostgreSQL: the statements of [`OutboxTx`]
//! on a [`PgTx`]. Replicas claim due rows with `SKIP LOCKED`, so they
//! never wait for each other's claims.

use super::tx::PgTx;
use crate::store::error::StoreError;
use crate::store::outbox::{self, Attempt, Notification};
use crate::store::tx::OutboxTx;
use postgres::Row;

impl OutboxTx for PgTx<'_> {
    fn insert_notification(&self, n: &Notification) -> Result<(), StoreError> {
        let d = &n.delivery;
        let attempts = i64::from(d.attempts);
        let payload = n.payload.to_string();
        self.exec(
            &format!(
                "INSERT INTO notifications ({}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
                outbox::COLUMNS
            ),
            &[
                &d.id,
                &d.target,
                &d.event,
                &d.approval_uuid,
                &d.status,
                &attempts,
                &d.next_at,
                &d.created_at,
                &d.updated_at,
                &d.last_error,
                &d.delivered_at,
                &payload,
                &n.since,
            ],
        )?;
        Ok(())
    }
    fn claim_notifications(
        &self,
        now: &str,
        until: &str,
        limit: u32,
    ) -> Result<Vec<Notification>, StoreError> {
        // SKIP LOCKED: replicas claiming at the same moment take
        // different rows instead of waiting for each other.
        let sql = format!(
            "UPDATE notifications SET next_at = $2 WHERE id IN \
             (SELECT id FROM notifications n WHERE status = 'pending' AND next_at <= $1 AND {} \
              ORDER BY next_at LIMIT $3 FOR UPDATE SKIP LOCKED) RETURNING {}",
            crate::store::push::IN_ORDER,
            outbox::COLUMNS
        );
        Ok(self
            .query(&sql, &[&now, &until, &i64::from(limit)])?
            .iter()
            .map(notification_row)
            .collect())
    }
    fn finish_notification(&self, id: &str, a: &Attempt, at: &str) -> Result<(), StoreError> {
        let (status, next_at, error, delivered) = outbox::outcome_columns(a, at);
        let counted = i64::from(!matches!(a, Attempt::Skipped { .. }));
        self.exec(
            "UPDATE notifications SET status = $2, attempts = attempts + $3, next_at = COALESCE($4, next_at), \
             last_error = COALESCE($5, last_error), delivered_at = $6, updated_at = $7 WHERE id = $1",
            &[&id, &status, &counted, &next_at, &error, &delivered, &at],
        )?;
        Ok(())
    }
    fn recent_notifications(
        &self,
        status: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Notification>, StoreError> {
        let sql = format!(
            "SELECT {} FROM notifications WHERE $1::TEXT IS NULL OR status = $1 \
             ORDER BY created_at DESC, id DESC LIMIT $2",
            outbox::COLUMNS
        );
        Ok(self
            .query(&sql, &[&status, &i64::from(limit)])?
            .iter()
            .map(notification_row)
            .collect())
    }
    fn notification_counts(&self) -> Result<Vec<(String, u64)>, StoreError> {
        Ok(self
            .query(
                "SELECT status, COUNT(*) FROM notifications GROUP BY status",
                &[],
            )?
            .iter()
            .map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1).max(0) as u64))
            .collect())
    }
    fn retry_notification(&self, id: &str, at: &str) -> Result<bool, StoreError> {
        Ok(self.exec(
            "UPDATE notifications SET status = 'pending', next_at = $2, since = $2, updated_at = $2 \
             WHERE id = $1 AND status = 'dead'",
            &[&id, &at],
        )? == 1)
    }
    fn prune_notifications(
        &self,
        finished: &str,
        dead: &str,
        limit: u32,
    ) -> Result<u64, StoreError> {
        self.exec(
            "DELETE FROM notifications WHERE id IN (SELECT id FROM notifications \
             WHERE created_at < $1 AND (status IN ('delivered', 'skipped') OR (status = 'dead' AND created_at < $2)) \
             LIMIT $3)",
            &[&finished, &dead, &i64::from(limit)],
        )
    }
    fn use_link(&self, link: &str, uuid: &str, by: &str, at: &str) -> Result<bool, StoreError> {
        Ok(self.exec(
            "INSERT INTO link_uses (link_id, approval_uuid, used_by, used_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (link_id) DO NOTHING",
            &[&link, &uuid, &by, &at],
        )? == 1)
    }
    fn link_used(&self, link: &str) -> Result<bool, StoreError> {
        Ok(self
            .first("SELECT 1 FROM link_uses WHERE link_id = $1", &[&link])?
            .is_some())
    }
}

fn notification_row(r: &Row) -> Notification {
    outbox::decode(
        r.get(0),
        r.get(1),
        r.get(2),
        r.get(3),
        r.get(4),
        r.get(5),
        r.get(6),
        r.get(7),
        r.get(8),
        r.get(9),
        r.get(10),
        r.get(11),
        r.get(12),
    )
}
