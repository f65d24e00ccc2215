//! A2A push notification configs on SQLite: the statements of
//! [`PushTx`], as plain functions on a connection.

use crate::store::error::StoreError;
use crate::store::push::{ADVANCE, COLUMNS, PushConfig, UNSETTLED};
use crate::store::tx::PushTx;
use rusqlite::{Connection, OptionalExtension, Row, params};

impl PushTx for Connection {
    fn put_push_config(&self, p: &PushConfig) -> Result<(), StoreError> {
        put(self, p)
    }
    fn push_configs(&self, task_id: &str) -> Result<Vec<PushConfig>, StoreError> {
        of_task(self, task_id)
    }
    fn push_config(&self, uid: &str) -> Result<Option<PushConfig>, StoreError> {
        by_uid(self, uid)
    }
    fn delete_push_config(&self, task_id: &str, config_id: &str) -> Result<bool, StoreError> {
        delete(self, task_id, config_id)
    }
    fn advance_push(&self, uid: &str, state: &str) -> Result<bool, StoreError> {
        advance(self, uid, state)
    }
    fn unsettled_push_configs(&self, limit: u32) -> Result<Vec<PushConfig>, StoreError> {
        unsettled(self, limit)
    }
}

fn row(r: &Row<'_>) -> rusqlite::Result<PushConfig> {
    Ok(PushConfig {
        uid: r.get(0)?,
        task_id: r.get(1)?,
        config_id: r.get(2)?,
        url: r.get(3)?,
        token: r.get(4)?,
        auth_scheme: r.get(5)?,
        credentials: r.get(6)?,
        dialect: r.get(7)?,
        created_by: r.get(8)?,
        created_at: r.get(9)?,
        last_state: r.get(10)?,
    })
}

fn put(conn: &Connection, p: &PushConfig) -> Result<(), StoreError> {
    conn.prepare_cached(&format!(
        "INSERT INTO push_configs ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) \
         ON CONFLICT (task_id, config_id) DO UPDATE SET url = excluded.url, token = excluded.token, \
         auth_scheme = excluded.auth_scheme, credentials = excluded.credentials, dialect = excluded.dialect, \
         created_by = excluded.created_by, created_at = excluded.created_at, last_state = NULL"
    ))?
    .execute(params![
        p.uid,
        p.task_id,
        p.config_id,
        p.url,
        p.token,
        p.auth_scheme,
        p.credentials,
        p.dialect,
        p.created_by,
        p.created_at,
        p.last_state
    ])?;
    Ok(())
}

fn of_task(conn: &Connection, task_id: &str) -> Result<Vec<PushConfig>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM push_configs WHERE task_id = ?1 ORDER BY created_at, config_id"
    ))?;
    let rows = stmt.query_map(params![task_id], row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

fn by_uid(conn: &Connection, uid: &str) -> Result<Option<PushConfig>, StoreError> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM push_configs WHERE uid = ?1"
        ))?
        .query_row(params![uid], row)
        .optional()?)
}

fn delete(conn: &Connection, task_id: &str, config_id: &str) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached("DELETE FROM push_configs WHERE task_id = ?1 AND config_id = ?2")?
        .execute(params![task_id, config_id])?
        == 1)
}

fn advance(conn: &Connection, uid: &str, state: &str) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached(&ADVANCE.replace('$', "?"))?
        .execute(params![uid, state])?
        == 1)
}

fn unsettled(conn: &Connection, limit: u32) -> Result<Vec<PushConfig>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM push_configs WHERE {UNSETTLED} ORDER BY created_at LIMIT ?1"
    ))?;
    let rows = stmt.query_map(params![limit], row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}
