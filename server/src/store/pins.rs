//! Tool pinning (POLICY.md §4): every MCP tool's definition (description,
//! input schema, annotations) as first seen, by digest, per server. A
//! server that later presents a different definition does not silently
//! change what was trusted: the new one is recorded beside the pin as a
//! change waiting for an admin (`tool.changed`), and accepting it moves
//! the pin (`tool.accepted`); each step is one transaction with its audit
//! row. Reverting to the pinned definition clears the change.

use super::audit::Event;
use super::{Store, StoreError, now};
use rusqlite::{Connection, OptionalExtension, Row, params};

/// One pin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PinRow {
    pub(crate) server: String,
    pub(crate) tool: String,
    pub(crate) digest: String,
    /// The pinned definition, as JSON.
    pub(crate) definition: String,
    pub(crate) pinned_at: String,
    /// A different definition the server presented: (digest, JSON, when).
    pub(crate) changed: Option<(String, String, String)>,
}

/// What seeing a tool's current definition did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Observed {
    /// First seen: pinned now.
    Pinned,
    /// The pinned definition.
    Same,
    /// A different definition, recorded as a change (`first`: just now).
    Changed { first: bool },
    /// Back to the pinned definition: the recorded change was cleared.
    Reverted,
}

pub(in crate::store) const PIN_COLUMNS: &str =
    "server, tool, digest, definition, pinned_at, changed_digest, changed_definition, changed_at";

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

// SQLite statements (the PostgreSQL ones are in `postgres/tx.rs`).

pub(crate) fn all(conn: &Connection) -> Result<Vec<PinRow>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {PIN_COLUMNS} FROM tool_pins ORDER BY server, tool"
    ))?;
    let rows = stmt.query_map([], row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub(crate) fn get(
    conn: &Connection,
    server: &str,
    tool: &str,
) -> Result<Option<PinRow>, StoreError> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {PIN_COLUMNS} FROM tool_pins WHERE server = ?1 AND tool = ?2"
        ))?
        .query_row(params![server, tool], row)
        .optional()?)
}

pub(crate) fn insert(conn: &Connection, p: &PinRow) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached(
            "INSERT INTO tool_pins (server, tool, digest, definition, pinned_at) VALUES (?1, ?2, ?3, ?4, ?5) \
             ON CONFLICT (server, tool) DO NOTHING",
        )?
        .execute(params![p.server, p.tool, p.digest, p.definition, p.pinned_at])?
        == 1)
}

pub(crate) fn set_change(
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

pub(crate) fn accept(
    conn: &Connection,
    server: &str,
    tool: &str,
    at: &str,
) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached(
            "UPDATE tool_pins SET digest = changed_digest, definition = changed_definition, pinned_at = ?3, \
             changed_digest = NULL, changed_definition = NULL, changed_at = NULL \
             WHERE server = ?1 AND tool = ?2 AND changed_digest IS NOT NULL",
        )?
        .execute(params![server, tool, at])?
        == 1)
}

impl Store {
    /// Every pin.
    pub(crate) async fn pins(&self) -> Result<Vec<PinRow>, StoreError> {
        self.read(|tx| tx.pins()).await
    }

    /// Records what a server presents for `tool` now (`definition`: JSON,
    /// `digest`: its hash): pinned the first time, a change when it
    /// differs from the pin (`tool.changed` audited once per new
    /// definition), cleared when it is the pin again.
    pub(crate) async fn observe_tool(
        &self,
        server: &str,
        tool: &str,
        digest: &str,
        definition: &str,
    ) -> Result<Observed, StoreError> {
        let (server, tool, digest, definition) = (
            server.to_string(),
            tool.to_string(),
            digest.to_string(),
            definition.to_string(),
        );
        let routes = self.routes.clone();
        self.write(move |tx| {
            let Some(pin) = tx.pin(&server, &tool)? else {
                tx.insert_pin(&PinRow {
                    server,
                    tool,
                    digest,
                    definition,
                    pinned_at: now(),
                    changed: None,
                })?;
                return Ok(Observed::Pinned);
            };
            if pin.digest == digest {
                if pin.changed.is_some() {
                    tx.set_pin_change(&server, &tool, None)?;
                    return Ok(Observed::Reverted);
                }
                return Ok(Observed::Same);
            }
            if pin.changed.as_ref().is_some_and(|(d, _, _)| *d == digest) {
                return Ok(Observed::Changed { first: false });
            }
            tx.set_pin_change(&server, &tool, Some((&digest, &definition, &now())))?;
            tx.audit(&Event {
                actor: "agent",
                event: "tool.changed",
                conversation_id: None,
                approval_uuid: None,
                details: serde_json::json!({
                    "server": server,
                    "tool": tool,
                    "pinned_digest": pin.digest,
                    "new_digest": digest,
                }),
            })?;
            super::outbox::announce_tool(
                tx,
                &routes,
                serde_json::json!({
                    "server": server,
                    "name": tool,
                    "pinned_digest": pin.digest,
                    "new_digest": digest,
                    "pinned": serde_json::from_str::<serde_json::Value>(&pin.definition).unwrap_or_default(),
                    "changed": serde_json::from_str::<serde_json::Value>(&definition).unwrap_or_default(),
                }),
            )?;
            Ok(Observed::Changed { first: true })
        })
        .await
    }

    /// Accepts the changed definition of `tool` (`tool.accepted` by `by`);
    /// false when no change waits.
    pub(crate) async fn accept_tool(
        &self,
        server: &str,
        tool: &str,
        by: &str,
    ) -> Result<bool, StoreError> {
        let (server, tool, by) = (server.to_string(), tool.to_string(), by.to_string());
        self.write(move |tx| {
            let Some(pin) = tx.pin(&server, &tool)? else {
                return Ok(false);
            };
            let Some((digest, _, _)) = pin.changed else {
                return Ok(false);
            };
            if !tx.accept_pin(&server, &tool)? {
                return Ok(false);
            }
            tx.audit(&Event {
                actor: &by,
                event: "tool.accepted",
                conversation_id: None,
                approval_uuid: None,
                details: serde_json::json!({
                    "server": server,
                    "tool": tool,
                    "previous_digest": pin.digest,
                    "digest": digest,
                }),
            })?;
            Ok(true)
        })
        .await
    }
}
