//! Sign-in sessions on SQLite: the statements of [`SessionTx`], as plain
//! functions on a connection.

use crate::domain::ids::now;
use crate::store::error::StoreError;
use crate::store::sessions::Session;
use crate::store::tx::SessionTx;
use rusqlite::{Connection, OptionalExtension, params};

impl SessionTx for Connection {
    fn insert_session(&self, id_hash: &str, s: &Session) -> Result<(), StoreError> {
        insert(self, id_hash, s)
    }
    fn session(&self, id_hash: &str, now: &str) -> Result<Option<Session>, StoreError> {
        get(self, id_hash, now)
    }
    fn session_of(&self, name: &str, now: &str) -> Result<Option<Session>, StoreError> {
        Ok(self
            .prepare_cached(
                "SELECT name, roles, expires_at FROM sessions WHERE name = ?1 AND expires_at > ?2 \
                 ORDER BY created_at DESC LIMIT 1",
            )?
            .query_row(params![name, now], |r| {
                Ok(Session::decode(
                    r.get(0)?,
                    r.get::<_, String>(1)?,
                    r.get(2)?,
                ))
            })
            .optional()?)
    }
    fn delete_session(&self, id_hash: &str) -> Result<Option<Session>, StoreError> {
        delete(self, id_hash)
    }
    fn purge_sessions(&self, now: &str) -> Result<usize, StoreError> {
        purge(self, now)
    }
}

/// Stores a session under `id_hash`.
fn insert(conn: &Connection, id_hash: &str, s: &Session) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO sessions (id_hash, name, roles, created_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![id_hash, s.name, s.roles.join(","), now(), s.expires_at])?;
    Ok(())
}

/// The live session under `id_hash`, if any (`now` is RFC 3339, like
/// `expires_at`, so they compare as strings).
fn get(conn: &Connection, id_hash: &str, now: &str) -> Result<Option<Session>, StoreError> {
    Ok(conn
        .prepare_cached(
            "SELECT name, roles, expires_at FROM sessions WHERE id_hash = ?1 AND expires_at > ?2",
        )?
        .query_row(params![id_hash, now], |r| {
            Ok(Session::decode(
                r.get(0)?,
                r.get::<_, String>(1)?,
                r.get(2)?,
            ))
        })
        .optional()?)
}

/// Deletes a session; returns it if it existed.
fn delete(conn: &Connection, id_hash: &str) -> Result<Option<Session>, StoreError> {
    let s = get(conn, id_hash, "")?;
    conn.prepare_cached("DELETE FROM sessions WHERE id_hash = ?1")?
        .execute([id_hash])?;
    Ok(s)
}

/// Deletes expired sessions.
fn purge(conn: &Connection, now: &str) -> Result<usize, StoreError> {
    Ok(conn
        .prepare_cached("DELETE FROM sessions WHERE expires_at <= ?1")?
        .execute([now])?)
}
