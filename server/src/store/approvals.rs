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
use crate::domain::ids::new_id;
use crate::domain::ids::now;
use app::models::{ApprovalStatus, PendingApproval};
use serde_json::Value;

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
    /// The signed receipt of the call it let through (RECEIPTS.md §1).
    pub(crate) receipt: Option<String>,
    /// The upstream agent's receipt that came with the A2A continuation
    /// approving it: this agent's receipt names it in `chain`.
    pub(crate) upstream_receipt: Option<String>,
}

/// Who decided, and how (AUTH.md §5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Decider {
    /// The principal's name (`anonymous` in auth mode none).
    pub(crate) name: String,
    /// How the decision arrived (stored as `decided_via`).
    pub(crate) via: crate::domain::channel::Channel,
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

pub(super) const COLUMNS: &str = "uuid, conversation_id, message_id, tool_name, server, tool_args, description, status, reason, \
                       decided_by, decided_at, remote_task_id, remote_agent_name, chain, created_at, \
                       requested_by, decided_via, traceparent, rule, approvers, CAST(quorum AS TEXT), votes, \
                       CAST(expires_in AS TEXT), expires_at, CAST(escalated AS TEXT), edited_args, edited_by, remote_approval_uuid, receipt, upstream_receipt";
/// How many columns [`COLUMNS`] names.
pub(super) const NCOLS: usize = 30;

/// The generated and encoded columns of a new approval, whichever backend
/// inserts it.
pub(super) struct Insert {
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
    pub(super) fn of(a: &NewApproval) -> Result<Insert, StoreError> {
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
    pub(super) fn into_approval(self, a: NewApproval, requested_by: Option<String>) -> Approval {
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
            receipt: None,
            upstream_receipt: None,
        }
    }
}

/// The timestamp `d` after `at` (both as [`now`] writes them).
pub(super) fn later(at: &str, d: std::time::Duration) -> String {
    shifted(at, d, 1)
}

/// `at` minus `d`, as stored.
pub(super) fn earlier(at: &str, d: std::time::Duration) -> String {
    shifted(at, d, -1)
}

pub(super) fn shifted(at: &str, d: std::time::Duration, sign: i32) -> String {
    let base = chrono::DateTime::parse_from_rfc3339(at)
        .map(|t| t.with_timezone(&chrono::Utc))
        .unwrap_or_else(|_| chrono::Utc::now());
    let d = chrono::Duration::from_std(d).unwrap_or(chrono::Duration::days(365));
    (base + d * sign).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// An approval row's columns, as text, in [`COLUMNS`] order.
pub(super) type RawRow = (Vec<Option<String>>,);

pub(super) fn decode((cols,): RawRow) -> Result<Approval, StoreError> {
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
    let receipt = next();
    let upstream_receipt = next();
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
        receipt,
        upstream_receipt,
    })
}
