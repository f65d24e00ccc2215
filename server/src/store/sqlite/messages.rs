//! Messages on SQLite: the statements of [`MessageTx`], as plain
//! functions on a connection.

use crate::domain::ids::new_id;
use crate::domain::ids::now;
use crate::store::error::StoreError;
use crate::store::messages::{
    NewMessage, RawMessage, RawOutcome, StoredMessage, millis_between, with_result,
};
use crate::store::tx::MessageTx;
use app::models::Message;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};
use std::collections::HashMap;

impl MessageTx for Connection {
    fn append(&self, conversation_id: &str, m: NewMessage) -> Result<Option<Message>, StoreError> {
        append(self, conversation_id, m.storable())
    }
    fn mark_started(&self, message_id: &str) -> Result<(), StoreError> {
        mark_started(self, message_id)
    }
    fn clear_started(&self, message_id: &str) -> Result<(), StoreError> {
        clear_started(self, message_id)
    }
    fn set_result(
        &self,
        message_id: &str,
        result: &str,
        is_error: bool,
    ) -> Result<bool, StoreError> {
        set_result(self, message_id, result, is_error)
    }
    fn messages(&self, conversation_id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        stored(self, conversation_id)
    }
    fn running_ms(&self, message_id: &str) -> Result<Option<u64>, StoreError> {
        running_ms(self, message_id)
    }
}

/// Appends a message and touches the conversation; `None` if it does not exist.
fn append(
    conn: &Connection,
    conversation_id: &str,
    m: NewMessage,
) -> Result<Option<Message>, StoreError> {
    let ts = now();
    let e = m.encoded()?;
    // The list item's columns move with the message, in its transaction.
    let touched = conn
        .prepare_cached(
            "UPDATE conversations SET updated_at = ?2, message_count = message_count + 1, \
             last_role = COALESCE(?4, last_role), last_content = COALESCE(?5, last_content), \
             last_talk = CASE WHEN ?4 IN ('user', 'assistant') THEN ?4 ELSE last_talk END, \
             title = COALESCE(title, CASE WHEN ?3 = 'user' THEN ?5 END) WHERE id = ?1",
        )?
        .execute(params![
            conversation_id,
            ts,
            m.role.as_str(),
            e.preview.as_ref().map(|_| m.role.as_str()),
            e.preview
        ])?;
    if touched == 0 {
        return Ok(None);
    }
    let id = new_id();
    conn.prepare_cached("INSERT INTO messages (id, conversation_id, role, content, tool_call, created_at, call_id, step, server, signature, node, node_run) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)")?
        .execute(params![id, conversation_id, m.role.as_str(), m.content, e.tool_call, ts, m.call_id, m.step, e.server, m.signature, e.node, e.node_run])?;
    Ok(Some(e.message(m, id, ts)))
}

/// Marks a tool call as started (written before the tool runs).
fn mark_started(conn: &Connection, message_id: &str) -> Result<(), StoreError> {
    conn.prepare_cached("UPDATE messages SET started_at = ?2 WHERE id = ?1")?
        .execute(params![message_id, now()])?;
    Ok(())
}

/// Clears a call's start: a call to a sub-agent that came back waiting for
/// a proxy approval is not in flight any more.
fn clear_started(conn: &Connection, message_id: &str) -> Result<(), StoreError> {
    conn.prepare_cached("UPDATE messages SET started_at = NULL WHERE id = ?1")?
        .execute(params![message_id])?;
    Ok(())
}

/// Records a tool call's result; false if the message does not exist or
/// already has a result (a result is written once).
fn set_result(
    conn: &Connection,
    message_id: &str,
    result: &str,
    is_error: bool,
) -> Result<bool, StoreError> {
    let row: Option<String> = conn
        .prepare_cached("SELECT tool_call FROM messages WHERE id = ?1")?
        .query_row([message_id], |r| r.get(0))
        .optional()?
        .flatten();
    let Some(json) = with_result(message_id, row, result, is_error)? else {
        return Ok(false);
    };
    let ts = now();
    conn.prepare_cached("UPDATE messages SET tool_call = ?2, finished_at = ?3 WHERE id = ?1")?
        .execute(params![message_id, json, ts])?;
    conn.prepare_cached("UPDATE conversations SET updated_at = ?2 WHERE id = (SELECT conversation_id FROM messages WHERE id = ?1)")?
        .execute(params![message_id, ts])?;
    Ok(true)
}

/// Every message of a conversation with its hidden columns, oldest first.
fn stored(conn: &Connection, conversation_id: &str) -> Result<Vec<StoredMessage>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, role, content, tool_call, created_at, call_id, step, signature, started_at, finished_at, node, node_run \
         FROM messages WHERE conversation_id = ?1 ORDER BY seq",
    )?;
    let rows = stmt.query_map([conversation_id], |r| {
        Ok((
            RawMessage {
                id: r.get(0)?,
                role: r.get(1)?,
                content: r.get(2)?,
                tool_call: r.get(3)?,
                created_at: r.get(4)?,
                // The engine's view: the tool call exactly as stored.
                started_at: None,
                finished_at: None,
                approval: None,
                node: r.get(10)?,
                client_id: r.get(5)?,
            },
            r.get::<_, Option<String>>(5)?,
            r.get::<_, Option<String>>(6)?,
            r.get::<_, Option<String>>(7)?,
            r.get::<_, Option<String>>(8)?,
            r.get::<_, Option<String>>(9)?,
            r.get::<_, Option<String>>(11)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (raw, call_id, step, signature, started_at, finished_at, node_run) = row?;
        out.push(StoredMessage {
            message: raw.decode()?,
            call_id,
            step,
            signature,
            started_at,
            finished_at,
            node_run,
        });
    }
    Ok(out)
}

/// Messages of the given conversations, oldest first, grouped by conversation.
pub(super) fn of_conversations(
    conn: &Connection,
    ids: &[String],
) -> Result<HashMap<String, Vec<Message>>, StoreError> {
    let mut out: HashMap<String, Vec<Message>> = HashMap::new();
    if ids.is_empty() {
        return Ok(out);
    }
    let marks = vec!["?"; ids.len()].join(",");
    // The approval of a tool call (if it needed one) and its timing come
    // along, so the UI can show the outcome, who decided, and the duration.
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT m.conversation_id, m.id, m.role, m.content, m.tool_call, m.created_at, \
                m.started_at, m.finished_at, a.uuid, a.status, a.reason, a.decided_by, a.decided_at, m.node, \
                a.requested_by, a.decided_via, a.edited_args, m.call_id \
         FROM messages m LEFT JOIN approvals a ON a.rowid = \
             (SELECT rowid FROM approvals WHERE message_id = m.id ORDER BY rowid DESC LIMIT 1) \
         WHERE m.conversation_id IN ({marks}) ORDER BY m.seq"
    ))?;
    let rows = stmt.query_map(params_from_iter(ids.iter()), |r| {
        Ok((
            r.get::<_, String>(0)?,
            RawMessage {
                id: r.get(1)?,
                role: r.get(2)?,
                content: r.get(3)?,
                tool_call: r.get(4)?,
                created_at: r.get(5)?,
                started_at: r.get(6)?,
                finished_at: r.get(7)?,
                approval: match r.get::<_, Option<String>>(8)? {
                    Some(uuid) => Some(RawOutcome {
                        uuid,
                        status: r.get(9)?,
                        reason: r.get(10)?,
                        decided_by: r.get(11)?,
                        decided_at: r.get(12)?,
                        requested_by: r.get(14)?,
                        decided_via: r.get(15)?,
                        edited_args: r.get(16)?,
                    }),
                    None => None,
                },
                node: r.get(13)?,
                client_id: r.get(17)?,
            },
        ))
    })?;
    for row in rows {
        let (conv, raw) = row?;
        out.entry(conv).or_default().push(raw.decode()?);
    }
    Ok(out)
}

/// How long a tool call has run, from its `started_at` to now.
fn running_ms(conn: &Connection, id: &str) -> Result<Option<u64>, StoreError> {
    use rusqlite::OptionalExtension;
    let started: Option<String> = conn
        .prepare_cached("SELECT started_at FROM messages WHERE id = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()?
        .flatten();
    Ok(started.and_then(|s| millis_between(&s, &now())))
}
