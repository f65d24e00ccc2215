//! Approvals on SQLite: the statements of [`ApprovalTx`], as plain
//! functions on a connection. Every transition is a conditional `UPDATE`
//! (see [`crate::store::approvals`]).

use crate::domain::ids::now;
use crate::store::approvals::{
    Approval, COLUMNS, Decider, Insert, NCOLS, NewApproval, RawRow, decode,
};
use crate::store::error::StoreError;
use crate::store::tx::ApprovalTx;
use app::models::{ApprovalStatus, PendingApproval};
use rusqlite::{Connection, OptionalExtension, Row, params, params_from_iter};
use std::collections::HashMap;

impl ApprovalTx for Connection {
    fn insert_approval(&self, a: NewApproval) -> Result<Approval, StoreError> {
        insert(self, a)
    }
    fn approval(&self, uuid: &str) -> Result<Option<Approval>, StoreError> {
        get(self, uuid)
    }
    fn approval_for_message(&self, message_id: &str) -> Result<Option<Approval>, StoreError> {
        for_message(self, message_id)
    }
    /// SQLite has one writer at a time: the write transaction is the lock.
    fn lock_approval(&self, uuid: &str) -> Result<Option<Approval>, StoreError> {
        get(self, uuid)
    }
    fn set_votes(&self, uuid: &str, votes: &str) -> Result<(), StoreError> {
        set_votes(self, uuid, votes)
    }
    fn set_edited(&self, uuid: &str, args: &str, by: &str) -> Result<(), StoreError> {
        set_edited(self, uuid, args, by)
    }
    fn set_receipt(&self, uuid: &str, receipt: &str) -> Result<(), StoreError> {
        self.prepare_cached("UPDATE approvals SET receipt = ?2 WHERE uuid = ?1")?
            .execute(params![uuid, receipt])?;
        Ok(())
    }
    fn set_upstream_receipt(&self, uuid: &str, receipt: &str) -> Result<(), StoreError> {
        self.prepare_cached("UPDATE approvals SET upstream_receipt = ?2 WHERE uuid = ?1")?
            .execute(params![uuid, receipt])?;
        Ok(())
    }
    fn retry_once(&self, uuid: &str) -> Result<bool, StoreError> {
        Ok(self
            .prepare_cached(
                "UPDATE approvals SET status = 'approved', retried = 1, updated_at = ?2 \
                 WHERE uuid = ?1 AND status = 'executing' AND retried = 0",
            )?
            .execute(params![uuid, now()])?
            == 1)
    }
    fn due_approvals(&self, now: &str, limit: u32) -> Result<Vec<Approval>, StoreError> {
        due(self, now, limit)
    }
    fn escalate(&self, uuid: &str, approvers: &str, expires_at: &str) -> Result<bool, StoreError> {
        escalate(self, uuid, approvers, expires_at)
    }
    fn transition(
        &self,
        uuid: &str,
        from: &[ApprovalStatus],
        to: ApprovalStatus,
        decided_by: Option<&Decider>,
        reason: Option<&str>,
    ) -> Result<bool, StoreError> {
        transition(self, uuid, from, to, decided_by, reason)
    }
    fn pending_for(&self, conversation_id: &str) -> Result<Option<PendingApproval>, StoreError> {
        pending_for(self, conversation_id)
    }
    fn approvals_with_status(&self, status: ApprovalStatus) -> Result<Vec<Approval>, StoreError> {
        with_status(self, status)
    }
    fn approvals_of(
        &self,
        conversation_id: &str,
        status: ApprovalStatus,
    ) -> Result<Vec<Approval>, StoreError> {
        of_conversation(self, conversation_id, status)
    }
    fn count_approvals(&self, status: ApprovalStatus) -> Result<usize, StoreError> {
        count_with_status(self, status)
    }
    fn pending_proxies(&self) -> Result<Vec<Approval>, StoreError> {
        pending_proxies(self)
    }
    fn pending_after(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Option<Vec<Approval>>, StoreError> {
        pending_after(self, after, limit)
    }
}

/// Inserts a pending approval.
fn insert(conn: &Connection, a: NewApproval) -> Result<Approval, StoreError> {
    let f = Insert::of(&a)?;
    // Raised by whoever sent the conversation's latest message.
    conn.prepare_cached("INSERT INTO approvals (uuid, conversation_id, message_id, tool_name, server, tool_args, description, status, \
         remote_task_id, remote_agent_name, chain, created_at, updated_at, requested_by, requested_session, traceparent, rule, approvers, quorum, \
           expires_in, expires_at, remote_approval_uuid) \
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, 'pending', ?8, ?9, ?10, ?11, ?11, \
           COALESCE(c.requested_by, 'anonymous'), COALESCE(c.requested_session, c.session_id), ?12, ?13, ?14, ?15, ?16, ?17, ?18 \
         FROM conversations c WHERE c.id = ?2")?
        .execute(params![f.uuid, a.conversation_id, a.message_id, a.tool_name, a.server, f.args, a.description, f.task, f.agent, f.chain, f.created_at, a.traceparent, a.rule, f.approvers, f.quorum, f.expires_in, f.expires_at, a.remote.as_ref().and_then(|r| r.approval.clone())])?;
    let requested_by: Option<String> = conn
        .prepare_cached("SELECT requested_by FROM approvals WHERE uuid = ?1")?
        .query_row([&f.uuid], |r| r.get(0))
        .optional()?
        .flatten();
    Ok(f.into_approval(a, requested_by))
}

/// One approval by uuid.
fn get(conn: &Connection, uuid: &str) -> Result<Option<Approval>, StoreError> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM approvals WHERE uuid = ?1"))?
        .query_row([uuid], raw)
        .optional()?
        .map(decode)
        .transpose()
}

/// Records the votes of an approval with a quorum (its row is the lock:
/// the caller read it in this write transaction).
fn set_votes(conn: &Connection, uuid: &str, votes: &str) -> Result<(), StoreError> {
    conn.prepare_cached("UPDATE approvals SET votes = ?2, updated_at = ?3 WHERE uuid = ?1")?
        .execute(params![uuid, votes, now()])?;
    Ok(())
}

/// Records the arguments an approver edited before approving.
fn set_edited(conn: &Connection, uuid: &str, args: &str, by: &str) -> Result<(), StoreError> {
    conn.prepare_cached("UPDATE approvals SET edited_args = ?2, edited_by = ?3 WHERE uuid = ?1")?
        .execute(params![uuid, args, by])?;
    Ok(())
}

/// Pending approvals due at `now`, oldest deadline first.
fn due(conn: &Connection, now: &str, limit: u32) -> Result<Vec<Approval>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM approvals WHERE status = 'pending' AND expires_at IS NOT NULL \
         AND expires_at <= ?1 ORDER BY expires_at LIMIT ?2"
    ))?;
    let rows = stmt.query_map(params![now, limit], raw)?;
    rows.map(|r| decode(r?)).collect()
}

/// The first expiry of an escalating approval (once).
fn escalate(
    conn: &Connection,
    uuid: &str,
    approvers: &str,
    expires_at: &str,
) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached(
            "UPDATE approvals SET escalated = 1, approvers = ?2, expires_at = ?3, updated_at = ?4 \
             WHERE uuid = ?1 AND status = 'pending' AND escalated = 0",
        )?
        .execute(params![uuid, approvers, expires_at, now()])?
        == 1)
}

/// The latest approval of a tool-call message, if any.
fn for_message(conn: &Connection, message_id: &str) -> Result<Option<Approval>, StoreError> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM approvals WHERE message_id = ?1 ORDER BY rowid DESC LIMIT 1"
    ))?
    .query_row([message_id], raw)
    .optional()?
    .map(decode)
    .transpose()
}

/// Moves `uuid` from one of `from` to `to`; false if it was in another state.
fn transition(
    conn: &Connection,
    uuid: &str,
    from: &[ApprovalStatus],
    to: ApprovalStatus,
    decided_by: Option<&Decider>,
    reason: Option<&str>,
) -> Result<bool, StoreError> {
    let marks = vec!["?"; from.len()].join(",");
    let ts = now();
    let mut values: Vec<String> = vec![uuid.to_string(), to.as_str().to_string(), ts];
    values.extend(from.iter().map(|s| s.as_str().to_string()));
    let decision = matches!(
        to,
        ApprovalStatus::Approved
            | ApprovalStatus::Rejected
            | ApprovalStatus::Cancelled
            | ApprovalStatus::Expired
    );
    let sql = if decision {
        values.push(
            decided_by
                .map(|d| d.name.as_str())
                .unwrap_or("")
                .to_string(),
        );
        values.push(reason.unwrap_or("").to_string());
        values.push(decided_by.map(|d| d.via.as_str()).unwrap_or("").to_string());
        values.push(
            decided_by
                .map(|d| d.session.as_str())
                .unwrap_or("")
                .to_string(),
        );
        let n = values.len();
        format!(
            "UPDATE approvals SET status = ?2, updated_at = ?3, decided_at = ?3, decided_by = NULLIF(?{}, ''), \
             reason = NULLIF(?{}, ''), decided_via = NULLIF(?{}, ''), decided_session = NULLIF(?{}, '') \
             WHERE uuid = ?1 AND status IN ({})",
            n - 3,
            n - 2,
            n - 1,
            n,
            renumber(&marks, 4)
        )
    } else {
        format!(
            "UPDATE approvals SET status = ?2, updated_at = ?3 WHERE uuid = ?1 AND status IN ({})",
            renumber(&marks, 4)
        )
    };
    Ok(conn
        .prepare_cached(&sql)?
        .execute(params_from_iter(values.iter()))?
        == 1)
}

/// `?,?,?` → `?4,?5,?6`.
fn renumber(marks: &str, first: usize) -> String {
    marks
        .split(',')
        .enumerate()
        .map(|(i, _)| format!("?{}", first + i))
        .collect::<Vec<_>>()
        .join(",")
}

/// The oldest pending approval of a conversation (a pipeline paused in
/// several parallel branches has more than one).
pub(super) fn pending_for(
    conn: &Connection,
    conversation_id: &str,
) -> Result<Option<PendingApproval>, StoreError> {
    Ok(pending_of(conn, &[conversation_id.to_string()])?.remove(conversation_id))
}

/// Pending approvals of several conversations, by conversation.
pub(super) fn pending_of(
    conn: &Connection,
    ids: &[String],
) -> Result<HashMap<String, PendingApproval>, StoreError> {
    let mut out = HashMap::new();
    if ids.is_empty() {
        return Ok(out);
    }
    let mut stmt = conn.prepare_cached(&pending_of_sql(ids.len()))?;
    let rows = stmt.query_map(params_from_iter(ids.iter()), raw)?;
    for row in rows {
        let a = decode(row?)?;
        out.entry(a.approval.conversation_id.clone())
            .or_insert(a.approval);
    }
    Ok(out)
}

/// The statement of [`pending_of`] for `n` conversations.
///
/// `ORDER BY +created_at`, not `created_at`: with the plain column,
/// SQLite (no statistics) walks `approvals_by_status (status,
/// created_at)` to skip the sort, which reads every pending approval of
/// every conversation on each `GET /conversations/:id` and list page (5,000
/// waiting elsewhere made one conversation's read 7x dearer). The `+`
/// leaves it `approvals_by_conversation (conversation_id, status)`: these
/// conversations' own rows, sorted (a handful).
fn pending_of_sql(n: usize) -> String {
    let marks = vec!["?"; n].join(",");
    format!(
        "SELECT {COLUMNS} FROM approvals WHERE status = 'pending' AND conversation_id IN ({marks}) ORDER BY +created_at"
    )
}

/// The statement of [`of_conversation`] (`+created_at`: see
/// [`pending_of_sql`]).
const OF_CONVERSATION_SQL: &str =
    "FROM approvals WHERE conversation_id = ?1 AND status = ?2 ORDER BY +created_at";

/// Every approval in `status`, oldest first.
fn with_status(conn: &Connection, status: ApprovalStatus) -> Result<Vec<Approval>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM approvals WHERE status = ?1 ORDER BY created_at"
    ))?;
    let rows = stmt.query_map([status.as_str()], raw)?;
    rows.map(|r| decode(r?)).collect()
}

/// The approvals of one conversation in `status`, oldest first.
fn of_conversation(
    conn: &Connection,
    conversation_id: &str,
    status: ApprovalStatus,
) -> Result<Vec<Approval>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!("SELECT {COLUMNS} {OF_CONVERSATION_SQL}"))?;
    let rows = stmt.query_map([conversation_id, status.as_str()], raw)?;
    rows.map(|r| decode(r?)).collect()
}

/// The pending approvals a sub-agent's task waits on, oldest first.
fn pending_proxies(conn: &Connection) -> Result<Vec<Approval>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM approvals WHERE status = ?1 AND remote_task_id IS NOT NULL \
         ORDER BY created_at"
    ))?;
    let rows = stmt.query_map([ApprovalStatus::Pending.as_str()], raw)?;
    rows.map(|r| decode(r?)).collect()
}

/// Up to `limit` pending approvals after the approval `after`, oldest
/// first (by creation, then uuid); `None` when `after` names no approval.
fn pending_after(
    conn: &Connection,
    after: Option<&str>,
    limit: u32,
) -> Result<Option<Vec<Approval>>, StoreError> {
    let pending = ApprovalStatus::Pending.as_str();
    let rows = match after {
        None => {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM approvals WHERE status = ?1 \
                 ORDER BY created_at, uuid LIMIT ?2"
            ))?;
            stmt.query_map(params![pending, limit], raw)?
                .collect::<Result<Vec<_>, _>>()?
        }
        Some(uuid) => {
            let at: Option<String> = conn
                .prepare_cached("SELECT created_at FROM approvals WHERE uuid = ?1")?
                .query_row([uuid], |r| r.get(0))
                .optional()?;
            let Some(at) = at else {
                return Ok(None);
            };
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM approvals WHERE status = ?1 \
                 AND created_at >= ?2 AND (created_at > ?2 OR uuid > ?3) \
                 ORDER BY created_at, uuid LIMIT ?4"
            ))?;
            stmt.query_map(params![pending, at, uuid, limit], raw)?
                .collect::<Result<Vec<_>, _>>()?
        }
    };
    rows.into_iter()
        .map(decode)
        .collect::<Result<_, _>>()
        .map(Some)
}

/// How many approvals are in `status`.
fn count_with_status(conn: &Connection, status: ApprovalStatus) -> Result<usize, StoreError> {
    let mut stmt = conn.prepare_cached("SELECT COUNT(*) FROM approvals WHERE status = ?1")?;
    let n: i64 = stmt.query_row([status.as_str()], |r| r.get(0))?;
    Ok(usize::try_from(n).unwrap_or(0))
}

fn raw(r: &Row<'_>) -> rusqlite::Result<RawRow> {
    let mut cols = Vec::with_capacity(NCOLS);
    for i in 0..NCOLS {
        cols.push(r.get::<_, Option<String>>(i)?);
    }
    Ok((cols,))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SQLite's plan for `sql`, one line per step.
    fn plan(conn: &Connection, sql: &str) -> String {
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let unbound = vec![rusqlite::types::Null; stmt.parameter_count()];
        let steps = stmt
            .query_map(params_from_iter(unbound), |r| r.get::<_, String>(3))
            .unwrap();
        steps.map(Result::unwrap).collect::<Vec<_>>().join("\n")
    }

    /// A conversation's approvals are found through its own index entries,
    /// never by walking every pending approval (which the read path did on
    /// each `GET /conversations/:id` and list page: issue 53 item 9).
    #[test]
    fn a_conversations_approvals_are_read_through_its_own_index_entries() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = super::super::connect(&dir.path().join("a.db"), &None).unwrap();
        super::super::migrations::migrate(&mut conn, "a.db").unwrap();
        let own = "USING INDEX approvals_by_conversation (conversation_id=? AND status=?)";
        for n in [1, 50] {
            let p = plan(&conn, &pending_of_sql(n));
            assert!(p.contains(own), "pending_of({n}): {p}");
        }
        let p = plan(&conn, &format!("SELECT {COLUMNS} {OF_CONVERSATION_SQL}"));
        assert!(p.contains(own), "of_conversation: {p}");
    }
}
