//! Messages on PostgreSQL: the statements of [`MessageTx`] on a [`PgTx`].
//! A message is appended with its conversation's summary columns in one
//! statement; to a conversation the transaction knows exists, without
//! waiting for the answer (the statement raises if nothing was inserted).

use super::tx::{PgTx, own};
use crate::domain::ids::new_id;
use crate::domain::ids::now;
use crate::store::error::StoreError;
use crate::store::messages::{NewMessage, RawMessage, RawOutcome, StoredMessage};
use crate::store::tx::MessageTx;
use app::models::Message;
use postgres::Row;
use postgres::types::ToSql;
use std::collections::HashMap;

impl MessageTx for PgTx<'_> {
    fn append(&self, conversation_id: &str, m: NewMessage) -> Result<Option<Message>, StoreError> {
        let (params, message) = append_params(conversation_id, m, now())?;
        if self.knows(conversation_id) {
            // It exists (inserted or fenced here): held, and the statement
            // raises if it did not insert the row after all.
            self.defer(APPEND_KNOWN, params)?;
        } else {
            let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref()).collect();
            if self.exec(APPEND, &refs)? == 0 {
                return Ok(None);
            }
        }
        Ok(Some(message))
    }
    fn mark_started(&self, message_id: &str) -> Result<(), StoreError> {
        self.defer(
            "UPDATE messages SET started_at = $2 WHERE id = $1",
            vec![own(message_id.to_string()), own(now())],
        )
    }
    fn clear_started(&self, message_id: &str) -> Result<(), StoreError> {
        self.defer(
            "UPDATE messages SET started_at = NULL WHERE id = $1",
            vec![own(message_id.to_string())],
        )
    }
    fn set_result(
        &self,
        message_id: &str,
        result: &str,
        is_error: bool,
    ) -> Result<bool, StoreError> {
        let raw: Option<String> = self
            .first(
                "SELECT tool_call FROM messages WHERE id = $1 FOR UPDATE",
                &[&message_id],
            )?
            .and_then(|r| r.get(0));
        self.write_result(message_id, raw, result, is_error)
    }
    /// One statement reads the call's start and locks its row for the
    /// result (two round trips otherwise).
    fn finish_result(
        &self,
        message_id: &str,
        result: &str,
        is_error: bool,
    ) -> Result<Option<u64>, StoreError> {
        let row = self.first(
            "SELECT started_at, tool_call FROM messages WHERE id = $1 FOR UPDATE",
            &[&message_id],
        )?;
        let (started, raw): (Option<String>, Option<String>) = match row {
            Some(r) => (r.get(0), r.get(1)),
            None => (None, None),
        };
        self.write_result(message_id, raw, result, is_error)?;
        Ok(started.and_then(|s| crate::store::messages::millis_between(&s, &now())))
    }
    fn messages(&self, conversation_id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        let rows = self.query(
            "SELECT id, role, content, tool_call, created_at, call_id, step, signature, started_at, finished_at, node, node_run \
             FROM messages WHERE conversation_id = $1 ORDER BY seq",
            &[&conversation_id],
        )?;
        rows.iter()
            .map(|r| {
                let raw = RawMessage {
                    id: r.get(0),
                    role: r.get(1),
                    content: r.get(2),
                    tool_call: r.get(3),
                    created_at: r.get(4),
                    started_at: None,
                    finished_at: None,
                    approval: None,
                    node: r.get(10),
                    client_id: r.get(5),
                };
                Ok(StoredMessage {
                    message: raw.decode()?,
                    call_id: r.get(5),
                    step: r.get(6),
                    signature: r.get(7),
                    started_at: r.get(8),
                    finished_at: r.get(9),
                    node_run: r.get(11),
                })
            })
            .collect()
    }
    fn running_ms(&self, message_id: &str) -> Result<Option<u64>, StoreError> {
        let started: Option<String> = self
            .first(
                "SELECT started_at FROM messages WHERE id = $1",
                &[&message_id],
            )?
            .and_then(|r| r.get(0));
        Ok(started.and_then(|s| crate::store::messages::millis_between(&s, &now())))
    }
}

impl PgTx<'_> {
    /// Writes a call's result over `raw`, its tool call as read from its
    /// locked row; false when it already had one.
    fn write_result(
        &self,
        message_id: &str,
        raw: Option<String>,
        result: &str,
        is_error: bool,
    ) -> Result<bool, StoreError> {
        let Some(json) = crate::store::messages::with_result(message_id, raw, result, is_error)?
        else {
            return Ok(false);
        };
        // The row is locked: the write needs no answer.
        self.defer(
            "WITH m AS (UPDATE messages SET tool_call = $2, finished_at = $3 WHERE id = $1 \
                 RETURNING conversation_id) \
             UPDATE conversations SET updated_at = $3 WHERE id IN (SELECT conversation_id FROM m)",
            vec![own(message_id.to_string()), own(json), own(now())],
        )?;
        Ok(true)
    }

    pub(super) fn messages_of(
        &self,
        ids: &[String],
    ) -> Result<HashMap<String, Vec<Message>>, StoreError> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        message_rows(self.query(MESSAGES_OF, &[&ids])?)
    }
}

/// The messages of some conversations, each with its call's newest
/// approval, oldest first: the columns and joins, before the `WHERE`.
macro_rules! messages_with_outcomes {
    () => {
        "SELECT m.conversation_id, m.id, m.role, m.content, m.tool_call, m.created_at, \
            m.started_at, m.finished_at, a.uuid, a.status, a.reason, a.decided_by, a.decided_at, m.node, \
            a.requested_by, a.decided_via, a.edited_args, m.call_id \
         FROM messages m LEFT JOIN LATERAL \
             (SELECT * FROM approvals x WHERE x.message_id = m.id ORDER BY x.seq DESC LIMIT 1) a ON TRUE "
    };
}
/// Those of the conversations `$1` (an array: a list page).
const MESSAGES_OF: &str = concat!(
    messages_with_outcomes!(),
    "WHERE m.conversation_id = ANY($1) ORDER BY m.seq"
);
/// Those of the conversation `$1`. Not [`MESSAGES_OF`] with one id: with
/// an array the planner never settles on a generic plan, and planning the
/// lateral join took ~85 us of every turn's last write (pg_stat_statements),
/// six times its execution.
pub(super) const MESSAGES_OF_ONE: &str = concat!(
    messages_with_outcomes!(),
    "WHERE m.conversation_id = $1 ORDER BY m.seq"
);

pub(super) fn message_rows(rows: Vec<Row>) -> Result<HashMap<String, Vec<Message>>, StoreError> {
    let mut out: HashMap<String, Vec<Message>> = HashMap::new();
    for r in rows {
        let raw = RawMessage {
            id: r.get(1),
            role: r.get(2),
            content: r.get(3),
            tool_call: r.get(4),
            created_at: r.get(5),
            started_at: r.get(6),
            finished_at: r.get(7),
            approval: r.get::<_, Option<String>>(8).map(|uuid| RawOutcome {
                uuid,
                status: r.get(9),
                reason: r.get(10),
                decided_by: r.get(11),
                decided_at: r.get(12),
                requested_by: r.get(14),
                decided_via: r.get(15),
                edited_args: r.get(16),
            }),
            node: r.get(13),
            client_id: r.get(17),
        };
        out.entry(r.get(0)).or_default().push(raw.decode()?);
    }
    Ok(out)
}

/// The conversation's summary columns moved by one message (`c`, its id),
/// and the message's row as a `SELECT` from it.
macro_rules! append_parts {
    () => {
        append_parts!(also "")
    };
    // The same, setting more columns.
    (also $more:literal) => {
        concat!(
            "WITH c AS (UPDATE conversations SET updated_at = $6, message_count = message_count + 1, \
                 last_role = COALESCE($13, last_role), last_content = COALESCE($14, last_content), \
                 last_talk = CASE WHEN $13 IN ('user', 'assistant') THEN $13 ELSE last_talk END, \
                 title = COALESCE(title, CASE WHEN $3 = 'user' THEN $14 END)",
            $more,
            " WHERE id = $2 RETURNING id)"
        )
    };
    (row) => {
        "INSERT INTO messages (id, conversation_id, role, content, tool_call, created_at, call_id, step, server, signature, node, node_run) \
         SELECT $1, c.id, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12 FROM c"
    };
}
/// A message and its conversation's summary columns, in one statement
/// (nothing is inserted when the conversation is gone).
const APPEND: &str = concat!(append_parts!(), " ", append_parts!(row));
/// [`APPEND`] to a conversation known to exist (setting `$more` columns
/// too), whose answer nobody waits for: it raises (failing the
/// transaction) if no row was inserted.
macro_rules! append_known {
    ($more:literal) => {
        concat!(
            append_parts!(also $more),
            ", i AS (",
            append_parts!(row),
            " RETURNING 1) SELECT stopgo_expect((SELECT count(*) FROM i), 1, 'conversation ' || $2)"
        )
    };
}
/// A message to a conversation known to exist.
const APPEND_KNOWN: &str = append_known!("");
/// The same, ending the turn: the running flag is cleared in the same row
/// update.
pub(super) const APPEND_KNOWN_ENDING: &str = append_known!(", turn_running = FALSE");

/// A new conversation (`$2`; `$15` its session, `$16` its status, `$17`
/// who asked) born with its first message (the parameters of [`APPEND`])
/// and its turn running: its columns as [`APPEND`] and the running flag
/// would leave them, in one row insert.
pub(super) const INSERT_WITH_MESSAGE: &str = concat!(
    "WITH c AS (INSERT INTO conversations (id, session_id, status, created_at, updated_at, \
         requested_by, requested_session, created_by, message_count, last_role, last_content, \
         last_talk, title, turn_running) \
     VALUES ($2, $15, $16, $6, $6, $17, $15, $17, 1, $13, $14, \
         CASE WHEN $13 IN ('user', 'assistant') THEN $13 END, CASE WHEN $3 = 'user' THEN $14 END, \
         TRUE) RETURNING id) ",
    append_parts!(row)
);

/// The parameters of [`APPEND`] for `m` in `conversation_id` at `ts`, and
/// the message as they store it.
pub(super) fn append_params(
    conversation_id: &str,
    m: NewMessage,
    ts: String,
) -> Result<(Vec<Box<dyn ToSql + Sync>>, Message), StoreError> {
    let m = m.storable();
    let e = m.encoded()?;
    let role = m.role.as_str();
    let id = new_id();
    let params = vec![
        own(id.clone()),
        own(conversation_id.to_string()),
        own(role),
        own(m.content.clone()),
        own(e.tool_call.clone()),
        own(ts.clone()),
        own(m.call_id.clone()),
        own(m.step.clone()),
        own(e.server.clone()),
        own(m.signature.clone()),
        own(e.node.clone()),
        own(e.node_run.clone()),
        own(e.preview.as_ref().map(|_| role)),
        own(e.preview.clone()),
    ];
    Ok((params, e.message(m, id, ts)))
}
