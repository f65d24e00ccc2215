//! A person's word on a call left `in_doubt` (RECEIPTS.md §3): it ran
//! (`executed`), it did not (`failed`), or, on a server that honours
//! idempotency keys, send it again with its key (`executing`, then the
//! result as any call's). Each one transaction with its audit row.

use super::approvals::{Approval, Decider};
use super::audit::Event;
use super::calls::{Claimed, Mint};
use super::error::StoreError;
use super::facade::Store;
use app::models::ApprovalStatus;

/// What a person said happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Executed,
    Failed,
    Retry,
}

impl Outcome {
    /// The outcome a person named (`executed`, `failed`, `retry`).
    pub(crate) fn parse(s: &str) -> Option<Outcome> {
        [Outcome::Executed, Outcome::Failed, Outcome::Retry]
            .into_iter()
            .find(|o| o.as_str() == s)
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Outcome::Executed => "executed",
            Outcome::Failed => "failed",
            Outcome::Retry => "retry",
        }
    }
}

/// The audit row of a resolution.
fn audited(
    tx: &dyn super::tx::Tx,
    a: &Approval,
    by: &Decider,
    outcome: Outcome,
    note: Option<&str>,
) -> Result<(), StoreError> {
    tx.audit(&Event {
        actor: &by.name,
        event: "approval.resolved",
        conversation_id: Some(&a.approval.conversation_id),
        approval_uuid: Some(&a.approval.uuid),
        details: serde_json::json!({
            "outcome": outcome.as_str(),
            "note": note,
            "via": by.via.as_str(),
            "tool": a.approval.tool_name,
        }),
    })
}

impl Store {
    /// `in_doubt` → `executed` or `failed` as `by` says; the call's result
    /// says who checked and what they found. `None` when it is not in
    /// doubt (any more).
    pub(crate) async fn resolve_in_doubt(
        &self,
        uuid: &str,
        ran: bool,
        note: Option<String>,
        by: Decider,
    ) -> Result<Option<Approval>, StoreError> {
        let uuid = uuid.to_string();
        self.write(move |tx| {
            let Some(a) = tx.approval(&uuid)? else {
                return Ok(None);
            };
            let to = if ran {
                ApprovalStatus::Executed
            } else {
                ApprovalStatus::Failed
            };
            if !tx.transition(&uuid, &[ApprovalStatus::InDoubt], to, None, None)? {
                return Ok(None);
            }
            let outcome = if ran {
                Outcome::Executed
            } else {
                Outcome::Failed
            };
            audited(tx, &a, &by, outcome, note.as_deref())?;
            let found = if ran { "it ran" } else { "it did not run" };
            let text = match &note {
                Some(n) => format!(
                    "{} {} checked: {found} ({n}).",
                    super::recovery::IN_DOUBT_TEXT,
                    by.name
                ),
                None => format!(
                    "{} {} checked: {found}.",
                    super::recovery::IN_DOUBT_TEXT,
                    by.name
                ),
            };
            tx.set_result(&a.message_id, &text, !ran)?;
            tx.approval(&uuid)
        })
        .await
    }

    /// `in_doubt` → `executing` for a retry `by` asked, the call marked
    /// started and its receipt minted as a claim's; `None` when it is not
    /// in doubt (any more).
    pub(crate) async fn claim_resolution_retry(
        &self,
        uuid: &str,
        note: Option<String>,
        by: Decider,
        mint: Option<Mint>,
    ) -> Result<Option<(Approval, Claimed)>, StoreError> {
        let uuid = uuid.to_string();
        self.write(move |tx| {
            let Some(a) = tx.approval(&uuid)? else {
                return Ok(None);
            };
            if !tx.transition(
                &uuid,
                &[ApprovalStatus::InDoubt],
                ApprovalStatus::Executing,
                None,
                None,
            )? {
                return Ok(None);
            }
            audited(tx, &a, &by, Outcome::Retry, note.as_deref())?;
            let receipt = match mint {
                Some(m) => super::calls::signed(tx, &uuid, m)?,
                None => None,
            };
            tx.clear_started(&a.message_id)?;
            tx.mark_started(&a.message_id)?;
            Ok(Some((a, Claimed { receipt })))
        })
        .await
    }
}
