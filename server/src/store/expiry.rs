//! Approvals that nobody decided in time (POLICY.md §2), each step one
//! transaction with its audit row: the first expiry of an escalating
//! approval widens who may decide and restarts its clock once; otherwise
//! it becomes `expired` (its own state, never a rejection), the call is
//! answered so the model hears it, and the conversation goes on.
//!
//! The deadline is checked again under the approval's row lock, so an
//! expiry racing a decision on another replica loses cleanly to it (and
//! the reverse: `decide` refuses an approval past its deadline).

use super::approvals::{Approval, later};
use super::audit::Event;
use super::error::StoreError;
use super::facade::Store;
use crate::domain::ids::now;
use app::models::{ApprovalStatus, ConversationStatus};

/// What an expiry did.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ExpiryOutcome {
    /// Decided, escalated or given a later deadline meanwhile: nothing.
    NotDue,
    /// The first expiry of an escalating approval: new approvers and a new
    /// deadline.
    Escalated(Box<Approval>),
    /// `expired`; `why` is what the model is told ("the approval expired
    /// after 2s").
    Expired { why: String },
}

impl Store {
    /// Pending approvals whose deadline has passed, oldest first. One
    /// statement (every replica polls it twice a second: on PostgreSQL no
    /// `BEGIN`/`COMMIT` around it).
    pub(crate) async fn due_approvals(&self, limit: u32) -> Result<Vec<Approval>, StoreError> {
        self.read_one(move |tx| tx.due_approvals(&now(), limit))
            .await
    }

    /// Expires `uuid` if it is still pending past its deadline. With
    /// `escalate_to` (approvers to add) and not escalated yet, escalates
    /// instead. `answer(why)` is the call's result when it expires.
    pub(crate) async fn expire(
        &self,
        uuid: &str,
        escalate_to: Option<Vec<String>>,
        answer: impl FnOnce(&str) -> String + Send + 'static,
    ) -> Result<ExpiryOutcome, StoreError> {
        let uuid = uuid.to_string();
        let routes = self.notify_routes.clone();
        self.write(move |tx| {
            let Some(a) = tx.lock_approval(&uuid)? else {
                return Ok(ExpiryOutcome::NotDue);
            };
            let now = now();
            let due = a
                .approval
                .expires_at
                .as_deref()
                .is_some_and(|at| at <= now.as_str());
            if a.status != ApprovalStatus::Pending || !due {
                return Ok(ExpiryOutcome::NotDue);
            }
            let lifetime = std::time::Duration::from_secs(a.expires_in.unwrap_or(0));
            if let Some(extra) = escalate_to
                && !a.approval.escalated
            {
                let mut approvers = if a.approval.approvers.is_empty() {
                    vec!["role:approver".to_string()]
                } else {
                    a.approval.approvers.clone()
                };
                for e in extra {
                    if !approvers.contains(&e) {
                        approvers.push(e);
                    }
                }
                let deadline = later(&now, lifetime);
                let json = serde_json::to_string(&approvers)
                    .map_err(|e| StoreError::Corrupt(e.to_string()))?;
                if !tx.escalate(&uuid, &json, &deadline)? {
                    return Ok(ExpiryOutcome::NotDue);
                }
                tx.audit(&Event {
                    actor: "agent",
                    event: "approval.escalated",
                    conversation_id: Some(&a.approval.conversation_id),
                    approval_uuid: Some(&uuid),
                    details: serde_json::json!({
                        "tool": a.approval.tool_name,
                        "rule": a.approval.rule,
                        "approvers": approvers,
                        "expires_at": deadline,
                    }),
                })?;
                let mut a = a;
                a.approval.approvers = approvers;
                a.approval.expires_at = Some(deadline);
                a.approval.escalated = true;
                super::outbox::announce(
                    tx,
                    &routes,
                    "approval.escalated",
                    &a,
                    serde_json::json!({}),
                )?;
                return Ok(ExpiryOutcome::Escalated(Box::new(a)));
            }
            let rounds = if a.approval.escalated { 2 } else { 1 };
            let why = format!(
                "the approval expired after {}",
                crate::domain::duration::show(lifetime * rounds)
            );
            // A local call hears it now; a proxy approval's remote task is
            // told by the turn (a rejection saying it expired).
            let answer = a
                .approval
                .remote_task_id
                .is_none()
                .then(|| (answer(&why), true));
            let extra = serde_json::json!({"escalated": a.approval.escalated});
            if !mark_expired(tx, &routes, &a, &why, answer, extra)? {
                return Ok(ExpiryOutcome::NotDue);
            }
            Ok(ExpiryOutcome::Expired { why })
        })
        .await
    }

    /// Ends a proxy approval whose remote task went on without it (the
    /// sub-agent's own approval expired, or was decided there): `expired`
    /// with `why`, the call answered with what the remote task ended with,
    /// and the turn goes on. `NotDue` when it was decided here meanwhile.
    pub(crate) async fn end_proxy(
        &self,
        uuid: &str,
        why: String,
        result: String,
        is_error: bool,
    ) -> Result<ExpiryOutcome, StoreError> {
        let uuid = uuid.to_string();
        let routes = self.notify_routes.clone();
        self.write(move |tx| {
            let Some(a) = tx.lock_approval(&uuid)? else {
                return Ok(ExpiryOutcome::NotDue);
            };
            if a.status != ApprovalStatus::Pending || a.approval.remote_task_id.is_none() {
                return Ok(ExpiryOutcome::NotDue);
            }
            let extra = serde_json::json!({
                "remote_agent": a.approval.remote_agent_name,
                "remote_task_id": a.approval.remote_task_id,
            });
            if !mark_expired(tx, &routes, &a, &why, Some((result, is_error)), extra)? {
                return Ok(ExpiryOutcome::NotDue);
            }
            Ok(ExpiryOutcome::Expired { why })
        })
        .await
    }
}

/// Moves the locked, pending approval `a` to `expired` with `why`,
/// audited as `approval.expired` (with `extra` details), answers its call
/// with `answer` when given, and lets the conversation's turn go on.
/// False when it had left `pending`.
fn mark_expired(
    tx: &dyn super::tx::Tx,
    routes: &super::outbox::Routes,
    a: &Approval,
    why: &str,
    answer: Option<(String, bool)>,
    extra: serde_json::Value,
) -> Result<bool, StoreError> {
    let uuid = &a.approval.uuid;
    if !tx.transition(
        uuid,
        &[ApprovalStatus::Pending],
        ApprovalStatus::Expired,
        None,
        Some(why),
    )? {
        return Ok(false);
    }
    let mut details = serde_json::json!({
        "tool": a.approval.tool_name,
        "rule": a.approval.rule,
        "reason": why,
    });
    if let (Some(d), serde_json::Value::Object(more)) = (details.as_object_mut(), extra) {
        d.extend(more);
    }
    tx.audit(&Event {
        actor: "agent",
        event: "approval.expired",
        conversation_id: Some(&a.approval.conversation_id),
        approval_uuid: Some(uuid),
        details,
    })?;
    let mut expired = a.clone();
    expired.status = ApprovalStatus::Expired;
    super::outbox::announce(
        tx,
        routes,
        "approval.expired",
        &expired,
        serde_json::json!({"reason": why}),
    )?;
    if let Some((text, is_error)) = answer {
        tx.set_result(&a.message_id, &text, is_error)?;
    }
    let id = &a.approval.conversation_id;
    tx.set_status(id, ConversationStatus::Active)?;
    tx.set_turn_running(id, true)?;
    Ok(true)
}
