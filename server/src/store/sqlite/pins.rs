//! Tool pins on SQLite: the statements of [`PinTx`], as plain functions
//! on a connection.

use crate::domain::ids::now;
use crate::store::error::StoreError;
use crate::store::pins::{PIN_COLUMNS, PinRow};
use crate::store::tx::PinTx;
use rusqlite::{Connection, OptionalExtension, Row, params};

impl PinTx for Connection {
    fn pins(&self) -> Result<Vec<PinRow>, StoreError> {
        all(self)
    }
    fn pin(&self, server: &str, tool: &str) -> Result<Option<PinRow>, StoreError> {
        get(self, server, tool)
    }
    fn insert_pin(&self, p: &PinRow) -> Result<bool, StoreError> {
        insert(self, p)
    }
    fn set_pin_change(
        &self,
        server: &str,
        tool: &str,
        change: Option<(&str, &str, &str)>,
    ) -> Result<(), StoreError> {
        set_change(self, server, tool, change)
    }
    fn accept_pin(&self, server: &str, tool: &str) -> Result<bool, StoreError> {
        accept(self, server, tool, &now())
    }
}

fn row(r: &Row<'_>) -> rusqlite::Result<PinRow> {
    Ok(PinRow {
        server: r.get(0)?,
        tool: r.get(1)?,
        digest: r.get(2)?,
        definition: r.get(3)?,
        pinned_at: r.get(4)?,
        changed: match (r.get(5)?, r.get(6)?, r.get(7)?) {
            (Some(d), Some(j), Some(at)) => Some((d, j, at)),
            _ => None,
        },
    })
}

fn all(conn: &Connection) -> Result<Vec<PinRow>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {PIN_COLUMNS} FROM tool_pins ORDER BY server, tool"
    ))?;
    let rows = stmt.query_map([], row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

fn get(conn: &Connection, server: &str, tool: &str) -> Result<Option<PinRow>, StoreError> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {PIN_COLUMNS} FROM tool_pins WHERE server = ?1 AND tool = ?2"
        ))?
        .query_row(params![server, tool], row)
        .optional()?)
}

fn insert(conn: &Connection, p: &PinRow) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached(
            "INSERT INTO tool_pins (server, tool, digest, definition, pinned_at) VALUES (?1, ?2, ?3, ?4, ?5) \
             ON CONFLICT (server, tool) DO NOTHING",
        )?
        .execute(params![p.server, p.tool, p.digest, p.definition, p.pinned_at])?
        == 1)
}

fn set_change(
    conn: &Connection,
    server: &str,
    tool: &str,
    change: Option<(&str, &str, &str)>,
) -> Result<(), StoreError> {
    let (d, j, at) = match change {
        Some((d, j, at)) => (Some(d), Some(j), Some(at)),
        None => (None, None, None),
    };
    conn.prepare_cached(
        "UPDATE tool_pins SET changed_digest = ?3, changed_definition = ?4, changed_at = ?5 \
         WHERE server = ?1 AND tool = ?2",
    )?
    .execute(params![server, tool, d, j, at])?;
    Ok(())
}

fn accept(conn: &Connection, server: &str, tool: &str, at: &str) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached(
            "UPDATE tool_pins SET digest = changed_digest, definition = changed_definition, pinned_at = ?3, \
             changed_digest = NULL, changed_definition = NULL, changed_at = NULL \
             WHERE server = ?1 AND tool = ?2 AND changed_digest IS NOT NULL",
        )?
        .execute(params![server, tool, at])?
        == 1)
}
