//! Conversations on PostgreSQL: the statements of [`ConversationTx`] on
//! a [`PgTx`]. A page's filters and row count are written into its
//! statement ([`PageOf`]), so each combination is planned once; a list of
//! items with the counts is one statement.

use super::approvals::{approval_cols_at, pending_rows, pending_sql};
use super::messages::{MESSAGES_OF_ONE, message_rows};
use super::tx::{PgTx, own};
use crate::domain::ids::new_id;
use crate::domain::ids::now;
use crate::store::approvals;
use crate::store::conversations::{
    HeadRow, ItemRow, Page, PageRequest, TasksInState, like_pattern,
};
use crate::store::error::StoreError;
use crate::store::tx::ConversationTx;
use app::models::{Conversation, ConversationItem, ConversationStatus, Summary};
use app::pipeline::PipelineState;
use postgres::Row;
use postgres::types::ToSql;

impl ConversationTx for PgTx<'_> {
    fn insert_conversation(&self, session_id: &str) -> Result<Conversation, StoreError> {
        let (id, ts) = (new_id(), now());
        self.defer(
            "INSERT INTO conversations (id, session_id, status, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)",
            vec![
                own(id.clone()),
                own(session_id.to_string()),
                own(ConversationStatus::Active.as_str()),
                own(ts.clone()),
            ],
        )?;
        self.known.borrow_mut().insert(id.clone());
        Ok(crate::store::conversations::fresh(id, session_id, ts))
    }
    fn set_requester(&self, id: &str, name: &str, session: &str) -> Result<(), StoreError> {
        self.defer(
            "UPDATE conversations SET requested_by = $2, requested_session = $3, \
             created_by = COALESCE(created_by, $2) WHERE id = $1",
            vec![
                own(id.to_string()),
                own(name.to_string()),
                own(session.to_string()),
            ],
        )
    }
    fn created_by(&self, id: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .first("SELECT created_by FROM conversations WHERE id = $1", &[&id])?
            .and_then(|r| r.get(0)))
    }
    fn set_context(&self, id: &str, context_id: &str) -> Result<(), StoreError> {
        self.defer(
            "UPDATE conversations SET context_id = $2 WHERE id = $1",
            vec![own(id.to_string()), own(context_id.to_string())],
        )
    }
    fn by_context(&self, context_id: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .first(
                "SELECT id FROM conversations WHERE id = $1 OR context_id = $1 ORDER BY seq DESC LIMIT 1",
                &[&context_id],
            )?
            .map(|r| r.get(0)))
    }
    fn set_status(&self, id: &str, status: ConversationStatus) -> Result<bool, StoreError> {
        if self.knows(id) {
            self.defer(
                "WITH u AS (UPDATE conversations SET status = $2, updated_at = $3 WHERE id = $1 RETURNING 1) \
                 SELECT stopgo_expect((SELECT count(*) FROM u), 1, 'conversation ' || $1)",
                vec![own(id.to_string()), own(status.as_str()), own(now())],
            )?;
            return Ok(true);
        }
        Ok(self.exec(
            "UPDATE conversations SET status = $2, updated_at = $3 WHERE id = $1",
            &[&id, &status.as_str(), &now()],
        )? == 1)
    }
    fn set_turn_running(&self, id: &str, running: bool) -> Result<(), StoreError> {
        self.defer(
            "UPDATE conversations SET turn_running = $2 WHERE id = $1",
            vec![own(id.to_string()), own(running)],
        )
    }
    fn set_pipeline_state(&self, id: &str, state: &PipelineState) -> Result<(), StoreError> {
        let json = serde_json::to_string(state).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        self.defer(
            "UPDATE conversations SET pipeline_state = $2, updated_at = $3 WHERE id = $1",
            vec![own(id.to_string()), own(json), own(now())],
        )
    }
    fn pipeline_state(&self, id: &str) -> Result<Option<PipelineState>, StoreError> {
        let raw: Option<String> = self
            .first(
                "SELECT pipeline_state FROM conversations WHERE id = $1",
                &[&id],
            )?
            .and_then(|r| r.get(0));
        raw.map(|s| serde_json::from_str(&s))
            .transpose()
            .map_err(|e| StoreError::Corrupt(format!("conversation {id}: pipeline_state: {e}")))
    }
    fn running(&self) -> Result<Vec<String>, StoreError> {
        Ok(self
            .query(
                "SELECT id FROM conversations WHERE turn_running ORDER BY seq",
                &[],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }
    fn exists(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self
            .first("SELECT 1 FROM conversations WHERE id = $1", &[&id])?
            .is_some())
    }
    fn conversation(&self, id: &str) -> Result<Option<Conversation>, StoreError> {
        // The head, the messages and the pending approval: one round trip.
        let sql = format!("SELECT {HEAD_COLUMNS} FROM conversations WHERE id = $1");
        let (ids, pending) = (vec![id.to_string()], pending_sql());
        let mut answers = self
            .queries(&[
                (&sql, &[&id]),
                (MESSAGES_OF_ONE, &[&id]),
                (&pending, &[&ids]),
            ])?
            .into_iter();
        let mut next = || answers.next().unwrap_or_default();
        let (heads, messages, approvals) = (next(), next(), next());
        let Some(row) = heads.first() else {
            return Ok(None);
        };
        let mut c = head(row).1?;
        c.messages = message_rows(messages)?.remove(&c.id).unwrap_or_default();
        c.pending_approval = pending_rows(approvals)?.remove(&c.id);
        Ok(Some(c))
    }
    fn list(&self, req: &PageRequest) -> Result<Page, StoreError> {
        let mut page = self.page_of(req, HEAD_COLUMNS, head)?;
        let ids: Vec<String> = page.conversations.iter().map(|c| c.id.clone()).collect();
        let mut by_conv = self.messages_of(&ids)?;
        let mut pending = self.pending_of(&ids)?;
        for c in &mut page.conversations {
            c.messages = by_conv.remove(&c.id).unwrap_or_default();
            c.pending_approval = pending.remove(&c.id);
        }
        Ok(page)
    }
    fn list_items(&self, req: &PageRequest) -> Result<Page<ConversationItem>, StoreError> {
        let mut page = self.page_of(req, ITEM_COLUMNS, item)?;
        let ids: Vec<String> = page.conversations.iter().map(|c| c.id.clone()).collect();
        let mut pending = self.pending_of(&ids)?;
        for c in &mut page.conversations {
            c.pending_approval = pending.remove(&c.id);
        }
        Ok(page)
    }
    fn list_items_counted(
        &self,
        req: &PageRequest,
    ) -> Result<(Page<ConversationItem>, Summary), StoreError> {
        let page = PageOf::new(req);
        let rows = self.query(&items_counted(&page), &page.params())?;
        let mut counts = Vec::new();
        if let Some(r) = rows.first() {
            let statuses: Option<Vec<String>> = r.get(0);
            let ns: Option<Vec<i64>> = r.get(1);
            counts = statuses
                .unwrap_or_default()
                .into_iter()
                .zip(ns.unwrap_or_default())
                .collect();
        }
        let mut items = Vec::with_capacity(rows.len());
        for r in &rows {
            // The one row of an empty page carries only the counts.
            if r.get::<_, Option<i64>>(ITEM_AT).is_none() {
                continue;
            }
            let (seq, mut c) = item_at(r, ITEM_AT);
            if let Ok(c) = &mut c
                && r.get::<_, Option<String>>(APPROVAL_AT).is_some()
            {
                c.pending_approval =
                    Some(approvals::decode(approval_cols_at(r, APPROVAL_AT))?.approval);
            }
            items.push((seq, c));
        }
        Ok((
            page.of_rows(items)?,
            crate::store::conversations::summary_of(counts)?,
        ))
    }
    fn summary(&self) -> Result<Summary, StoreError> {
        let rows = self.query(STATUS_COUNTS, &[])?;
        let counts: Vec<(String, i64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        crate::store::conversations::summary_of(counts)
    }
    fn tasks_in_state(
        &self,
        state: &str,
        before: i64,
        limit: u32,
    ) -> Result<TasksInState, StoreError> {
        let page = self
            .query(
                "SELECT seq, id FROM conversations WHERE task_state = $1 AND seq < $2 \
                 ORDER BY seq DESC LIMIT $3",
                &[&state, &before, &i64::from(limit)],
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        // The kept total plus the deltas not folded yet (schema v5).
        let total: i64 = self
            .first(
                "SELECT (COALESCE((SELECT n FROM task_counts WHERE state = $1), 0) \
                       + COALESCE((SELECT sum(n) FROM task_deltas WHERE state = $1), 0))::BIGINT",
                &[&state],
            )?
            .map(|r| r.get(0))
            .unwrap_or(0);
        Ok(TasksInState {
            page,
            total: total.max(0) as u64,
        })
    }
}

impl PgTx<'_> {
    fn page_of<T>(
        &self,
        req: &PageRequest,
        columns: &str,
        map: fn(&Row) -> (i64, Result<T, StoreError>),
    ) -> Result<Page<T>, StoreError> {
        let page = PageOf::new(req);
        let sql = format!("SELECT {columns} {}", page.clause);
        let rows = self.query(&sql, &page.params())?;
        page.of_rows(rows.iter().map(map).collect())
    }
}

/// How many rows a page reads: one more than it holds (a last row says a
/// next page exists), rounded up to one of these, which the statement
/// carries as a literal.
const FETCH_SIZES: [u32; 5] = [11, 26, 51, 101, 201];

/// The page a [`PageRequest`] asks for, after its columns: only the
/// filters it uses, and its row count as a literal. So each combination is
/// one statement that PostgreSQL plans once and keeps (a generic plan).
/// With `$n IS NULL OR ...` filters and a `LIMIT $n`, every list was
/// planned anew (about 0.1 ms, more than its execution).
struct PageOf {
    clause: String,
    /// The rows the caller wants, plus one.
    fetch: i64,
    before: i64,
    status: Option<String>,
    pattern: Option<String>,
}

impl PageOf {
    fn new(req: &PageRequest) -> PageOf {
        let fetch = req.limit.saturating_add(1);
        let read = FETCH_SIZES
            .into_iter()
            .find(|n| *n >= fetch)
            .unwrap_or(fetch);
        let status = req.status.map(|s| s.as_str().to_string());
        let pattern = req.text.as_deref().map(like_pattern);
        let mut clause = String::from("FROM conversations WHERE seq < $1");
        let mut n = 1;
        if status.is_some() {
            n += 1;
            clause.push_str(&format!(" AND status = ${n}"));
        }
        if pattern.is_some() {
            n += 1;
            clause.push_str(&format!(
                " AND EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = conversations.id \
                 AND m.content ILIKE ${n} ESCAPE '\\')"
            ));
        }
        clause.push_str(&format!(" ORDER BY seq DESC LIMIT {read}"));
        PageOf {
            clause,
            fetch: i64::from(fetch),
            before: req.before.unwrap_or(i64::MAX),
            status,
            pattern,
        }
    }

    /// The statement's parameters, in the clause's order.
    fn params(&self) -> Vec<&(dyn ToSql + Sync)> {
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&self.before];
        if let Some(s) = &self.status {
            params.push(s);
        }
        if let Some(p) = &self.pattern {
            params.push(p);
        }
        params
    }

    /// The page from the rows read (newest first; the rounding's extra
    /// rows are dropped).
    fn of_rows<T>(
        &self,
        mut rows: Vec<(i64, Result<T, StoreError>)>,
    ) -> Result<Page<T>, StoreError> {
        rows.truncate(usize::try_from(self.fetch).unwrap_or(usize::MAX));
        Page::of_rows(rows, self.fetch)
    }
}

/// A page of list items (see [`PageOf`]), each with its oldest pending
/// approval, and the counts by status, in one statement. The counts come
/// first, in every row, so an empty page is still one row (its item
/// columns NULL): columns 0-1 the counts, then [`ITEM_COLUMNS`] from
/// [`ITEM_AT`], then the approval's from [`APPROVAL_AT`].
fn items_counted(page: &PageOf) -> String {
    format!(
        "SELECT s.statuses, s.ns, p.*, a.* FROM \
           (SELECT array_agg(status) AS statuses, array_agg(n) AS ns FROM ({STATUS_COUNTS}) g) s \
         LEFT JOIN LATERAL (SELECT {ITEM_COLUMNS} {}) p ON TRUE \
         LEFT JOIN LATERAL (SELECT {} FROM approvals x WHERE x.status = 'pending' \
              AND x.conversation_id = p.id ORDER BY x.created_at LIMIT 1) a ON TRUE \
         ORDER BY p.seq DESC",
        page.clause,
        approvals::COLUMNS
    )
}
/// Where [`items_counted`]'s item and approval columns start.
const ITEM_AT: usize = 2;
const APPROVAL_AT: usize = ITEM_AT + ITEM_NCOLS;

/// The kept count of each status in use: `(status, n)`.
const STATUS_COUNTS: &str =
    "SELECT status, sum(n)::BIGINT AS n FROM status_counts GROUP BY status HAVING sum(n) != 0";

const HEAD_COLUMNS: &str =
    "seq, id, session_id, status, pipeline_state, created_at, updated_at, context_id, turn_running";

fn head(r: &Row) -> (i64, Result<Conversation, StoreError>) {
    let row = HeadRow {
        id: r.get(1),
        session_id: r.get(2),
        status: r.get(3),
        pipeline_state: r.get(4),
        created_at: r.get(5),
        updated_at: r.get(6),
        context_id: r.get(7),
        running: r.get(8),
    };
    (r.get(0), row.decode())
}

const ITEM_COLUMNS: &str = "seq, id, session_id, status, created_at, updated_at, context_id, \
     message_count, title, last_role, last_content, pipeline_state IS NOT NULL";
/// How many columns [`ITEM_COLUMNS`] names.
const ITEM_NCOLS: usize = 12;

fn item(r: &Row) -> (i64, Result<ConversationItem, StoreError>) {
    item_at(r, 0)
}

/// A list item from [`ITEM_COLUMNS`] starting at column `at`.
fn item_at(r: &Row, at: usize) -> (i64, Result<ConversationItem, StoreError>) {
    let row = ItemRow {
        id: r.get(at + 1),
        session_id: r.get(at + 2),
        status: r.get(at + 3),
        created_at: r.get(at + 4),
        updated_at: r.get(at + 5),
        context_id: r.get(at + 6),
        message_count: r.get(at + 7),
        title: r.get(at + 8),
        last_role: r.get(at + 9),
        last_content: r.get(at + 10),
        has_pipeline_run: r.get(at + 11),
    };
    (r.get(at), row.decode())
}
