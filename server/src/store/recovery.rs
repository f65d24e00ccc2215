//! Today's crash rules, applied in one transaction to work a stopped
//! process left half-done (at startup; with several replicas, by the
//! sweeper to turns whose lease expired):
//! - an approval left `executing` may or may not have taken effect: it
//!   becomes `in_doubt`, its call gets a result saying so, and it is **never
//!   re-run** by itself; except once, on a server that honours idempotency
//!   keys (RECEIPTS.md §3): the call goes back to `approved` and its
//!   conversation resumes, so it is sent again with the same key and the
//!   server answers with its first outcome if it had run;
//! - an approval left `approved` (decided, not yet started) is safe to run:
//!   its conversation is resumed; so is a rejected proxy approval that was
//!   not yet forwarded to its remote task;
//! - a turn that was running otherwise stops: calls it had not answered get
//!   an "interrupted" result (one that had started may have taken effect and
//!   is not re-run), a note tells the user to send the message again, and a
//!   pipeline run in it is marked `interrupted`.

use super::error::StoreError;
use super::facade::Store;
use super::messages::NewMessage;
use super::tx::Tx;
use app::models::{ApprovalStatus, ConversationStatus, Role};
use app::pipeline::RunStatus;
use std::collections::BTreeSet;

/// The result of a call whose outcome is unknown.
pub(crate) const IN_DOUBT_TEXT: &str = "Outcome unknown: the agent stopped while this action was running, so it may or may not \
     have taken effect. It was not run again; check before retrying.";
/// The result of a call that had not started when the agent stopped.
pub(crate) const INTERRUPTED_TEXT: &str = "Not run: the agent restarted before this call started.";
/// The note added to an interrupted turn.
pub(crate) const TURN_INTERRUPTED_NOTE: &str =
    "This turn was interrupted by a restart of the agent. Send your message again to go on.";

/// What recovery did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Recovered {
    /// Conversations to resume (an approved call to run, a rejection to
    /// forward), oldest first.
    pub(crate) resume: Vec<String>,
    /// Approvals that became `in_doubt`.
    pub(crate) in_doubt: u64,
}

impl Store {
    /// Applies the crash rules to everything in the store (one process:
    /// nothing else can be running).
    /// `keyed`: the servers a cut call is retried on once, with its key.
    pub(crate) async fn recover(&self, keyed: Vec<String>) -> Result<Recovered, StoreError> {
        let routes = self.notify_routes.clone();
        self.write(move |tx| {
            let in_doubt = settle_executing(
                tx,
                &routes,
                tx.approvals_with_status(ApprovalStatus::Executing)?,
                &keyed,
            )?;
            let mut resume: BTreeSet<String> = tx
                .approvals_with_status(ApprovalStatus::Approved)?
                .into_iter()
                .map(|a| a.approval.conversation_id)
                .collect();
            for id in tx.running()? {
                if forwards_a_rejection(tx, &id)? || retries_a_round(tx, &id)? {
                    resume.insert(id.clone());
                }
                if !resume.contains(&id) {
                    interrupt(tx, &id)?;
                }
            }
            Ok(Recovered {
                resume: resume.into_iter().collect(),
                in_doubt,
            })
        })
        .await
    }
}

/// The crash rules for one conversation whose turn's owner stopped (the
/// sweeper, holding the lease it took over): whether to resume it, and how
/// many approvals became `in_doubt`.
pub(super) fn recover_one(
    tx: &dyn Tx,
    routes: &super::outbox::Routes,
    id: &str,
    keyed: &[String],
) -> Result<(bool, u64), StoreError> {
    let in_doubt = settle_executing(
        tx,
        routes,
        tx.approvals_of(id, ApprovalStatus::Executing)?,
        keyed,
    )?;
    // The running turns (an index of the few): cheaper than reading the
    // conversation with its messages.
    let running = tx.running()?.iter().any(|r| r == id);
    let resume = !tx.approvals_of(id, ApprovalStatus::Approved)?.is_empty()
        || (running && (forwards_a_rejection(tx, id)? || retries_a_round(tx, id)?));
    if running && !resume {
        interrupt(tx, id)?;
    }
    Ok((resume, in_doubt))
}

/// `executing` → `in_doubt`, audited, its call answered; never re-run.
/// On a server in `keyed`, the first time: back to `approved`, to be sent
/// again with its key (the caller resumes what is approved).
fn settle_executing(
    tx: &dyn Tx,
    routes: &super::outbox::Routes,
    executing: Vec<super::approvals::Approval>,
    keyed: &[String],
) -> Result<u64, StoreError> {
    let mut n = 0;
    for a in executing {
        if a.server.as_ref().is_some_and(|s| keyed.contains(s)) && retried(tx, &a)? {
            continue;
        }
        if !tx.transition(
            &a.approval.uuid,
            &[ApprovalStatus::Executing],
            ApprovalStatus::InDoubt,
            None,
            None,
        )? {
            continue;
        }
        n += 1;
        tx.audit(&super::audit::Event {
            actor: "agent",
            event: "approval.in_doubt",
            conversation_id: Some(&a.approval.conversation_id),
            approval_uuid: Some(&a.approval.uuid),
            details: serde_json::json!({
                "tool": a.approval.tool_name,
                "reason": "the agent stopped while the action was running; it is not run again",
            }),
        })?;
        let mut doubt = a.clone();
        doubt.status = ApprovalStatus::InDoubt;
        super::outbox::announce(
            tx,
            routes,
            "approval.in_doubt",
            &doubt,
            serde_json::json!({"reason": IN_DOUBT_TEXT}),
        )?;
        tx.set_result(&a.message_id, IN_DOUBT_TEXT, true)?;
        tx.set_status(&a.approval.conversation_id, ConversationStatus::Active)?;
        tracing::warn!(approval = %a.approval.uuid, tool = %a.approval.tool_name, "approval in doubt after a restart; not re-run");
    }
    Ok(n)
}

/// Sends a cut call back to `approved` for its one retry, audited; false
/// when it had its retry already.
fn retried(tx: &dyn Tx, a: &super::approvals::Approval) -> Result<bool, StoreError> {
    if !tx.retry_once(&a.approval.uuid)? {
        return Ok(false);
    }
    tx.clear_started(&a.message_id)?;
    tx.audit(&super::audit::Event {
        actor: "agent",
        event: "approval.retried",
        conversation_id: Some(&a.approval.conversation_id),
        approval_uuid: Some(&a.approval.uuid),
        details: serde_json::json!({
            "tool": a.approval.tool_name,
            "server": a.server,
            "reason": "the agent stopped while the action was running; the server honours idempotency keys, so it is sent once more with the same key",
        }),
    })?;
    tracing::warn!(approval = %a.approval.uuid, tool = %a.approval.tool_name, "a call cut by a restart is retried once with its idempotency key");
    Ok(true)
}

/// A rejected proxy approval not yet forwarded: the remote task still
/// waits, and resuming sends it the rejection.
fn forwards_a_rejection(tx: &dyn Tx, id: &str) -> Result<bool, StoreError> {
    for m in tx.messages(id)? {
        if m.is_unanswered_call()
            && tx.approval_for_message(&m.message.id)?.is_some_and(|a| {
                a.status == ApprovalStatus::Rejected && a.approval.remote_task_id.is_some()
            })
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A call whose question round (MCP 2026-07-28) was answered and not yet
/// retried, or whose sub-agent's question was answered and not yet sent
/// on: nothing was in flight (the round cleared the call's start), so
/// resuming sends the retry (or the answer), once (QUESTIONS.md §3-§4).
fn retries_a_round(tx: &dyn Tx, id: &str) -> Result<bool, StoreError> {
    for m in tx.messages(id)? {
        if !m.is_unanswered_call() || m.started_at.is_some() {
            continue;
        }
        let rows = tx.questions_of_call(&m.message.id)?;
        if let Some(last) = rows.last()
            && (last.era == "round" || (last.era == "proxy" && last.state.is_none()))
            && rows
                .iter()
                .filter(|r| r.round == last.round)
                .all(|r| r.status != "pending")
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Stops a turn that was running: unanswered calls (not waiting for an
/// operator) are answered, the pipeline run is `interrupted`, a note says
/// so, and the conversation waits for its operator or a new message.
fn interrupt(tx: &dyn Tx, id: &str) -> Result<(), StoreError> {
    // A question on the session that is gone can no longer be answered.
    // (A proxy question is not: it waits on the sub-agent, not on us.)
    super::questions::cancel_pending(tx, id, super::questions::Cancel::Restart)?;
    let mut touched = false;
    for m in tx.messages(id)? {
        if !m.is_unanswered_call() {
            continue;
        }
        if tx
            .approval_for_message(&m.message.id)?
            .is_some_and(|a| a.status == ApprovalStatus::Pending)
        {
            continue;
        }
        // Waiting for the answers of its question round: nothing in flight.
        if m.started_at.is_none()
            && tx
                .questions_of_call(&m.message.id)?
                .last()
                .is_some_and(|q| (q.era == "round" || q.era == "proxy") && q.status == "pending")
        {
            continue;
        }
        let text = if m.started_at.is_some() {
            IN_DOUBT_TEXT
        } else {
            INTERRUPTED_TEXT
        };
        tx.set_result(&m.message.id, text, true)?;
        touched = true;
    }
    if let Some(mut ps) = tx.pipeline_state(id)?
        && ps.status == RunStatus::Running
    {
        ps.status = RunStatus::Interrupted;
        for n in ps
            .nodes
            .iter_mut()
            .filter(|n| n.status == RunStatus::Running)
        {
            n.status = RunStatus::Interrupted;
        }
        ps.updated_at = crate::domain::ids::now();
        tx.set_pipeline_state(id, &ps)?;
    }
    tx.append(id, NewMessage::text(Role::System, TURN_INTERRUPTED_NOTE))?;
    tx.set_turn_running(id, false)?;
    let status = if tx.pending_for(id)?.is_some() {
        ConversationStatus::WaitingApproval
    } else if !tx.pending_questions_of(id)?.is_empty() {
        ConversationStatus::WaitingInput
    } else {
        ConversationStatus::Active
    };
    tx.set_status(id, status)?;
    tracing::warn!(conversation = %id, calls_settled = touched, "turn interrupted by a restart");
    Ok(())
}
