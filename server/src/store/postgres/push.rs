//! A2A push notification configs on PostgreSQL: the statements of
//! [`PushTx`] on a [`PgTx`].

use super::tx::PgTx;
use crate::store::error::StoreError;
use crate::store::push::{self, PushConfig};
use crate::store::tx::PushTx;
use postgres::Row;

impl PushTx for PgTx<'_> {
    fn put_push_config(&self, p: &PushConfig) -> Result<(), StoreError> {
        self.exec(
            &format!(
                "INSERT INTO push_configs ({}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
                 ON CONFLICT (task_id, config_id) DO UPDATE SET url = excluded.url, token = excluded.token, \
                 auth_scheme = excluded.auth_scheme, credentials = excluded.credentials, dialect = excluded.dialect, \
                 created_by = excluded.created_by, created_at = excluded.created_at, last_state = NULL",
                push::COLUMNS
            ),
            &[
                &p.uid,
                &p.task_id,
                &p.config_id,
                &p.url,
                &p.token,
                &p.auth_scheme,
                &p.credentials,
                &p.dialect,
                &p.created_by,
                &p.created_at,
                &p.last_state,
            ],
        )?;
        Ok(())
    }
    fn push_configs(&self, task_id: &str) -> Result<Vec<PushConfig>, StoreError> {
        let sql = format!(
            "SELECT {} FROM push_configs WHERE task_id = $1 ORDER BY created_at, config_id",
            push::COLUMNS
        );
        Ok(self
            .query(&sql, &[&task_id])?
            .iter()
            .map(push_row)
            .collect())
    }
    fn push_config(&self, uid: &str) -> Result<Option<PushConfig>, StoreError> {
        let sql = format!("SELECT {} FROM push_configs WHERE uid = $1", push::COLUMNS);
        Ok(self.first(&sql, &[&uid])?.as_ref().map(push_row))
    }
    fn delete_push_config(&self, task_id: &str, config_id: &str) -> Result<bool, StoreError> {
        Ok(self.exec(
            "DELETE FROM push_configs WHERE task_id = $1 AND config_id = $2",
            &[&task_id, &config_id],
        )? == 1)
    }
    fn advance_push(&self, uid: &str, state: &str) -> Result<bool, StoreError> {
        Ok(self.exec(push::ADVANCE, &[&uid, &state])? == 1)
    }
    fn unsettled_push_configs(&self, limit: u32) -> Result<Vec<PushConfig>, StoreError> {
        let sql = format!(
            "SELECT {} FROM push_configs WHERE {} ORDER BY created_at LIMIT $1",
            push::COLUMNS,
            push::UNSETTLED
        );
        Ok(self
            .query(&sql, &[&i64::from(limit)])?
            .iter()
            .map(push_row)
            .collect())
    }
}

fn push_row(r: &Row) -> PushConfig {
    PushConfig {
        uid: r.get(0),
        task_id: r.get(1),
        config_id: r.get(2),
        url: r.get(3),
        token: r.get(4),
        auth_scheme: r.get(5),
        credentials: r.get(6),
        dialect: r.get(7),
        created_by: r.get(8),
        created_at: r.get(9),
        last_state: r.get(10),
    }
}
