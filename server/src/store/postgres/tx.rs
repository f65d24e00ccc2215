//! [`Tx`] on a PostgreSQL transaction: the same statements as SQLite's,
//! in PostgreSQL's dialect, decoded by the same functions.

use super::Conn;
use super::conn::{Answer, Step};
use crate::store::approvals::{self, Approval, Decider, NewApproval};
use crate::store::audit::{self, Event};
use crate::store::conversations::{
    HeadRow, ItemRow, Page, PageRequest, TasksInState, like_pattern,
};
use crate::store::messages::{NewMessage, RawMessage, RawOutcome, StoredMessage};
use crate::store::sessions::{self, Session};
use crate::store::{StoreError, Tx, new_id, now};
use app::models::{
    ApprovalStatus, Conversation, ConversationItem, ConversationStatus, Message, PendingApproval,
    Summary,
};
use app::pipeline::PipelineState;
use postgres::Row;
use postgres::Statement;
use postgres::types::ToSql;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};

type Params<'p> = &'p [&'p (dyn ToSql + Sync)];

/// An audit event waiting for the end of the transaction.
struct PendingAudit {
    at: String,
    actor: String,
    event: String,
    conversation_id: Option<String>,
    approval_uuid: Option<String>,
    details: serde_json::Value,
}

impl PendingAudit {
    /// The row as it is hashed (AUTH.md §7), at `seq`.
    fn canonical(&self, seq: i64) -> String {
        audit::canonical_row(
            seq,
            &self.at,
            &self.actor,
            &self.event,
            self.conversation_id.as_deref(),
            self.approval_uuid.as_deref(),
            &self.details,
        )
    }
}

/// A write whose answer nobody waits for: it goes out with the next
/// statement that is waited for, or with `COMMIT` (one round trip for all).
struct Deferred {
    sql: &'static str,
    params: Vec<Box<dyn ToSql + Sync>>,
    /// The conversation a fence guards: its failure is
    /// [`StoreError::LeaseLost`].
    fence: Option<String>,
}

/// One statement of [`PgTx::send`] that is waited for: SQL, parameters,
/// and whether its rows (rather than its count) are the answer.
type Waited<'p> = (&'p str, Params<'p>, bool);

/// What [`PgTx::send`] sends after everything else (`COMMIT`, with the
/// audit rows before it).
type Finish<'p> = Option<&'p str>;

/// The SQLSTATE of `stopgo_fence` (schema v9): the lease moved on.
const LEASE_LOST: &str = "SG001";

/// One open transaction on a pooled connection.
///
/// **Round trips are what a turn costs here**, so statements are
/// pipelined: a write whose caller needs no answer (a flag, a requester,
/// a started mark, the fence, a message appended to a conversation known
/// to exist) is held and sent with the next statement that is waited for,
/// or with `COMMIT`; `BEGIN` goes with the first of them. A transaction of
/// such writes is one round trip. Every statement still runs in program
/// order, in the same transaction; a held write that fails fails the
/// transaction (the fence and the appends raise in the database, so a
/// pipelined `COMMIT` after them rolls back).
pub(in crate::store) struct PgTx<'a> {
    conn: RefCell<&'a mut Conn>,
    mode: super::Mode,
    /// `BEGIN` was sent (or, in [`super::Mode::Single`], the statement).
    begun: Cell<bool>,
    key: Option<&'a [u8]>,
    leases: &'a super::leases::Leases,
    audit: RefCell<Vec<PendingAudit>>,
    deferred: RefCell<Vec<Deferred>>,
    /// Conversations this transaction inserted or fenced: they exist, so a
    /// write to them needs no answer (the statement checks it anyway).
    known: RefCell<HashSet<String>>,
    /// Leases given back by this transaction (`release_lease`): no longer
    /// renewed once it commits.
    released: RefCell<Vec<(String, i64)>>,
}

/// An owned parameter of a held write.
fn own<T: ToSql + Sync + 'static>(v: T) -> Box<dyn ToSql + Sync> {
    Box::new(v)
}

impl<'a> PgTx<'a> {
    pub(super) fn new(
        conn: &'a mut Conn,
        mode: super::Mode,
        key: Option<&'a [u8]>,
        leases: &'a super::leases::Leases,
    ) -> Self {
        PgTx {
            conn: RefCell::new(conn),
            mode,
            begun: Cell::new(false),
            key,
            leases,
            audit: RefCell::new(Vec::new()),
            deferred: RefCell::new(Vec::new()),
            known: RefCell::new(HashSet::new()),
            released: RefCell::new(Vec::new()),
        }
    }

    /// Whether a transaction is open (there is something to roll back).
    pub(super) fn open(&self) -> bool {
        self.begun.get() && self.mode.begin().is_some()
    }

    fn knows(&self, conversation_id: &str) -> bool {
        self.mode == super::Mode::Write && self.known.borrow().contains(conversation_id)
    }

    /// Holds a write until the next statement that is waited for (outside
    /// a write transaction it runs at once).
    fn defer(
        &self,
        sql: &'static str,
        params: Vec<Box<dyn ToSql + Sync>>,
    ) -> Result<(), StoreError> {
        if self.mode != super::Mode::Write {
            let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref()).collect();
            self.exec(sql, &refs)?;
            return Ok(());
        }
        self.deferred.borrow_mut().push(Deferred {
            sql,
            params,
            fence: None,
        });
        Ok(())
    }

    /// Sends, in one round trip: `BEGIN` if the transaction is not open
    /// yet, the held writes, `waited`, then `finish`. The answers of
    /// `waited`, in order. The first error is the one returned (after it,
    /// statements of the transaction fail too and a `COMMIT` rolls back).
    fn send(&self, waited: &[Waited<'_>], finish: Finish<'_>) -> Result<Vec<Answer>, StoreError> {
        let deferred = std::mem::take(&mut *self.deferred.borrow_mut());
        if deferred.is_empty() && waited.is_empty() && finish.is_none() {
            return Ok(Vec::new());
        }
        let begin = if self.begun.replace(true) {
            if self.mode == super::Mode::Single {
                return Err(StoreError::Worker(
                    "a single-statement read issued a second statement".into(),
                ));
            }
            None
        } else {
            self.mode.begin()
        };
        let mut guard = self.conn.borrow_mut();
        let conn: &mut Conn = &mut guard;
        let held: Vec<Statement> = deferred
            .iter()
            .map(|d| conn.prepared(d.sql))
            .collect::<Result<_, _>>()?;
        let asked: Vec<Statement> = waited
            .iter()
            .map(|(sql, _, _)| conn.prepared(sql))
            .collect::<Result<_, _>>()?;
        let held_params: Vec<Vec<&(dyn ToSql + Sync)>> = deferred
            .iter()
            .map(|d| d.params.iter().map(|p| p.as_ref()).collect())
            .collect();
        let mut steps = Vec::with_capacity(deferred.len() + waited.len() + 2);
        steps.extend(begin.map(Step::Simple));
        for (s, p) in held.iter().zip(&held_params) {
            steps.push(Step::Exec(s, p));
        }
        for (s, (_, p, rows)) in asked.iter().zip(waited) {
            steps.push(if *rows {
                Step::Query(s, p)
            } else {
                Step::Exec(s, p)
            });
        }
        steps.extend(finish.map(Step::Simple));
        let mut answers = conn.pipeline(&steps).into_iter();
        if begin.is_some() {
            answers.next().transpose()?;
        }
        for d in &deferred {
            if let Some(Err(e)) = answers.next() {
                return Err(match &d.fence {
                    Some(id) if e.code().map(|c| c.code()) == Some(LEASE_LOST) => {
                        StoreError::LeaseLost(id.clone())
                    }
                    _ => e.into(),
                });
            }
        }
        let mut out = Vec::with_capacity(waited.len());
        for _ in waited {
            out.push(answers.next().ok_or_else(|| {
                StoreError::Worker("a pipelined statement got no answer".into())
            })??);
        }
        if finish.is_some() {
            answers.next().transpose()?;
        }
        Ok(out)
    }

    /// Runs `sql` and returns its rows.
    fn query(&self, sql: &str, params: Params<'_>) -> Result<Vec<Row>, StoreError> {
        self.queries(&[(sql, params)]).map(|mut all| all.remove(0))
    }

    /// Runs several reads in one round trip (with the held writes before
    /// them); their rows, in order.
    fn queries(&self, reads: &[(&str, Params<'_>)]) -> Result<Vec<Vec<Row>>, StoreError> {
        let waited: Vec<Waited<'_>> = reads.iter().map(|(s, p)| (*s, *p, true)).collect();
        self.send(&waited, None)?
            .into_iter()
            .map(|a| match a {
                Answer::Rows(r) => Ok(r),
                _ => Err(StoreError::Worker("a read answered no rows".into())),
            })
            .collect()
    }

    /// Runs `sql` and returns how many rows it changed.
    fn exec(&self, sql: &str, params: Params<'_>) -> Result<u64, StoreError> {
        match self.send(&[(sql, params, false)], None)?.pop() {
            Some(Answer::Count(n)) => Ok(n),
            _ => Err(StoreError::Worker("a write answered no count".into())),
        }
    }

    fn first(&self, sql: &str, params: Params<'_>) -> Result<Option<Row>, StoreError> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    /// Ends a transaction whose closure succeeded: the held writes, its
    /// audit events chained after the head, and `COMMIT`, in one round trip
    /// (with a key, the head is read first, `FOR UPDATE`, with the held
    /// writes). The head is locked until the commit, so appends from every
    /// replica form one chain in commit order; the rows are hashed here
    /// (the key never leaves the process).
    pub(super) fn commit(&self) -> Result<(), StoreError> {
        let events = std::mem::take(&mut *self.audit.borrow_mut());
        if !events.is_empty() {
            let sql = match self.key {
                None => self.chained_in_database(events)?,
                Some(_) => self.chained_here(events)?,
            };
            self.send(&[], Some(&sql))?;
            return Ok(());
        }
        let pending = !self.deferred.borrow().is_empty();
        if self.mode.begin().is_some() && (self.begun.get() || pending) {
            self.send(&[], Some("COMMIT"))?;
        }
        Ok(())
    }

    /// After a commit: the leases it gave back are no longer this
    /// replica's to renew or release.
    pub(super) fn committed(&self) {
        for (id, epoch) in self.released.borrow_mut().drain(..) {
            self.leases.forget(&id, epoch);
        }
    }

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

    /// The audit rows hashed here (with the key), the new head and
    /// `COMMIT`, as one simple query.
    fn chained_here(&self, events: Vec<PendingAudit>) -> Result<String, StoreError> {
        let head = self
            .first("SELECT seq, hash FROM audit_head FOR UPDATE", &[])?
            .ok_or_else(|| StoreError::Corrupt("the audit head row is missing".into()))?;
        let (mut seq, mut prev): (i64, String) = (head.get(0), head.get(1));
        let mut rows = Vec::with_capacity(events.len());
        for e in events {
            seq += 1;
            let canonical = e.canonical(seq);
            let hash = audit::chain_hash(self.key, &prev, &canonical);
            rows.push(format!(
                "({seq}, {}, {}, {}, {}, {}, {}, {}, {})",
                literal(&e.at)?,
                literal(&e.actor)?,
                literal(&e.event)?,
                e.conversation_id
                    .as_deref()
                    .map(literal)
                    .transpose()?
                    .unwrap_or("NULL".into()),
                e.approval_uuid
                    .as_deref()
                    .map(literal)
                    .transpose()?
                    .unwrap_or("NULL".into()),
                literal(&crate::domain::digest::canonical(&e.details))?,
                literal(&prev)?,
                literal(&hash)?,
            ));
            prev = hash;
        }
        Ok(format!(
            "INSERT INTO audit (seq, at, actor, event, conversation_id, approval_uuid, details, prev_hash, hash) \
             VALUES {}; UPDATE audit_head SET seq = {seq}, hash = {}; COMMIT",
            rows.join(", "),
            literal(&prev)?
        ))
    }

    /// Without a key the chain is plain SHA-256, which the database computes
    /// (`stopgo_audit_append`, schema v4): the rows, the call and `COMMIT`
    /// go in one simple query, so the head's lock is never held across a
    /// round trip. Each row's canonical JSON is sent up to its `seq`, which
    /// sorts last and which only the database knows.
    fn chained_in_database(&self, events: Vec<PendingAudit>) -> Result<String, StoreError> {
        let mut cols: [Vec<String>; 7] = Default::default();
        for e in events {
            let canonical = e.canonical(0);
            let prefix = canonical.strip_suffix("0}").ok_or_else(|| {
                StoreError::Corrupt(
                    "an audit row's canonical form does not end with its seq".into(),
                )
            })?;
            let optional = |v: Option<&str>| v.map(literal).unwrap_or_else(|| Ok("NULL".into()));
            for (col, v) in cols.iter_mut().zip([
                literal(&e.at)?,
                literal(&e.actor)?,
                literal(&e.event)?,
                optional(e.conversation_id.as_deref())?,
                optional(e.approval_uuid.as_deref())?,
                literal(&crate::domain::digest::canonical(&e.details))?,
                literal(prefix)?,
            ]) {
                col.push(v);
            }
        }
        let arrays: Vec<String> = cols
            .iter()
            .map(|c| format!("ARRAY[{}]::text[]", c.join(", ")))
            .collect();
        Ok(format!(
            "SELECT stopgo_audit_append({}); COMMIT",
            arrays.join(", ")
        ))
    }

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

    fn pending_of(&self, ids: &[String]) -> Result<HashMap<String, PendingApproval>, StoreError> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        pending_rows(self.query(&pending_sql(), &[&ids])?)
    }

    fn messages_of(&self, ids: &[String]) -> Result<HashMap<String, Vec<Message>>, StoreError> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        message_rows(self.query(MESSAGES_OF, &[&ids])?)
    }

    fn approvals_where(
        &self,
        clause: &str,
        params: Params<'_>,
    ) -> Result<Vec<Approval>, StoreError> {
        let sql = format!(
            "SELECT {} FROM approvals WHERE {clause}",
            approvals::COLUMNS
        );
        self.query(&sql, params)?
            .iter()
            .map(|r| approvals::decode(approval_cols(r)))
            .collect()
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

/// The pending approvals of the conversations `$1`.
fn pending_sql() -> String {
    format!(
        "SELECT {} FROM approvals WHERE status = 'pending' AND conversation_id = ANY($1) ORDER BY created_at",
        approvals::COLUMNS
    )
}

/// The oldest pending approval of each conversation.
fn pending_rows(rows: Vec<Row>) -> Result<HashMap<String, PendingApproval>, StoreError> {
    let mut out = HashMap::new();
    for row in rows {
        let a = approvals::decode(approval_cols(&row))?;
        out.entry(a.approval.conversation_id.clone())
            .or_insert(a.approval);
    }
    Ok(out)
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
const MESSAGES_OF_ONE: &str = concat!(
    messages_with_outcomes!(),
    "WHERE m.conversation_id = $1 ORDER BY m.seq"
);

fn message_rows(rows: Vec<Row>) -> Result<HashMap<String, Vec<Message>>, StoreError> {
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

/// An approval row's columns, as the shared decoder reads them.
/// `s` as an SQL string literal. Safe because every connection sets
/// `standard_conforming_strings = on` (see `connect`): a quote is then the
/// only character with a meaning inside '...', and it is doubled. NUL,
/// which PostgreSQL's text cannot hold, is refused.
fn literal(s: &str) -> Result<String, StoreError> {
    if s.contains('\0') {
        return Err(StoreError::Unstorable(
            "text cannot contain the NUL character (U+0000)".into(),
        ));
    }
    Ok(format!("'{}'", s.replace('\'', "''")))
}

fn approval_cols(r: &Row) -> approvals::RawRow {
    approval_cols_at(r, 0)
}

/// An approval's columns from column `at` on.
fn approval_cols_at(r: &Row, at: usize) -> approvals::RawRow {
    ((at..at + approvals::NCOLS).map(|i| r.get(i)).collect(),)
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
const APPEND_KNOWN_ENDING: &str = append_known!(", turn_running = FALSE");

/// A new conversation (`$2`; `$15` its session, `$16` its status, `$17`
/// who asked) born with its first message (the parameters of [`APPEND`])
/// and its turn running: its columns as [`APPEND`] and the running flag
/// would leave them, in one row insert.
const INSERT_WITH_MESSAGE: &str = concat!(
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
fn append_params(
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

impl Tx for PgTx<'_> {
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
    fn insert_with_message(
        &self,
        session: &str,
        name: &str,
        first: NewMessage,
    ) -> Result<(Conversation, Message), StoreError> {
        let (id, ts) = (new_id(), now());
        let (mut params, message) = append_params(&id, first, ts.clone())?;
        params.extend([
            own(session.to_string()),
            own(ConversationStatus::Active.as_str()),
            own(name.to_string()),
        ]);
        // Nobody waits for it: a failure fails the transaction.
        self.defer(INSERT_WITH_MESSAGE, params)?;
        self.known.borrow_mut().insert(id.clone());
        Ok((crate::store::conversations::fresh(id, session, ts), message))
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
    fn append_ending(&self, conversation_id: &str, m: NewMessage) -> Result<Message, StoreError> {
        if !self.knows(conversation_id) {
            return crate::store::tx::append_then_end(self, conversation_id, m);
        }
        let (params, message) = append_params(conversation_id, m, now())?;
        self.defer(APPEND_KNOWN_ENDING, params)?;
        Ok(message)
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

    fn insert_approval(&self, a: NewApproval) -> Result<Approval, StoreError> {
        let fields = approvals::Insert::of(&a)?;
        self.exec(
            "INSERT INTO approvals (uuid, conversation_id, message_id, tool_name, server, tool_args, description, status, \
             remote_task_id, remote_agent_name, chain, created_at, updated_at, requested_by, requested_session, traceparent, rule, approvers, quorum, \
               expires_in, expires_at, remote_approval_uuid) \
             SELECT $1, $2, $3, $4, $5, $6, $7, 'pending', $8, $9, $10, $11, $11, \
               COALESCE(c.requested_by, 'anonymous'), COALESCE(c.requested_session, c.session_id), $12, $13, $14, $15::integer, \
               $16::integer, $17, $18 \
             FROM conversations c WHERE c.id = $2",
            &[
                &fields.uuid,
                &a.conversation_id,
                &a.message_id,
                &a.tool_name,
                &a.server,
                &fields.args,
                &a.description,
                &fields.task,
                &fields.agent,
                &fields.chain,
                &fields.created_at,
                &a.traceparent,
                &a.rule,
                &fields.approvers,
                &fields.quorum,
                &fields.expires_in.map(|s| i32::try_from(s).unwrap_or(i32::MAX)),
                &fields.expires_at,
                &a.remote.as_ref().and_then(|r| r.approval.clone()),
            ],
        )?;
        let requested_by: Option<String> = self
            .first(
                "SELECT requested_by FROM approvals WHERE uuid = $1",
                &[&fields.uuid],
            )?
            .and_then(|r| r.get(0));
        Ok(fields.into_approval(a, requested_by))
    }
    fn approval(&self, uuid: &str) -> Result<Option<Approval>, StoreError> {
        Ok(self
            .approvals_where("uuid = $1", &[&uuid])?
            .into_iter()
            .next())
    }
    fn lock_approval(&self, uuid: &str) -> Result<Option<Approval>, StoreError> {
        Ok(self
            .approvals_where("uuid = $1 FOR UPDATE", &[&uuid])?
            .into_iter()
            .next())
    }
    fn insert_notification(
        &self,
        n: &crate::store::outbox::Notification,
    ) -> Result<(), StoreError> {
        let d = &n.delivery;
        let attempts = i64::from(d.attempts);
        let payload = n.payload.to_string();
        self.exec(
            &format!(
                "INSERT INTO notifications ({}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
                crate::store::outbox::COLUMNS
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
    ) -> Result<Vec<crate::store::outbox::Notification>, StoreError> {
        // SKIP LOCKED: replicas claiming at the same moment take
        // different rows instead of waiting for each other.
        let sql = format!(
            "UPDATE notifications SET next_at = $2 WHERE id IN \
             (SELECT id FROM notifications n WHERE status = 'pending' AND next_at <= $1 AND {} \
              ORDER BY next_at LIMIT $3 FOR UPDATE SKIP LOCKED) RETURNING {}",
            crate::store::push::IN_ORDER,
            crate::store::outbox::COLUMNS
        );
        Ok(self
            .query(&sql, &[&now, &until, &i64::from(limit)])?
            .iter()
            .map(notification_row)
            .collect())
    }
    fn finish_notification(
        &self,
        id: &str,
        a: &crate::store::outbox::Attempt,
        at: &str,
    ) -> Result<(), StoreError> {
        let (status, next_at, error, delivered) = crate::store::outbox::outcome_columns(a, at);
        let counted = i64::from(!matches!(a, crate::store::outbox::Attempt::Skipped { .. }));
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
    ) -> Result<Vec<crate::store::outbox::Notification>, StoreError> {
        let sql = format!(
            "SELECT {} FROM notifications WHERE $1::TEXT IS NULL OR status = $1 \
             ORDER BY created_at DESC, id DESC LIMIT $2",
            crate::store::outbox::COLUMNS
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
    fn put_push_config(&self, p: &crate::store::push::PushConfig) -> Result<(), StoreError> {
        self.exec(
            &format!(
                "INSERT INTO push_configs ({}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
                 ON CONFLICT (task_id, config_id) DO UPDATE SET url = excluded.url, token = excluded.token, \
                 auth_scheme = excluded.auth_scheme, credentials = excluded.credentials, dialect = excluded.dialect, \
                 created_by = excluded.created_by, created_at = excluded.created_at, last_state = NULL",
                crate::store::push::COLUMNS
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
    fn push_configs(
        &self,
        task_id: &str,
    ) -> Result<Vec<crate::store::push::PushConfig>, StoreError> {
        let sql = format!(
            "SELECT {} FROM push_configs WHERE task_id = $1 ORDER BY created_at, config_id",
            crate::store::push::COLUMNS
        );
        Ok(self
            .query(&sql, &[&task_id])?
            .iter()
            .map(push_row)
            .collect())
    }
    fn push_config(&self, uid: &str) -> Result<Option<crate::store::push::PushConfig>, StoreError> {
        let sql = format!(
            "SELECT {} FROM push_configs WHERE uid = $1",
            crate::store::push::COLUMNS
        );
        Ok(self.first(&sql, &[&uid])?.as_ref().map(push_row))
    }
    fn delete_push_config(&self, task_id: &str, config_id: &str) -> Result<bool, StoreError> {
        Ok(self.exec(
            "DELETE FROM push_configs WHERE task_id = $1 AND config_id = $2",
            &[&task_id, &config_id],
        )? == 1)
    }
    fn advance_push(&self, uid: &str, state: &str) -> Result<bool, StoreError> {
        Ok(self.exec(crate::store::push::ADVANCE, &[&uid, &state])? == 1)
    }
    fn unsettled_push_configs(
        &self,
        limit: u32,
    ) -> Result<Vec<crate::store::push::PushConfig>, StoreError> {
        let sql = format!(
            "SELECT {} FROM push_configs WHERE {} ORDER BY created_at LIMIT $1",
            crate::store::push::COLUMNS,
            crate::store::push::UNSETTLED
        );
        Ok(self
            .query(&sql, &[&i64::from(limit)])?
            .iter()
            .map(push_row)
            .collect())
    }
    fn pins(&self) -> Result<Vec<crate::store::pins::PinRow>, StoreError> {
        let sql = format!(
            "SELECT {} FROM tool_pins ORDER BY server, tool",
            crate::store::pins::PIN_COLUMNS
        );
        Ok(self.query(&sql, &[])?.iter().map(pin_row).collect())
    }
    fn pin(
        &self,
        server: &str,
        tool: &str,
    ) -> Result<Option<crate::store::pins::PinRow>, StoreError> {
        let sql = format!(
            "SELECT {} FROM tool_pins WHERE server = $1 AND tool = $2 FOR UPDATE",
            crate::store::pins::PIN_COLUMNS
        );
        Ok(self.first(&sql, &[&server, &tool])?.as_ref().map(pin_row))
    }
    fn insert_pin(&self, p: &crate::store::pins::PinRow) -> Result<bool, StoreError> {
        Ok(self.exec(
            "INSERT INTO tool_pins (server, tool, digest, definition, pinned_at) VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (server, tool) DO NOTHING",
            &[&p.server, &p.tool, &p.digest, &p.definition, &p.pinned_at],
        )? == 1)
    }
    fn set_pin_change(
        &self,
        server: &str,
        tool: &str,
        change: Option<(&str, &str, &str)>,
    ) -> Result<(), StoreError> {
        let (d, j, at) = match change {
            Some((d, j, at)) => (Some(d), Some(j), Some(at)),
            None => (None, None, None),
        };
        self.exec(
            "UPDATE tool_pins SET changed_digest = $3, changed_definition = $4, changed_at = $5 \
             WHERE server = $1 AND tool = $2",
            &[&server, &tool, &d, &j, &at],
        )?;
        Ok(())
    }
    fn accept_pin(&self, server: &str, tool: &str) -> Result<bool, StoreError> {
        Ok(self.exec(
            "UPDATE tool_pins SET digest = changed_digest, definition = changed_definition, pinned_at = $3, \
             changed_digest = NULL, changed_definition = NULL, changed_at = NULL \
             WHERE server = $1 AND tool = $2 AND changed_digest IS NOT NULL",
            &[&server, &tool, &now()],
        )? == 1)
    }
    fn set_edited(&self, uuid: &str, args: &str, by: &str) -> Result<(), StoreError> {
        self.exec(
            "UPDATE approvals SET edited_args = $2, edited_by = $3 WHERE uuid = $1",
            &[&uuid, &args, &by],
        )?;
        Ok(())
    }
    fn due_approvals(&self, now: &str, limit: u32) -> Result<Vec<Approval>, StoreError> {
        self.approvals_where(
            "status = 'pending' AND expires_at IS NOT NULL AND expires_at <= $1 ORDER BY expires_at LIMIT $2",
            &[&now, &i64::from(limit)],
        )
    }
    fn escalate(&self, uuid: &str, approvers: &str, expires_at: &str) -> Result<bool, StoreError> {
        Ok(self.exec(
            "UPDATE approvals SET escalated = 1, approvers = $2, expires_at = $3, updated_at = $4 \
             WHERE uuid = $1 AND status = 'pending' AND escalated = 0",
            &[&uuid, &approvers, &expires_at, &now()],
        )? == 1)
    }
    fn set_votes(&self, uuid: &str, votes: &str) -> Result<(), StoreError> {
        self.exec(
            "UPDATE approvals SET votes = $2, updated_at = $3 WHERE uuid = $1",
            &[&uuid, &votes, &now()],
        )?;
        Ok(())
    }
    fn approval_for_message(&self, message_id: &str) -> Result<Option<Approval>, StoreError> {
        Ok(self
            .approvals_where("message_id = $1 ORDER BY seq DESC LIMIT 1", &[&message_id])?
            .into_iter()
            .next())
    }
    fn transition(
        &self,
        uuid: &str,
        from: &[ApprovalStatus],
        to: ApprovalStatus,
        decided_by: Option<&Decider>,
        reason: Option<&str>,
    ) -> Result<bool, StoreError> {
        let from: Vec<&str> = from.iter().map(|s| s.as_str()).collect();
        let decision = matches!(
            to,
            ApprovalStatus::Approved
                | ApprovalStatus::Rejected
                | ApprovalStatus::Cancelled
                | ApprovalStatus::Expired
        );
        let n = if decision {
            self.exec(
                "UPDATE approvals SET status = $2, updated_at = $3, decided_at = $3, decided_by = $5, \
                 reason = NULLIF($6, ''), decided_via = $7, decided_session = $8 \
                 WHERE uuid = $1 AND status = ANY($4)",
                &[
                    &uuid,
                    &to.as_str(),
                    &now(),
                    &from,
                    &decided_by.map(|d| d.name.as_str()),
                    &reason.unwrap_or(""),
                    &decided_by.map(|d| d.via.as_str()),
                    &decided_by.map(|d| d.session.as_str()),
                ],
            )?
        } else {
            self.exec(
                "UPDATE approvals SET status = $2, updated_at = $3 WHERE uuid = $1 AND status = ANY($4)",
                &[&uuid, &to.as_str(), &now(), &from],
            )?
        };
        Ok(n == 1)
    }
    fn pending_for(&self, conversation_id: &str) -> Result<Option<PendingApproval>, StoreError> {
        Ok(self
            .pending_of(&[conversation_id.to_string()])?
            .remove(conversation_id))
    }
    fn approvals_with_status(&self, status: ApprovalStatus) -> Result<Vec<Approval>, StoreError> {
        self.approvals_where("status = $1 ORDER BY created_at", &[&status.as_str()])
    }
    fn approvals_of(
        &self,
        conversation_id: &str,
        status: ApprovalStatus,
    ) -> Result<Vec<Approval>, StoreError> {
        self.approvals_where(
            "conversation_id = $1 AND status = $2 ORDER BY created_at",
            &[&conversation_id, &status.as_str()],
        )
    }
    fn count_approvals(&self, status: ApprovalStatus) -> Result<usize, StoreError> {
        let n: i64 = self
            .first(
                "SELECT COUNT(*) FROM approvals WHERE status = $1",
                &[&status.as_str()],
            )?
            .map(|r| r.get(0))
            .unwrap_or(0);
        Ok(usize::try_from(n).unwrap_or(0))
    }

    fn pending_proxies(&self) -> Result<Vec<Approval>, StoreError> {
        self.approvals_where(
            "status = $1 AND remote_task_id IS NOT NULL ORDER BY created_at",
            &[&ApprovalStatus::Pending.as_str()],
        )
    }
    fn pending_after(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Option<Vec<Approval>>, StoreError> {
        let pending = ApprovalStatus::Pending.as_str();
        let limit = i64::from(limit);
        let Some(uuid) = after else {
            return self
                .approvals_where(
                    "status = $1 ORDER BY created_at, uuid LIMIT $2",
                    &[&pending, &limit],
                )
                .map(Some);
        };
        let Some(at) = self.first("SELECT created_at FROM approvals WHERE uuid = $1", &[&uuid])?
        else {
            return Ok(None);
        };
        let at: String = at.get(0);
        self.approvals_where(
            "status = $1 AND created_at >= $2 AND (created_at, uuid) > ($2, $3) \
             ORDER BY created_at, uuid LIMIT $4",
            &[&pending, &at, &uuid, &limit],
        )
        .map(Some)
    }

    fn fence(&self, conversation_id: &str) -> Result<(), StoreError> {
        let Some(epoch) = self.leases.epoch(conversation_id) else {
            return Ok(());
        };
        if self.mode == super::Mode::Write {
            // Held like a write: `stopgo_fence` raises when the lease moved
            // on, which fails the transaction before anything after it
            // (a pipelined `COMMIT` included) can take effect.
            self.deferred.borrow_mut().push(Deferred {
                sql: "SELECT stopgo_fence($1, $2, $3)",
                params: vec![
                    own(conversation_id.to_string()),
                    own(epoch),
                    own(self.leases.owner.clone()),
                ],
                fence: Some(conversation_id.to_string()),
            });
            self.known.borrow_mut().insert(conversation_id.to_string());
            return Ok(());
        }
        // FOR SHARE: a replica taking the lease over waits for this
        // transaction, so nothing it writes lands after the takeover.
        match self
            .first(
                super::leases::FENCE,
                &[&conversation_id, &epoch, &self.leases.owner],
            )?
            .is_some()
        {
            true => Ok(()),
            false => Err(StoreError::LeaseLost(conversation_id.to_string())),
        }
    }
    fn lease_new(&self, conversation_id: &str) -> Result<i64, StoreError> {
        // Held like a write: the conversation's insert goes first, in the
        // same round trip, and a failure fails the transaction.
        self.defer(
            super::leases::LEASE_NEW,
            vec![
                own(conversation_id.to_string()),
                own(self.leases.owner.clone()),
                own(super::leases::NEW_EPOCH),
                own(self.leases.seconds),
            ],
        )?;
        Ok(super::leases::NEW_EPOCH)
    }
    fn release_lease(&self, conversation_id: &str) -> Result<(), StoreError> {
        let Some(epoch) = self.leases.epoch(conversation_id) else {
            return Ok(());
        };
        self.defer(
            super::leases::RELEASE,
            vec![
                own(conversation_id.to_string()),
                own(epoch),
                own(self.leases.owner.clone()),
            ],
        )?;
        self.released
            .borrow_mut()
            .push((conversation_id.to_string(), epoch));
        Ok(())
    }
    fn take_expired_lease(&self) -> Result<Option<(String, i64)>, StoreError> {
        let Some(row) = self.first(super::leases::TAKE_EXPIRED, &[])? else {
            return Ok(None);
        };
        let id: String = row.get(0);
        let epoch: i64 = self
            .first(
                super::leases::TAKE_OVER,
                &[&id, &self.leases.owner, &self.leases.seconds],
            )?
            .map(|r| r.get(0))
            .ok_or_else(|| StoreError::Corrupt(format!("the lease of {id} vanished")))?;
        Ok(Some((id, epoch)))
    }
    fn audit(&self, e: &Event<'_>) -> Result<(), StoreError> {
        self.audit.borrow_mut().push(PendingAudit {
            at: now(),
            actor: e.actor.to_string(),
            event: e.event.to_string(),
            conversation_id: e.conversation_id.map(str::to_string),
            approval_uuid: e.approval_uuid.map(str::to_string),
            details: e.details.clone(),
        });
        Ok(())
    }
    fn audit_page(&self, after: i64, limit: u32) -> Result<Vec<audit::Row>, StoreError> {
        let rows = self.query(
            "SELECT seq, at, actor, event, conversation_id, approval_uuid, details, prev_hash, hash \
             FROM audit WHERE seq > $1 ORDER BY seq LIMIT $2",
            &[&after, &i64::from(limit)],
        )?;
        Ok(rows
            .iter()
            .map(|r| {
                audit::Row::decode(
                    r.get(0),
                    r.get(1),
                    r.get(2),
                    r.get(3),
                    r.get(4),
                    r.get(5),
                    r.get(6),
                    r.get(7),
                    r.get(8),
                )
            })
            .collect())
    }
    fn audit_head(&self) -> Result<(i64, String), StoreError> {
        Ok(self
            .first("SELECT seq, hash FROM audit_head", &[])?
            .map(|r| (r.get(0), r.get(1)))
            .unwrap_or((0, audit::GENESIS.to_string())))
    }

    fn insert_session(&self, id_hash: &str, s: &Session) -> Result<(), StoreError> {
        self.exec(
            "INSERT INTO sessions (id_hash, name, roles, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)",
            &[&id_hash, &s.name, &s.roles.join(","), &now(), &s.expires_at],
        )?;
        Ok(())
    }
    fn session(&self, id_hash: &str, now: &str) -> Result<Option<Session>, StoreError> {
        Ok(self
            .first(
                "SELECT name, roles, expires_at FROM sessions WHERE id_hash = $1 AND expires_at > $2",
                &[&id_hash, &now],
            )?
            .map(|r| sessions::Session::decode(r.get(0), r.get::<_, String>(1), r.get(2))))
    }
    fn delete_session(&self, id_hash: &str) -> Result<Option<Session>, StoreError> {
        let s = self.session(id_hash, "")?;
        self.exec("DELETE FROM sessions WHERE id_hash = $1", &[&id_hash])?;
        Ok(s)
    }
    fn purge_sessions(&self, now: &str) -> Result<usize, StoreError> {
        Ok(self.exec("DELETE FROM sessions WHERE expires_at <= $1", &[&now])? as usize)
    }
}

fn pin_row(r: &Row) -> crate::store::pins::PinRow {
    crate::store::pins::PinRow {
        server: r.get(0),
        tool: r.get(1),
        digest: r.get(2),
        definition: r.get(3),
        pinned_at: r.get(4),
        changed: match (r.get(5), r.get(6), r.get(7)) {
            (Some(d), Some(j), Some(at)) => Some((d, j, at)),
            _ => None,
        },
    }
}

fn push_row(r: &Row) -> crate::store::push::PushConfig {
    crate::store::push::PushConfig {
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

fn notification_row(r: &Row) -> crate::store::outbox::Notification {
    crate::store::outbox::decode(
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
