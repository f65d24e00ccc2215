//! Conversations on SQLite: the statements of [`ConversationTx`], as
//! plain functions on a connection (a conversation read whole comes with
//! its messages and pending approval from [`messages`] and [`approvals`]).

use super::{approvals, messages};
use crate::domain::ids::new_id;
use crate::domain::ids::now;
use crate::store::conversations::{
    HeadRow, ItemRow, Page, PageRequest, TasksInState, fresh, like_pattern, summary_of,
};
use crate::store::error::StoreError;
use crate::store::tx::ConversationTx;
use app::models::{Conversation, ConversationItem, ConversationStatus, Summary};
use app::pipeline::PipelineState;
use rusqlite::{Connection, OptionalExtension, Row, params};

impl ConversationTx for Connection {
    fn insert_conversation(&self, session_id: &str) -> Result<Conversation, StoreError> {
        insert(self, session_id)
    }
    fn set_requester(&self, id: &str, name: &str, session: &str) -> Result<(), StoreError> {
        set_requester(self, id, name, session)
    }
    fn created_by(&self, id: &str) -> Result<Option<String>, StoreError> {
        created_by(self, id)
    }
    fn set_context(&self, id: &str, context_id: &str) -> Result<(), StoreError> {
        set_context(self, id, context_id)
    }
    fn by_context(&self, context_id: &str) -> Result<Option<String>, StoreError> {
        by_context(self, context_id)
    }
    fn set_status(&self, id: &str, status: ConversationStatus) -> Result<bool, StoreError> {
        set_status(self, id, status)
    }
    fn set_turn_running(&self, id: &str, running: bool) -> Result<(), StoreError> {
        set_turn_running(self, id, running)
    }
    fn set_pipeline_state(&self, id: &str, state: &PipelineState) -> Result<(), StoreError> {
        set_pipeline_state(self, id, state)
    }
    fn pipeline_state(&self, id: &str) -> Result<Option<PipelineState>, StoreError> {
        pipeline_state(self, id)
    }
    fn running(&self) -> Result<Vec<String>, StoreError> {
        running(self)
    }
    fn exists(&self, id: &str) -> Result<bool, StoreError> {
        exists(self, id)
    }
    fn conversation(&self, id: &str) -> Result<Option<Conversation>, StoreError> {
        get(self, id)
    }
    fn list(&self, req: &PageRequest) -> Result<Page, StoreError> {
        list(self, req)
    }
    fn list_items(&self, req: &PageRequest) -> Result<Page<ConversationItem>, StoreError> {
        list_items(self, req)
    }
    fn summary(&self) -> Result<Summary, StoreError> {
        summary(self)
    }
    fn tasks_in_state(
        &self,
        state: &str,
        before: i64,
        limit: u32,
    ) -> Result<TasksInState, StoreError> {
        tasks_in_state(self, state, before, limit)
    }
}

const COLUMNS: &str =
    "seq, id, session_id, status, pipeline_state, created_at, updated_at, context_id, turn_running";

/// Inserts a new, empty, active conversation.
fn insert(conn: &Connection, session_id: &str) -> Result<Conversation, StoreError> {
    let id = new_id();
    let ts = now();
    conn.prepare_cached("INSERT INTO conversations (id, session_id, status, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?4)")?
        .execute(params![id, session_id, ConversationStatus::Active.as_str(), ts],
    )?;
    Ok(fresh(id, session_id, ts))
}

/// Records the A2A context id a client chose for a conversation.
fn set_context(conn: &Connection, id: &str, context_id: &str) -> Result<(), StoreError> {
    conn.prepare_cached("UPDATE conversations SET context_id = ?2 WHERE id = ?1")?
        .execute(params![id, context_id])?;
    Ok(())
}

/// The newest conversation of an A2A context: one whose id or chosen
/// context id is `context_id`.
fn by_context(conn: &Connection, context_id: &str) -> Result<Option<String>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT id FROM conversations WHERE id = ?1 OR context_id = ?1 ORDER BY seq DESC LIMIT 1")?
        .query_row([context_id],
            |r| r.get(0),
        )
        .optional()?)
}

/// Sets a conversation's status; false if it does not exist.
fn set_status(conn: &Connection, id: &str, status: ConversationStatus) -> Result<bool, StoreError> {
    let n = conn
        .prepare_cached("UPDATE conversations SET status = ?2, updated_at = ?3 WHERE id = ?1")?
        .execute(params![id, status.as_str(), now()])?;
    Ok(n == 1)
}

/// Marks whether a turn is running (cleared when it ends or pauses); a
/// conversation still marked at startup was interrupted by a crash.
fn set_turn_running(conn: &Connection, id: &str, running: bool) -> Result<(), StoreError> {
    conn.prepare_cached("UPDATE conversations SET turn_running = ?2 WHERE id = ?1")?
        .execute(params![id, i64::from(running)])?;
    Ok(())
}

/// Stores the conversation's pipeline run (replacing the previous one).
fn set_pipeline_state(
    conn: &Connection,
    id: &str,
    state: &PipelineState,
) -> Result<(), StoreError> {
    let json = serde_json::to_string(state).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    conn.prepare_cached(
        "UPDATE conversations SET pipeline_state = ?2, updated_at = ?3 WHERE id = ?1",
    )?
    .execute(params![id, json, now()])?;
    Ok(())
}

/// The conversation's pipeline run, if it has one. A stored run this build
/// cannot read is an error naming the conversation, never a panic.
fn pipeline_state(conn: &Connection, id: &str) -> Result<Option<PipelineState>, StoreError> {
    let raw: Option<String> = conn
        .prepare_cached("SELECT pipeline_state FROM conversations WHERE id = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()?
        .flatten();
    raw.map(|s| serde_json::from_str(&s))
        .transpose()
        .map_err(|e| StoreError::Corrupt(format!("conversation {id}: pipeline_state: {e}")))
}

/// Ids of conversations whose turn was running.
fn running(conn: &Connection) -> Result<Vec<String>, StoreError> {
    let mut stmt =
        conn.prepare_cached("SELECT id FROM conversations WHERE turn_running = 1 ORDER BY seq")?;
    let ids = stmt.query_map([], |r| r.get::<_, String>(0))?;
    Ok(ids.collect::<Result<_, _>>()?)
}

/// True if the conversation exists.
fn exists(conn: &Connection, id: &str) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM conversations WHERE id = ?1")?
        .query_row([id], |_| Ok(()))
        .optional()?
        .is_some())
}

/// One conversation with its messages.
fn get(conn: &Connection, id: &str) -> Result<Option<Conversation>, StoreError> {
    let row = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM conversations WHERE id = ?1"
        ))?
        .query_row([id], head)
        .optional()?;
    let Some((_, decoded)) = row else {
        return Ok(None);
    };
    let mut c = decoded?;
    c.messages = messages::of_conversations(conn, std::slice::from_ref(&c.id))?
        .remove(&c.id)
        .unwrap_or_default();
    c.pending_approval = approvals::pending_for(conn, &c.id)?;
    Ok(Some(c))
}

/// One page of conversations, newest first, each with its messages.
fn list(conn: &Connection, req: &PageRequest) -> Result<Page, StoreError> {
    let mut page = page_of(conn, req, COLUMNS, head)?;
    let ids: Vec<String> = page.conversations.iter().map(|c| c.id.clone()).collect();
    let mut by_conv = messages::of_conversations(conn, &ids)?;
    let mut pending = approvals::pending_of(conn, &ids)?;
    for c in &mut page.conversations {
        c.messages = by_conv.remove(&c.id).unwrap_or_default();
        c.pending_approval = pending.remove(&c.id);
    }
    Ok(page)
}

/// One page of list items, newest first: the row's own columns (counts and
/// previews kept by
/// [`MessageTx::append`](crate::store::tx::MessageTx::append)) and pending
/// approvals, so a page costs the same however long its conversations are.
fn list_items(conn: &Connection, req: &PageRequest) -> Result<Page<ConversationItem>, StoreError> {
    let mut page = page_of(conn, req, ITEM_COLUMNS, item)?;
    let ids: Vec<String> = page.conversations.iter().map(|c| c.id.clone()).collect();
    let mut pending = approvals::pending_of(conn, &ids)?;
    for c in &mut page.conversations {
        c.pending_approval = pending.remove(&c.id);
    }
    Ok(page)
}

/// Maps one row to its `seq` and the decoded value (whose errors are
/// decoding errors of our own columns, which rusqlite cannot express).
type RowMap<T> = fn(&Row<'_>) -> rusqlite::Result<(i64, Result<T, StoreError>)>;

/// The rows of one page, mapped by `map` (whose first column is `seq`).
fn page_of<T>(
    conn: &Connection,
    req: &PageRequest,
    columns: &str,
    map: RowMap<T>,
) -> Result<Page<T>, StoreError> {
    let fetch = i64::from(req.limit) + 1;
    let before = req.before.unwrap_or(i64::MAX);
    // Filters are optional; each adds a clause and a parameter. The text
    // search is a case-insensitive substring match over message contents
    // (LIKE with escaped wildcards): plain and exact, at the cost of a scan
    // of the messages of the conversations it visits.
    let mut clauses = vec!["seq < ?".to_string()];
    let mut args: Vec<rusqlite::types::Value> = vec![before.into()];
    if let Some(status) = req.status {
        clauses.push("status = ?".into());
        args.push(status.as_str().to_string().into());
    }
    if let Some(text) = req.text.as_deref() {
        clauses.push(
            "EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = conversations.id \
             AND m.content LIKE ? ESCAPE '\\')"
                .into(),
        );
        args.push(like_pattern(text).into());
    }
    args.push(fetch.into());
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {columns} FROM conversations WHERE {} ORDER BY seq DESC LIMIT ?",
        clauses.join(" AND ")
    ))?;
    let rows: Vec<(i64, Result<T, StoreError>)> = stmt
        .query_map(rusqlite::params_from_iter(args), map)?
        .collect::<Result<_, _>>()?;
    Page::of_rows(rows, fetch)
}

const ITEM_COLUMNS: &str = "seq, id, session_id, status, created_at, updated_at, context_id, \
     message_count, title, last_role, last_content, pipeline_state IS NOT NULL";

/// Maps a list item row ([`ITEM_COLUMNS`]).
fn item(r: &Row<'_>) -> rusqlite::Result<(i64, Result<ConversationItem, StoreError>)> {
    let row = ItemRow {
        id: r.get(1)?,
        session_id: r.get(2)?,
        status: r.get(3)?,
        created_at: r.get(4)?,
        updated_at: r.get(5)?,
        context_id: r.get(6)?,
        message_count: r.get(7)?,
        title: r.get(8)?,
        last_role: r.get(9)?,
        last_content: r.get(10)?,
        has_pipeline_run: r.get(11)?,
    };
    Ok((r.get(0)?, row.decode()))
}

/// Counts by status over all conversations, kept by triggers in the
/// transaction of every insert and status change (`status_counts`), so
/// reading them costs the same with a thousand or a million conversations.
fn summary(conn: &Connection) -> Result<Summary, StoreError> {
    let mut stmt = conn.prepare_cached("SELECT status, n FROM status_counts WHERE n != 0")?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
    summary_of(rows.collect::<Result<Vec<_>, _>>()?)
}

/// One page of the conversations whose A2A task is in `state` (the
/// generated `task_state` column), newest first from before `before`, and
/// how many there are in all (kept by triggers).
fn tasks_in_state(
    conn: &Connection,
    state: &str,
    before: i64,
    limit: u32,
) -> Result<TasksInState, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, id FROM conversations WHERE task_state = ?1 AND seq < ?2 \
         ORDER BY seq DESC LIMIT ?3",
    )?;
    let page = stmt
        .query_map(params![state, before, limit], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?
        .collect::<rusqlite::Result<Vec<(i64, String)>>>()?;
    let total: i64 = conn
        .prepare_cached("SELECT n FROM task_counts WHERE state = ?1")?
        .query_row(params![state], |r| r.get(0))
        .optional()?
        .unwrap_or(0);
    Ok(TasksInState {
        page,
        total: total.max(0) as u64,
    })
}

/// Maps a conversation row (without messages). The inner result carries
/// decoding errors of our own columns, which rusqlite cannot express.
fn head(r: &Row<'_>) -> rusqlite::Result<(i64, Result<Conversation, StoreError>)> {
    let row = HeadRow {
        id: r.get(1)?,
        session_id: r.get(2)?,
        status: r.get(3)?,
        pipeline_state: r.get(4)?,
        created_at: r.get(5)?,
        updated_at: r.get(6)?,
        context_id: r.get(7)?,
        running: r.get(8)?,
    };
    Ok((r.get(0)?, row.decode()))
}

/// Records who sent the conversation's latest message (the principal and
/// the request's session id): approvals it raises are theirs. The first
/// sender is also kept as its creator.
fn set_requester(conn: &Connection, id: &str, name: &str, session: &str) -> Result<(), StoreError> {
    conn.prepare_cached(
        "UPDATE conversations SET requested_by = ?2, requested_session = ?3, \
         created_by = COALESCE(created_by, ?2) WHERE id = ?1",
    )?
    .execute(rusqlite::params![id, name, session])?;
    Ok(())
}

/// Who created a conversation, if recorded.
fn created_by(conn: &Connection, id: &str) -> Result<Option<String>, StoreError> {
    use rusqlite::OptionalExtension;
    Ok(conn
        .prepare_cached("SELECT created_by FROM conversations WHERE id = ?1")?
        .query_row([id], |r| r.get::<_, Option<String>>(0))
        .optional()?
        .flatten())
}
