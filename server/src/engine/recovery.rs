//! What a restart does with work it finds half-done.
//!
//! Run once at startup, before the server accepts requests, in one
//! transaction:
//! - an approval left `executing` may or may not have taken effect: it
//!   becomes `in_doubt`, its call gets a result saying so, and it is **never
//!   re-run**; the operator sees it;
//! - an approval left `approved` (decided, not yet started) is safe to run:
//!   its conversation is resumed in the background; so is a rejected proxy
//!   approval that was not yet forwarded to its remote task;
//! - a turn that was running otherwise stops: calls it had not answered get
//!   an "interrupted" result (one that had started may have taken effect and
//!   is not re-run), and a note tells the user to send the message again;
//!   a pipeline run in it is marked `interrupted`.

use super::Engine;
use crate::store::approvals;
use crate::store::{NewMessage, conversations, messages};
use app::models::{ApprovalStatus, ConversationStatus, Role};
use app::pipeline::RunStatus;
use std::collections::BTreeSet;

/// The result of a call whose outcome is unknown.
pub const IN_DOUBT_TEXT: &str = "Outcome unknown: the agent stopped while this action was running, so it may or may not \
     have taken effect. It was not run again; check before retrying.";
/// The result of a call that had not started when the agent stopped.
pub const INTERRUPTED_TEXT: &str = "Not run: the agent restarted before this call started.";
/// The note added to an interrupted turn.
pub const TURN_INTERRUPTED_NOTE: &str =
    "This turn was interrupted by a restart of the agent. Send your message again to go on.";

impl Engine {
    /// Settles half-done work; returns the conversations to resume.
    pub async fn recover(&self) -> Result<Vec<String>, crate::store::StoreError> {
        let (resume, in_doubt) = self
            .inner
            .store
            .write(|tx| {
                let mut in_doubt = 0;
                for a in approvals::with_status(tx, ApprovalStatus::Executing)? {
                    in_doubt += 1;
                    approvals::transition(tx, &a.approval.uuid, &[ApprovalStatus::Executing], ApprovalStatus::InDoubt, None, None)?;
                    crate::store::audit::append(
                        tx,
                        &crate::store::audit::Event {
                            actor: "agent",
                            event: "approval.in_doubt",
                            conversation_id: Some(&a.approval.conversation_id),
                            approval_uuid: Some(&a.approval.uuid),
                            details: serde_json::json!({
                                "tool": a.approval.tool_name,
                                "reason": "the agent stopped while the action was running; it is not run again",
                            }),
                        },
                    )?;
                    messages::set_result(tx, &a.message_id, IN_DOUBT_TEXT, true)?;
                    conversations::set_status(tx, &a.approval.conversation_id, ConversationStatus::Active)?;
                    tracing::warn!(approval = %a.approval.uuid, tool = %a.approval.tool_name, "approval in doubt after a restart; not re-run");
                }
                let mut resume: BTreeSet<String> = approvals::with_status(tx, ApprovalStatus::Approved)?
                    .into_iter()
                    .map(|a| a.approval.conversation_id)
                    .collect();
                for id in conversations::running(tx)? {
                    // A rejected proxy approval not yet forwarded: the remote
                    // task still waits; resuming sends it the rejection.
                    let mut forward = false;
                    for m in messages::stored(tx, &id)? {
                        if m.is_unanswered_call()
                            && approvals::for_message(tx, &m.message.id)?.is_some_and(|a| {
                                a.status == ApprovalStatus::Rejected && a.approval.remote_task_id.is_some()
                            })
                        {
                            forward = true;
                        }
                    }
                    if forward {
                        resume.insert(id.clone());
                    }
                    if resume.contains(&id) {
                        continue;
                    }
                    let mut touched = false;
                    for m in messages::stored(tx, &id)? {
                        if !m.is_unanswered_call() {
                            continue;
                        }
                        if approvals::for_message(tx, &m.message.id)?.is_some_and(|a| a.status == ApprovalStatus::Pending) {
                            continue;
                        }
                        let text = if m.started_at.is_some() { IN_DOUBT_TEXT } else { INTERRUPTED_TEXT };
                        messages::set_result(tx, &m.message.id, text, true)?;
                        touched = true;
                    }
                    if let Some(mut ps) = conversations::pipeline_state(tx, &id)?
                        && ps.status == RunStatus::Running
                    {
                        ps.status = RunStatus::Interrupted;
                        for n in ps.nodes.iter_mut().filter(|n| n.status == RunStatus::Running) {
                            n.status = RunStatus::Interrupted;
                        }
                        ps.updated_at = crate::store::now();
                        conversations::set_pipeline_state(tx, &id, &ps)?;
                    }
                    messages::append(tx, &id, NewMessage::text(Role::System, TURN_INTERRUPTED_NOTE))?;
                    conversations::set_turn_running(tx, &id, false)?;
                    let status = if approvals::pending_for(tx, &id)?.is_some() {
                        ConversationStatus::WaitingApproval
                    } else {
                        ConversationStatus::Active
                    };
                    conversations::set_status(tx, &id, status)?;
                    tracing::warn!(conversation = %id, calls_settled = touched, "turn interrupted by a restart");
                }
                Ok((resume.into_iter().collect::<Vec<_>>(), in_doubt))
            })
            .await?;
        crate::metrics::get().approvals_ended("in_doubt", in_doubt);
        Ok(resume)
    }

    /// Resumes the given conversations in the background (after `recover`).
    pub fn resume_in_background(&self, ids: Vec<String>) {
        for id in ids {
            let engine = self.clone();
            let span = tracing::info_span!("recovery", sid = "recovery");
            tokio::spawn(tracing::Instrument::instrument(
                async move {
                    let Some(guard) = engine.inner.locks.try_lock(&id) else {
                        return;
                    };
                    // The conversation's own session id, so the resumed
                    // work greps out of every agent's log with the same sid.
                    let session_id = match engine.inner.store.get_conversation(id.clone()).await {
                        Ok(Some(c)) => c.session_id,
                        _ => "recovery".into(),
                    };
                    let ctx = super::Ctx {
                        bearer: None,
                        session_id,
                        principal: crate::auth::Principal {
                            name: "agent".into(),
                            ..crate::auth::Principal::anonymous()
                        },
                        ..Default::default()
                    };
                    match engine.run_turn(id.clone(), ctx, guard, false, None).await {
                        Ok(_) => {
                            tracing::info!(conversation = %id, "resumed an approved action after a restart")
                        }
                        Err(e) => {
                            tracing::warn!(conversation = %id, error = %e, "resuming after a restart failed")
                        }
                    }
                },
                span,
            ));
        }
    }
}
