//! [`PgTx`]: a PostgreSQL transaction, whose statements are pipelined
//! (held writes go out with the next statement that is waited for, or
//! with `COMMIT`), and the [`Tx`] statements that span entities. Each
//! entity's statements are in its own file (`conversations.rs`,
//! `messages.rs`, ...), in PostgreSQL's dialect, decoded by the same
//! functions as SQLite's.

use super::audit::PendingAudit;
use super::conn::Conn;
use super::conn::{Answer, Step};
use super::held_leases::Leases;
use super::messages::{APPEND_KNOWN_ENDING, INSERT_WITH_MESSAGE, append_params};
use super::mode::Mode;
use crate::domain::ids::new_id;
use crate::domain::ids::now;
use crate::store::error::StoreError;
use crate::store::messages::NewMessage;
use crate::store::tx::Tx;
use app::models::{Conversation, ConversationStatus, Message};
use postgres::Row;
use postgres::Statement;
use postgres::types::ToSql;
use std::cell::{Cell, RefCell};
use std::collections::HashSet;

pub(super) type Params<'p> = &'p [&'p (dyn ToSql + Sync)];

/// A write whose answer nobody waits for: it goes out with the next
/// statement that is waited for, or with `COMMIT` (one round trip for all).
pub(super) struct Deferred {
    pub(super) sql: &'static str,
    pub(super) params: Vec<Box<dyn ToSql + Sync>>,
    /// The conversation a fence guards: its failure is
    /// [`StoreError::LeaseLost`].
    pub(super) fence: Option<String>,
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
pub(crate) struct PgTx<'a> {
    conn: RefCell<&'a mut Conn>,
    pub(super) mode: Mode,
    /// `BEGIN` was sent (or, in [`Mode::Single`], the statement).
    begun: Cell<bool>,
    pub(super) key: Option<&'a [u8]>,
    pub(super) leases: &'a Leases,
    pub(super) audit: RefCell<Vec<PendingAudit>>,
    pub(super) deferred: RefCell<Vec<Deferred>>,
    /// Conversations this transaction inserted or fenced: they exist, so a
    /// write to them needs no answer (the statement checks it anyway).
    pub(super) known: RefCell<HashSet<String>>,
    /// Leases given back by this transaction (`release_lease`): no longer
    /// renewed once it commits.
    pub(super) released: RefCell<Vec<(String, i64)>>,
}

/// An owned parameter of a held write.
pub(super) fn own<T: ToSql + Sync + 'static>(v: T) -> Box<dyn ToSql + Sync> {
    Box::new(v)
}

impl<'a> PgTx<'a> {
    pub(super) fn new(
        conn: &'a mut Conn,
        mode: Mode,
        key: Option<&'a [u8]>,
        leases: &'a Leases,
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

    pub(super) fn knows(&self, conversation_id: &str) -> bool {
        self.mode == Mode::Write && self.known.borrow().contains(conversation_id)
    }

    /// Holds a write until the next statement that is waited for (outside
    /// a write transaction it runs at once).
    pub(super) fn defer(
        &self,
        sql: &'static str,
        params: Vec<Box<dyn ToSql + Sync>>,
    ) -> Result<(), StoreError> {
        if self.mode != Mode::Write {
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
            if self.mode == Mode::Single {
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
    pub(super) fn query(&self, sql: &str, params: Params<'_>) -> Result<Vec<Row>, StoreError> {
        self.queries(&[(sql, params)]).map(|mut all| all.remove(0))
    }

    /// Runs several reads in one round trip (with the held writes before
    /// them); their rows, in order.
    pub(super) fn queries(
        &self,
        reads: &[(&str, Params<'_>)],
    ) -> Result<Vec<Vec<Row>>, StoreError> {
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
    pub(super) fn exec(&self, sql: &str, params: Params<'_>) -> Result<u64, StoreError> {
        match self.send(&[(sql, params, false)], None)?.pop() {
            Some(Answer::Count(n)) => Ok(n),
            _ => Err(StoreError::Worker("a write answered no count".into())),
        }
    }

    pub(super) fn first(&self, sql: &str, params: Params<'_>) -> Result<Option<Row>, StoreError> {
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
}

impl Tx for PgTx<'_> {
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
    fn append_ending(&self, conversation_id: &str, m: NewMessage) -> Result<Message, StoreError> {
        if !self.knows(conversation_id) {
            return crate::store::tx::append_then_end(self, conversation_id, m);
        }
        let (params, message) = append_params(conversation_id, m, now())?;
        self.defer(APPEND_KNOWN_ENDING, params)?;
        Ok(message)
    }
}
