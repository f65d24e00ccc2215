//! Approvals as rows: one per decision a tool call waits on, with its state
//! machine. Most calls have at most one; a call to a sub-agent that asks
//! again and again has one proxy approval per round (the latest rules).
//!
//! Every transition is a conditional `UPDATE … WHERE status IN (…)` inside
//! the caller's transaction, so two racing decisions cannot both win: the
//! second sees zero rows changed and is told the approval was already
//! decided. The tool runs only after the row says `executing`, which is
//! what makes "at most once" hold across crashes (see `engine::recovery`).

use super::error::StoreError;
use super::{new_id, now};
use app::models::{ApprovalStatus, PendingApproval};
use rusqlite::{Connection, OptionalExtension, Row, params, params_from_iter};
use serde_json::Value;
use std::collections::HashMap;

/// An approval row.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Approval {
    pub(crate) approval: PendingApproval,
    pub(crate) message_id: String,
    pub(crate) server: Option<String>,
    pub(crate) status: ApprovalStatus,
    pub(crate) reason: Option<String>,
    pub(crate) decided_by: Option<String>,
    pub(crate) decided_at: Option<String>,
    /// The W3C `traceparent` of the turn that asked (when traces are on).
    pub(crate) traceparent: Option<String>,
    /// Its lifetime in seconds, when it has one.
    pub(crate) expires_in: Option<u64>,
    /// A proxy approval: the remote's own approval it stands for.
    pub(crate) remote_approval: Option<String>,
}

/// Who decided, and how (AUTH.md §5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Decider {
    /// The principal's name (`anonymous` in auth mode none).
    pub(crate) name: String,
    /// `rest`, `ui`, `a2a` or `link`.
    pub(crate) via: String,
    /// The deciding request's session id.
    pub(crate) session: String,
}

/// What a new approval is for.
#[derive(Clone, Debug)]
pub(crate) struct NewApproval {
    pub(crate) conversation_id: String,
    pub(crate) message_id: String,
    pub(crate) tool_name: String,
    pub(crate) server: Option<String>,
    pub(crate) tool_args: Value,
    pub(crate) description: String,
    /// Set for a proxy approval: a remote agent's task waits on it.
    pub(crate) remote: Option<RemoteRef>,
    /// The asking turn's W3C `traceparent` (when traces are on).
    pub(crate) traceparent: Option<String>,
    /// What asked for it (see [`PendingApproval::rule`]).
    pub(crate) rule: Option<String>,
    /// Who may decide it; empty: any approver.
    pub(crate) approvers: Vec<String>,
    /// How many distinct principals must approve (1: one decides).
    pub(crate) quorum: u32,
    /// How long it may wait for a decision; `None`: until decided.
    pub(crate) expires_in: Option<std::time::Duration>,
}

/// The remote task a proxy approval continues.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RemoteRef {
    pub(crate) task_id: String,
    /// Our name for the sub-agent.
    pub(crate) agent: String,
    /// The agents the request came through, nearest first (starting with `agent`).
    pub(crate) chain: Vec<String>,
    /// The remote's own approval uuid, when it said.
    pub(crate) approval: Option<String>,
}

pub(in crate::store) const COLUMNS: &str = "uuid, conversation_id, message_id, tool_name, server, tool_args, description, status, reason, \
                       decided_by, decided_at, remote_task_id, remote_agent_name, chain, created_at, \
                       requested_by, decided_via, traceparent, rule, approvers, CAST(quorum AS TEXT), votes, \
                       CAST(expires_in AS TEXT), expires_at, CAST(escalated AS TEXT), edited_args, edited_by, remote_approval_uuid";
/// Columns read by [`raw`].
pub(in crate::store) const NCOLS: usize = 28;

/// Inserts a pending approval.
pub(crate) fn insert(conn: &Connection, a: NewApproval) -> Result<Approval, StoreError> {
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

/// The generated and encoded columns of a new approval, whichever backend
/// inserts it.
pub(in crate::store) struct Insert {
    pub(crate) uuid: String,
    pub(crate) created_at: String,
    pub(crate) args: String,
    pub(crate) task: Option<String>,
    pub(crate) agent: Option<String>,
    pub(crate) chain: Option<String>,
    /// `approvers` as JSON; `None` when any approver may decide.
    pub(crate) approvers: Option<String>,
    pub(crate) quorum: i32,
    pub(crate) expires_in: Option<i64>,
    pub(crate) expires_at: Option<String>,
}

impl Insert {
    pub(in crate::store) fn of(a: &NewApproval) -> Result<Insert, StoreError> {
        let args =
            serde_json::to_string(&a.tool_args).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let (task, agent, chain) = match &a.remote {
            Some(r) => (
                Some(r.task_id.clone()),
                Some(r.agent.clone()),
                Some(
                    serde_json::to_string(&r.chain)
                        .map_err(|e| StoreError::Corrupt(e.to_string()))?,
                ),
            ),
            None => (None, None, None),
        };
        let approvers = (!a.approvers.is_empty())
            .then(|| serde_json::to_string(&a.approvers))
            .transpose()
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let created_at = now();
        let expires_in = a
            .expires_in
            .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        let expires_at = a.expires_in.map(|d| later(&created_at, d));
        Ok(Insert {
            expires_in,
            expires_at,
            approvers,
            quorum: i32::try_from(a.quorum.max(1)).unwrap_or(i32::MAX),
            uuid: new_id(),
            created_at,
            args,
            task,
            agent,
            chain,
        })
    }

    /// The approval as inserted (`requested_by` as the insert resolved it).
    pub(in crate::store) fn into_approval(
        self,
        a: NewApproval,
        requested_by: Option<String>,
    ) -> Approval {
        Approval {
            approval: PendingApproval {
                uuid: self.uuid,
                conversation_id: a.conversation_id,
                tool_name: a.tool_name,
                tool_args: a.tool_args,
                description: a.description,
                server: a.server.clone(),
                remote_task_id: a.remote.as_ref().map(|r| r.task_id.clone()),
                remote_agent_name: a.remote.as_ref().map(|r| r.agent.clone()),
                chain: a.remote.as_ref().map(|r| r.chain.clone()),
                created_at: self.created_at,
                requested_by,
                rule: a.rule.clone(),
                approvers: a.approvers.clone(),
                quorum: a.quorum.max(1),
                expires_at: self.expires_at.clone(),
                ..Default::default()
            },
            message_id: a.message_id,
            server: a.server,
            status: ApprovalStatus::Pending,
            reason: None,
            decided_by: None,
            decided_at: None,
            traceparent: a.traceparent,
            expires_in: self.expires_in.and_then(|s| u64::try_from(s).ok()),
            remote_approval: a.remote.as_ref().and_then(|r| r.approval.clone()),
        }
    }
}

/// The timestamp `d` after `at` (both as [`now`] writes them).
pub(in crate::store) fn later(at: &str, d: std::time::Duration) -> String {
    shifted(at, d, 1)
}

/// `at` minus `d`, as stored.
pub(in crate::store) fn earlier(at: &str, d: std::time::Duration) -> String {
    shifted(at, d, -1)
}

fn shifted(at: &str, d: std::time::Duration, sign: i32) -> String {
    let base = chrono::DateTime::parse_from_rfc3339(at)
        .map(|t| t.with_timezone(&chrono::Utc))
        .unwrap_or_else(|_| chrono::Utc::now());
    let d = chrono::Duration::from_std(d).unwrap_or(chrono::Duration::days(365));
    (base + d * sign).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// One approval by uuid.
pub(crate) fn get(conn: &Connection, uuid: &str) -> Result<Option<Approval>, StoreError> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM approvals WHERE uuid = ?1"))?
        .query_row([uuid], raw)
        .optional()?
        .map(decode)
        .transpose()
}

/// Records the votes of an approval with a quorum (its row is the lock:
/// the caller read it in this write transaction).
pub(crate) fn set_votes(conn: &Connection, uuid: &str, votes: &str) -> Result<(), StoreError> {
    conn.prepare_cached("UPDATE approvals SET votes = ?2, updated_at = ?3 WHERE uuid = ?1")?
        .execute(params![uuid, votes, now()])?;
    Ok(())
}

/// Records the arguments an approver edited before approving.
pub(crate) fn set_edited(
    conn: &Connection,
    uuid: &str,
    args: &str,
    by: &str,
) -> Result<(), StoreError> {
    conn.prepare_cached("UPDATE approvals SET edited_args = ?2, edited_by = ?3 WHERE uuid = ?1")?
        .execute(params![uuid, args, by])?;
    Ok(())
}

/// Pending approvals due at `now`, oldest deadline first.
pub(crate) fn due(conn: &Connection, now: &str, limit: u32) -> Result<Vec<Approval>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM approvals WHERE status = 'pending' AND expires_at IS NOT NULL \
         AND expires_at <= ?1 ORDER BY expires_at LIMIT ?2"
    ))?;
    let rows = stmt.query_map(params![now, limit], raw)?;
    rows.map(|r| decode(r?)).collect()
}

/// The first expiry of an escalating approval (once).
pub(crate) fn escalate(
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
pub(crate) fn for_message(
    conn: &Connection,
    message_id: &str,
) -> Result<Option<Approval>, StoreError> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM approvals WHERE message_id = ?1 ORDER BY rowid DESC LIMIT 1"
    ))?
    .query_row([message_id], raw)
    .optional()?
    .map(decode)
    .transpose()
}

/// Moves `uuid` from one of `from` to `to`; false if it was in another state.
pub(crate) fn transition(
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
pub(crate) fn pending_for(
    conn: &Connection,
    conversation_id: &str,
) -> Result<Option<PendingApproval>, StoreError> {
    Ok(pending_of(conn, &[conversation_id.to_string()])?.remove(conversation_id))
}

/// Pending approvals of several conversations, by conversation.
pub(crate) fn pending_of(
    conn: &Connection,
    ids: &[String],
) -> Result<HashMap<String, PendingApproval>, StoreError> {
    let mut out = HashMap::new();
    if ids.is_empty() {
        return Ok(out);
    }
    let marks = vec!["?"; ids.len()].join(",");
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM approvals WHERE status = 'pending' AND conversation_id IN ({marks}) ORDER BY created_at"
    ))?;
    let rows = stmt.query_map(params_from_iter(ids.iter()), raw)?;
    for row in rows {
        let a = decode(row?)?;
        out.entry(a.approval.conversation_id.clone())
            .or_insert(a.approval);
    }
    Ok(out)
}

/// Every approval in `status`, oldest first.
pub(crate) fn with_status(
    conn: &Connection,
    status: ApprovalStatus,
) -> Result<Vec<Approval>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM approvals WHERE status = ?1 ORDER BY created_at"
    ))?;
    let rows = stmt.query_map([status.as_str()], raw)?;
    rows.map(|r| decode(r?)).collect()
}

/// The approvals of one conversation in `status`, oldest first.
pub(crate) fn of_conversation(
    conn: &Connection,
    conversation_id: &str,
    status: ApprovalStatus,
) -> Result<Vec<Approval>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM approvals WHERE conversation_id = ?1 AND status = ?2 ORDER BY created_at"
    ))?;
    let rows = stmt.query_map([conversation_id, status.as_str()], raw)?;
    rows.map(|r| decode(r?)).collect()
}

/// The pending approvals a sub-agent's task waits on, oldest first.
pub(crate) fn pending_proxies(conn: &Connection) -> Result<Vec<Approval>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM approvals WHERE status = ?1 AND remote_task_id IS NOT NULL \
         ORDER BY created_at"
    ))?;
    let rows = stmt.query_map([ApprovalStatus::Pending.as_str()], raw)?;
    rows.map(|r| decode(r?)).collect()
}

/// Up to `limit` pending approvals after the approval `after`, oldest
/// first (by creation, then uuid); `None` when `after` names no approval.
pub(crate) fn pending_after(
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
pub(crate) fn count_with_status(
    conn: &Connection,
    status: ApprovalStatus,
) -> Result<usize, StoreError> {
    let mut stmt = conn.prepare_cached("SELECT COUNT(*) FROM approvals WHERE status = ?1")?;
    let n: i64 = stmt.query_row([status.as_str()], |r| r.get(0))?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// An approval row's columns, as text, in [`COLUMNS`] order.
pub(in crate::store) type RawRow = (Vec<Option<String>>,);

fn raw(r: &Row<'_>) -> rusqlite::Result<RawRow> {
    let mut cols = Vec::with_capacity(NCOLS);
    for i in 0..NCOLS {
        cols.push(r.get::<_, Option<String>>(i)?);
    }
    Ok((cols,))
}

pub(in crate::store) fn decode((cols,): RawRow) -> Result<Approval, StoreError> {
    let mut c = cols.into_iter();
    let mut next = || c.next().flatten();
    let uuid = next().unwrap_or_default();
    let conversation_id = next().unwrap_or_default();
    let message_id = next().unwrap_or_default();
    let tool_name = next().unwrap_or_default();
    let server = next();
    let args = next().unwrap_or_else(|| "null".into());
    let description = next().unwrap_or_default();
    let status_s = next().unwrap_or_default();
    let reason = next();
    let decided_by = next();
    let decided_at = next();
    let remote_task_id = next();
    let remote_agent_name = next();
    let chain = next();
    let created_at = next().unwrap_or_default();
    let requested_by = next();
    let decided_via = next();
    let traceparent = next();
    let rule = next();
    let approvers = next();
    let quorum = next();
    let votes = next();
    let expires_in = next();
    let expires_at = next();
    let escalated = next();
    let edited_args = next();
    let edited_by = next();
    let remote_approval = next();
    let status = ApprovalStatus::parse(&status_s).ok_or_else(|| {
        StoreError::Corrupt(format!("approval {uuid}: unknown status {status_s:?}"))
    })?;
    let tool_args = serde_json::from_str(&args)
        .map_err(|e| StoreError::Corrupt(format!("approval {uuid}: tool_args: {e}")))?;
    let chain = chain
        .map(|s| serde_json::from_str::<Vec<String>>(&s))
        .transpose()
        .map_err(|e| StoreError::Corrupt(format!("approval {uuid}: chain: {e}")))?;
    let approvers = approvers
        .map(|s| serde_json::from_str::<Vec<String>>(&s))
        .transpose()
        .map_err(|e| StoreError::Corrupt(format!("approval {uuid}: approvers: {e}")))?
        .unwrap_or_default();
    let quorum = quorum.and_then(|q| q.parse::<u32>().ok()).unwrap_or(1);
    let edited_args = edited_args
        .map(|s| serde_json::from_str::<Value>(&s))
        .transpose()
        .map_err(|e| StoreError::Corrupt(format!("approval {uuid}: edited_args: {e}")))?;
    let votes = votes
        .map(|s| serde_json::from_str::<Vec<app::models::Vote>>(&s))
        .transpose()
        .map_err(|e| StoreError::Corrupt(format!("approval {uuid}: votes: {e}")))?
        .unwrap_or_default();
    Ok(Approval {
        approval: PendingApproval {
            uuid,
            conversation_id,
            tool_name,
            tool_args,
            description,
            server: server.clone(),
            remote_task_id,
            remote_agent_name,
            chain,
            created_at,
            requested_by,
            decided_by: decided_by.clone(),
            decided_via,
            decided_at: decided_at.clone(),
            rule,
            approvers,
            quorum,
            votes,
            expires_at,
            escalated: escalated.as_deref().is_some_and(|e| e != "0"),
            edited_args,
            edited_by,
        },
        message_id,
        server,
        status,
        reason,
        decided_by,
        decided_at,
        traceparent,
        expires_in: expires_in.and_then(|s| s.parse().ok()),
        remote_approval,
    })
}
