//! Approvals on PostgreSQL: the statements of [`ApprovalTx`] on a
//! [`PgTx`], decoded by the decoder SQLite's rows use too.

use super::tx::{Params, PgTx};
use crate::domain::ids::now;
use crate::store::approvals::{self, Approval, Decider, NewApproval};
use crate::store::error::StoreError;
use crate::store::tx::ApprovalTx;
use app::models::{ApprovalStatus, PendingApproval};
use postgres::Row;
use std::collections::HashMap;

impl ApprovalTx for PgTx<'_> {
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
    fn set_edited(&self, uuid: &str, args: &str, by: &str) -> Result<(), StoreError> {
        self.exec(
            "UPDATE approvals SET edited_args = $2, edited_by = $3 WHERE uuid = $1",
            &[&uuid, &args, &by],
        )?;
        Ok(())
    }
    fn set_receipt(&self, uuid: &str, receipt: &str) -> Result<(), StoreError> {
        self.exec(
            "UPDATE approvals SET receipt = $2 WHERE uuid = $1",
            &[&uuid, &receipt],
        )?;
        Ok(())
    }
    fn set_upstream_receipt(&self, uuid: &str, receipt: &str) -> Result<(), StoreError> {
        self.exec(
            "UPDATE approvals SET upstream_receipt = $2 WHERE uuid = $1",
            &[&uuid, &receipt],
        )?;
        Ok(())
    }
    fn retry_once(&self, uuid: &str) -> Result<bool, StoreError> {
        Ok(self.exec(
            "UPDATE approvals SET status = 'approved', retried = 1, updated_at = $2 \
             WHERE uuid = $1 AND status = 'executing' AND retried = 0",
            &[&uuid, &now()],
        )? == 1)
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
}

impl PgTx<'_> {
    pub(super) fn pending_of(
        &self,
        ids: &[String],
    ) -> Result<HashMap<String, PendingApproval>, StoreError> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        pending_rows(self.query(&pending_sql(), &[&ids])?)
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

/// The pending approvals of the conversations `$1`.
pub(super) fn pending_sql() -> String {
    format!(
        "SELECT {} FROM approvals WHERE status = 'pending' AND conversation_id = ANY($1) ORDER BY created_at",
        approvals::COLUMNS
    )
}

/// The oldest pending approval of each conversation.
pub(super) fn pending_rows(rows: Vec<Row>) -> Result<HashMap<String, PendingApproval>, StoreError> {
    let mut out = HashMap::new();
    for row in rows {
        let a = approvals::decode(approval_cols(&row))?;
        out.entry(a.approval.conversation_id.clone())
            .or_insert(a.approval);
    }
    Ok(out)
}

/// An approval row's columns, as the shared decoder reads them.
fn approval_cols(r: &Row) -> approvals::RawRow {
    approval_cols_at(r, 0)
}

/// An approval's columns from column `at` on.
pub(super) fn approval_cols_at(r: &Row, at: usize) -> approvals::RawRow {
    ((at..at + approvals::NCOLS).map(|i| r.get(i)).collect(),)
}
