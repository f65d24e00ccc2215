//! A tool call's life, write-ahead, each step one transaction: claim it
//! (an approved gate moves to `executing` and the call is marked started
//! before anything runs), record its result (the gate settles with it), or
//! pause it for an operator (a new approval, and the conversation waits).

use super::approvals::{Approval, NewApproval};
use super::audit::Event;
use super::error::StoreError;
use super::facade::Store;
use crate::domain::digest::digest;
use app::models::{ApprovalStatus, ConversationStatus, PendingApproval};

/// A finished call, as recorded with its result.
#[derive(Clone, Debug)]
pub(crate) struct FinishedCall {
    pub(crate) conversation_id: String,
    pub(crate) message_id: String,
    /// The approval the call ran under (`executing`), if any.
    pub(crate) approval_uuid: Option<String>,
    pub(crate) tool: String,
    pub(crate) server: Option<String>,
    pub(crate) arguments: serde_json::Value,
    pub(crate) text: String,
    pub(crate) is_error: bool,
    /// The digest of the receipt it ran under (RECEIPTS.md §1), if any.
    pub(crate) receipt_sha256: Option<String>,
}

/// A call a rule refused, as recorded with its result.
#[derive(Clone, Debug)]
pub(crate) struct DeniedCall {
    pub(crate) conversation_id: String,
    pub(crate) message_id: String,
    pub(crate) rule: String,
    pub(crate) tool: String,
    pub(crate) server: Option<String>,
    pub(crate) arguments: serde_json::Value,
    pub(crate) reason: String,
    /// What the model is told.
    pub(crate) text: String,
}

/// A delegation that paused at the sub-agent, settled in the transaction
/// that stores its proxy approval: the call's own approval (if any) is
/// done (`executing` → `executed`) and the call is no longer "started", so
/// the proxy approval now owns the call.
#[derive(Clone, Debug)]
pub(crate) struct HandedOver {
    pub(crate) message_id: String,
    pub(crate) approval_uuid: Option<String>,
}

/// Signs a call's receipt from its approval as claimed and, for a
/// grant's use, the granter's name; `None` when it cannot be signed.
pub(crate) type Mint = Box<dyn FnOnce(&Approval, Option<&str>) -> Option<String> + Send>;

/// A call claimed to run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Claimed {
    /// Its signed receipt, when receipts are on and it runs under a
    /// decision.
    pub(crate) receipt: Option<String>,
}

/// The receipt `mint` signs for approval `uuid`, stored on its row.
pub(super) fn signed(
    tx: &dyn super::tx::Tx,
    uuid: &str,
    mint: Mint,
) -> Result<Option<String>, StoreError> {
    let Some(a) = tx.approval(uuid)? else {
        return Ok(None);
    };
    let granter = match a
        .decided_by
        .as_deref()
        .and_then(|b| b.strip_prefix("grant:"))
    {
        Some(grant) => tx.grant(grant)?.map(|g| g.grant.created_by),
        None => None,
    };
    let receipt = mint(&a, granter.as_deref());
    if let Some(r) = &receipt {
        tx.set_receipt(uuid, r)?;
    }
    Ok(receipt)
}

impl Store {
    /// Claims a call before it runs: the approval `approval_uuid` moves to
    /// `executing` and the call is marked started, together. `None` when
    /// another writer moved it on (the call must not run); else the
    /// receipt `mint` signed from the approval as claimed (its final votes
    /// and edit; for a grant's use, the granter), stored with it.
    pub(crate) async fn claim_call(
        &self,
        conversation_id: &str,
        message_id: &str,
        approval_uuid: Option<String>,
        mint: Option<Mint>,
    ) -> Result<Option<Claimed>, StoreError> {
        let (id, mid) = (conversation_id.to_string(), message_id.to_string());
        self.write(move |tx| {
            tx.fence(&id)?;
            let mut receipt = None;
            if let Some(uuid) = &approval_uuid {
                if !tx.transition(
                    uuid,
                    &[ApprovalStatus::Approved],
                    ApprovalStatus::Executing,
                    None,
                    None,
                )? {
                    return Ok(None);
                }
                if let Some(mint) = mint {
                    receipt = signed(tx, uuid, mint)?;
                }
            }
            tx.mark_started(&mid)?;
            Ok(Some(Claimed { receipt }))
        })
        .await
    }

    /// Records a call's result; its gate becomes `executed` or `failed` and
    /// `tool.executed` is audited, in the same transaction.
    pub(crate) async fn finish_call(&self, call: FinishedCall) -> Result<(), StoreError> {
        self.write(move |tx| {
            tx.fence(&call.conversation_id)?;
            let ms = tx.finish_result(&call.message_id, &call.text, call.is_error)?;
            if let Some(uuid) = &call.approval_uuid {
                let to = if call.is_error {
                    ApprovalStatus::Failed
                } else {
                    ApprovalStatus::Executed
                };
                tx.transition(uuid, &[ApprovalStatus::Executing], to, None, None)?;
            }
            let mut details = serde_json::json!({
                "tool": call.tool,
                "server": call.server,
                "arguments_digest": digest(&call.arguments),
                "outcome": if call.is_error { "error" } else { "ok" },
                "duration_ms": ms,
            });
            if let Some(r) = &call.receipt_sha256 {
                details["receipt_sha256"] = r.as_str().into();
            }
            tx.audit(&Event {
                actor: "agent",
                event: "tool.executed",
                conversation_id: Some(&call.conversation_id),
                approval_uuid: call.approval_uuid.as_deref(),
                details,
            })
        })
        .await
    }

    /// Answers a call that will not run (declined, in doubt); false when it
    /// already had a result.
    pub(crate) async fn answer_call(
        &self,
        conversation_id: &str,
        message_id: &str,
        text: String,
        is_error: bool,
    ) -> Result<bool, StoreError> {
        let (id, mid) = (conversation_id.to_string(), message_id.to_string());
        self.write(move |tx| {
            tx.fence(&id)?;
            tx.set_result(&mid, &text, is_error)
        })
        .await
    }

    /// Answers a call a rule denies (POLICY.md §1): the model's result and
    /// `policy.denied` with the rule's name commit together; the tool never
    /// runs. False when the call already had a result.
    pub(crate) async fn deny_call(&self, denied: DeniedCall) -> Result<bool, StoreError> {
        self.write(move |tx| {
            tx.fence(&denied.conversation_id)?;
            if !tx.set_result(&denied.message_id, &denied.text, true)? {
                return Ok(false);
            }
            tx.audit(&Event {
                actor: "agent",
                event: "policy.denied",
                conversation_id: Some(&denied.conversation_id),
                approval_uuid: None,
                details: serde_json::json!({
                    "rule": denied.rule,
                    "tool": denied.tool,
                    "server": denied.server,
                    "arguments_digest": digest(&denied.arguments),
                    "reason": denied.reason,
                }),
            })?;
            Ok(true)
        })
        .await
    }

    /// Stores a pending approval (audited as `approval.requested`), with
    /// the delegation it takes over (`handed_over`) settled in the same
    /// transaction. With `pause`, the conversation
    /// waits for it and its turn stops there too.
    pub(crate) async fn request_approval(
        &self,
        new: NewApproval,
        pause: bool,
        handed_over: Option<HandedOver>,
    ) -> Result<Approval, StoreError> {
        let routes = self.notify_routes.clone();
        self.write(move |tx| {
            tx.fence(&new.conversation_id)?;
            if let Some(HandedOver {
                message_id,
                approval_uuid,
            }) = handed_over
            {
                if let Some(uuid) = &approval_uuid {
                    tx.transition(
                        uuid,
                        &[ApprovalStatus::Executing],
                        ApprovalStatus::Executed,
                        None,
                        None,
                    )?;
                }
                tx.clear_started(&message_id)?;
            }
            let a = tx.insert_approval(new)?;
            tx.audit(&Event {
                actor: a
                    .approval
                    .requested_by
                    .as_deref()
                    .unwrap_or(crate::domain::principal::ANONYMOUS),
                event: "approval.requested",
                conversation_id: Some(&a.approval.conversation_id),
                approval_uuid: Some(&a.approval.uuid),
                details: serde_json::json!({
                    "tool": a.approval.tool_name,
                    "server": a.approval.server,
                    "arguments_digest": digest(&a.approval.tool_args),
                    "remote_agent": a.approval.remote_agent_name,
                    "remote_task_id": a.approval.remote_task_id,
                    "rule": a.approval.rule,
                }),
            })?;
            super::outbox::announce(tx, &routes, "approval.requested", &a, serde_json::json!({}))?;
            if pause {
                let id = &a.approval.conversation_id;
                tx.set_status(id, ConversationStatus::WaitingApproval)?;
                tx.set_turn_running(id, false)?;
            }
            Ok(a)
        })
        .await
    }

    /// One approval by its uuid.
    pub(crate) async fn approval(&self, uuid: &str) -> Result<Option<Approval>, StoreError> {
        let uuid = uuid.to_string();
        self.read_one(move |tx| tx.approval(&uuid)).await
    }

    /// The newest approval of a call.
    pub(crate) async fn approval_for_message(
        &self,
        message_id: &str,
    ) -> Result<Option<Approval>, StoreError> {
        let mid = message_id.to_string();
        self.read_one(move |tx| tx.approval_for_message(&mid)).await
    }

    /// The first of these calls whose approval was rejected or cancelled.
    pub(crate) async fn first_declined(
        &self,
        message_ids: Vec<String>,
    ) -> Result<Option<Approval>, StoreError> {
        self.read(move |tx| {
            for id in &message_ids {
                if let Some(a) = tx.approval_for_message(id)?
                    && matches!(
                        a.status,
                        ApprovalStatus::Rejected | ApprovalStatus::Cancelled
                    )
                {
                    return Ok(Some(a));
                }
            }
            Ok(None)
        })
        .await
    }

    /// The first of these approvals still pending.
    pub(crate) async fn first_pending(
        &self,
        uuids: Vec<String>,
    ) -> Result<Option<PendingApproval>, StoreError> {
        self.read(move |tx| {
            for u in &uuids {
                if let Some(a) = tx.approval(u)?
                    && a.status == ApprovalStatus::Pending
                {
                    return Ok(Some(a.approval));
                }
            }
            Ok(None)
        })
        .await
    }
}
