//! Starting turns and deciding approvals: the engine's public entry points.

use super::turn::declined_text;
use super::{Ctx, Engine, EngineError, Reply};
use crate::store::approvals::{self, Decider};
use crate::store::audit::{self, Event};
use crate::store::{NewMessage, Store, conversations, messages};
use app::models::{ApprovalStatus, Conversation, ConversationStatus, EventKind, Role};
use app::pipeline::RunStatus;

/// An operator's decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub approve: bool,
    /// Why (for a rejection, told to the model).
    pub reason: Option<String>,
}

/// Reads a conversation or says it does not exist.
pub(crate) async fn load(store: &Store, id: &str) -> Result<Conversation, EngineError> {
    let id = id.to_string();
    store
        .read({
            let id = id.clone();
            move |tx| conversations::get(tx, &id)
        })
        .await?
        .ok_or_else(|| EngineError::NotFound(format!("conversation {id:?} not found")))
}

impl Engine {
    /// Creates a conversation; with a first message, runs its first turn.
    pub async fn start_conversation(
        &self,
        message: Option<String>,
        ctx: Ctx,
    ) -> Result<(Conversation, Option<Reply>), EngineError> {
        let store = &self.inner.store;
        let Some(text) = message else {
            let (sid, who) = (ctx.session_id.clone(), ctx.principal.name.clone());
            let c = store
                .write(move |tx| {
                    let c = conversations::insert(tx, &sid)?;
                    conversations::set_requester(tx, &c.id, &who, &sid)?;
                    audit::conversation_created(tx, &who, &c.id, &sid)?;
                    Ok(c)
                })
                .await?;
            self.emit_status(&c.id, Some(c.status), false);
            return Ok((c, None));
        };
        check_message(&text)?;
        self.llm()?;
        // One transaction: the conversation, its first message, the running flag.
        let (sid, who) = (ctx.session_id.clone(), ctx.principal.name.clone());
        let c = store
            .write(move |tx| {
                let c = conversations::insert(tx, &sid)?;
                conversations::set_requester(tx, &c.id, &who, &sid)?;
                audit::conversation_created(tx, &who, &c.id, &sid)?;
                let m = messages::append(tx, &c.id, NewMessage::text(Role::User, text))?;
                audit::message_sent(tx, &who, &c.id, m.as_ref().map(|m| m.id.as_str()))?;
                conversations::set_turn_running(tx, &c.id, true)?;
                Ok(c)
            })
            .await?;
        self.inner.events.emit(EventKind::MessageAdded, &c.id, |e| {
            e.status = Some(ConversationStatus::Active);
            e.running = Some(true);
        });
        let guard = self
            .inner
            .locks
            .try_lock(&c.id)
            .ok_or_else(|| EngineError::Busy(c.id.clone()))?;
        let reply = self.run_turn(c.id.clone(), ctx, guard, true, None).await?;
        Ok((reply.conversation.clone(), Some(reply)))
    }

    /// Adds a user message to a conversation and runs the turn.
    pub async fn send_message(
        &self,
        conversation_id: &str,
        text: String,
        ctx: Ctx,
    ) -> Result<Reply, EngineError> {
        check_message(&text)?;
        let store = &self.inner.store;
        let current = load(store, conversation_id).await?;
        let guard = self
            .inner
            .locks
            .try_lock(conversation_id)
            .ok_or_else(|| EngineError::Busy(conversation_id.to_string()))?;
        if let Some(a) = current.pending_approval {
            return Err(EngineError::WaitingApproval {
                conversation_id: conversation_id.to_string(),
                approval: Box::new(a),
            });
        }
        self.llm()?;
        let id = conversation_id.to_string();
        let (sid, who) = (ctx.session_id.clone(), ctx.principal.name.clone());
        let waiting = store
            .write(move |tx| {
                // Re-checked inside the transaction: the pending approval is
                // the authority, not the snapshot read above.
                if let Some(a) = approvals::pending_for(tx, &id)? {
                    return Ok(Some(a));
                }
                conversations::set_requester(tx, &id, &who, &sid)?;
                let m = messages::append(tx, &id, NewMessage::text(Role::User, text))?;
                audit::message_sent(tx, &who, &id, m.as_ref().map(|m| m.id.as_str()))?;
                conversations::set_status(tx, &id, ConversationStatus::Active)?;
                conversations::set_turn_running(tx, &id, true)?;
                Ok(None)
            })
            .await?;
        if let Some(a) = waiting {
            return Err(EngineError::WaitingApproval {
                conversation_id: conversation_id.to_string(),
                approval: Box::new(a),
            });
        }
        self.inner
            .events
            .emit(EventKind::MessageAdded, conversation_id, |e| {
                e.status = Some(ConversationStatus::Active);
                e.running = Some(true);
            });
        self.run_turn(conversation_id.to_string(), ctx, guard, false, None)
            .await
    }

    /// Approves or rejects a pending approval, then lets the turn go on.
    pub async fn decide(
        &self,
        uuid: &str,
        decision: Decision,
        ctx: Ctx,
    ) -> Result<Reply, EngineError> {
        let store = &self.inner.store;
        let found = store
            .read({
                let uuid = uuid.to_string();
                move |tx| approvals::get(tx, &uuid)
            })
            .await?
            .ok_or_else(|| EngineError::NotFound(format!("approval {uuid:?} not found")))?;
        if found.status != ApprovalStatus::Pending {
            return Err(EngineError::AlreadyDecided {
                uuid: uuid.to_string(),
                status: found.status,
            });
        }
        let auth = &self.inner.config.auth;
        let overrides = crate::auth::may_decide(
            auth.mode != crate::config::AuthMode::None,
            auth.separation_of_duties(),
            &ctx.principal,
            found.approval.requested_by.as_deref(),
        )
        .map_err(|r| EngineError::Forbidden(r.message(&ctx.principal.name)))?;
        let conversation_id = found.approval.conversation_id.clone();
        let guard = self
            .inner
            .locks
            .try_lock(&conversation_id)
            .ok_or_else(|| EngineError::Busy(conversation_id.clone()))?;
        let (u, cid, mid) = (
            uuid.to_string(),
            conversation_id.clone(),
            found.message_id.clone(),
        );
        let by = decider(&ctx);
        let proxy = found.approval.remote_task_id.is_some();
        let d = decision.clone();
        let digest = audit::digest(&found.approval.tool_args);
        let tool = found.approval.tool_name.clone();
        let outcome = store
            .write(move |tx| {
                let to = if d.approve {
                    ApprovalStatus::Approved
                } else {
                    ApprovalStatus::Rejected
                };
                if !approvals::transition(
                    tx,
                    &u,
                    &[ApprovalStatus::Pending],
                    to,
                    Some(&by),
                    d.reason.as_deref(),
                )? {
                    let now = approvals::get(tx, &u)?
                        .map(|a| a.status)
                        .unwrap_or(ApprovalStatus::Cancelled);
                    return Ok(Err(now));
                }
                let mut details = serde_json::json!({
                    "decision": if d.approve { "approved" } else { "rejected" },
                    "reason": d.reason,
                    "via": by.via,
                    "session_id": by.session,
                    "tool": tool,
                    "arguments_digest": digest,
                });
                if overrides {
                    details["override"] = "separation_of_duties".into();
                }
                audit::append(
                    tx,
                    &Event {
                        actor: &by.name,
                        event: "approval.decided",
                        conversation_id: Some(&cid),
                        approval_uuid: Some(&u),
                        details,
                    },
                )?;
                // A rejected local call is answered now; a rejected proxy
                // approval is forwarded to the remote task by the turn.
                if !d.approve && !proxy {
                    messages::set_result(tx, &mid, &declined_text(d.reason.as_deref()), true)?;
                }
                conversations::set_status(tx, &cid, ConversationStatus::Active)?;
                conversations::set_turn_running(tx, &cid, true)?;
                Ok(Ok(()))
            })
            .await?;
        if let Err(status) = outcome {
            return Err(EngineError::AlreadyDecided {
                uuid: uuid.to_string(),
                status,
            });
        }
        tracing::info!(approval = %uuid, conversation = %conversation_id, approved = decision.approve, "approval decided");
        let waited = crate::metrics::since(&found.approval.created_at);
        let outcome = if decision.approve {
            "approved"
        } else {
            "rejected"
        };
        crate::metrics::get().approval(outcome, waited);
        crate::telemetry::approval_wait(
            &ctx.session_id,
            found.traceparent.as_deref(),
            waited.unwrap_or_default(),
            &found.approval.tool_name,
            outcome,
            &ctx.principal.name,
        );
        self.inner
            .events
            .emit(EventKind::ApprovalDecided, &conversation_id, |e| {
                e.approval = Some(uuid.to_string());
                e.tool = Some(found.approval.tool_name.clone());
                e.status = Some(ConversationStatus::Active);
                e.running = Some(true);
                e.detail = Some(
                    if decision.approve {
                        "approved"
                    } else {
                        "rejected"
                    }
                    .into(),
                );
            });
        // The work after the decision belongs to the trace that asked.
        self.run_turn(conversation_id, ctx, guard, false, found.traceparent)
            .await
    }
}

impl Engine {
    /// True while a turn or a decision of the conversation runs.
    pub fn is_busy(&self, conversation_id: &str) -> bool {
        self.inner.locks.is_locked(conversation_id)
    }

    /// Cancels a conversation (A2A `CancelTask`): every waiting action is
    /// cancelled and never runs, remote tasks a proxy approval waited on are
    /// cancelled too, a pipeline run stops, and the conversation is
    /// `cancelled` until a new message opens it again. A turn that is
    /// running cannot be cancelled (Busy).
    pub async fn cancel(
        &self,
        conversation_id: &str,
        ctx: Ctx,
    ) -> Result<Conversation, EngineError> {
        let store = &self.inner.store;
        load(store, conversation_id).await?;
        let _guard = self
            .inner
            .locks
            .try_lock(conversation_id)
            .ok_or_else(|| EngineError::Busy(conversation_id.to_string()))?;
        let id = conversation_id.to_string();
        let by = ctx.session_id.clone();
        let decider = decider(&ctx);
        let (cancelled, remote) = store
            .write(move |tx| {
                let mut n = 0;
                let mut remote = Vec::new();
                for status in [ApprovalStatus::Pending, ApprovalStatus::Approved] {
                    for a in approvals::with_status(tx, status)? {
                        if a.approval.conversation_id != id {
                            continue;
                        }
                        approvals::transition(
                            tx,
                            &a.approval.uuid,
                            &[status],
                            ApprovalStatus::Cancelled,
                            Some(&decider),
                            Some("the task was cancelled"),
                        )?;
                        audit::append(
                            tx,
                            &Event {
                                actor: &decider.name,
                                event: "approval.cancelled",
                                conversation_id: Some(&id),
                                approval_uuid: Some(&a.approval.uuid),
                                details: serde_json::json!({"reason": "the task was cancelled", "via": decider.via, "session_id": decider.session}),
                            },
                        )?;
                        if let (Some(task), Some(agent)) =
                            (a.approval.remote_task_id.clone(), a.approval.remote_agent_name.clone())
                        {
                            remote.push((agent, task));
                        }
                        messages::set_result(
                            tx,
                            &a.message_id,
                            "Cancelled: the task was cancelled before this action ran; it was not run.",
                            true,
                        )?;
                        n += 1;
                    }
                }
                if let Some(mut ps) = conversations::pipeline_state(tx, &id)?
                    && matches!(ps.status, RunStatus::Running | RunStatus::Paused)
                {
                    ps.status = RunStatus::Stopped;
                    ps.error = Some("the task was cancelled".into());
                    ps.pending.clear();
                    ps.updated_at = crate::store::now();
                    conversations::set_pipeline_state(tx, &id, &ps)?;
                }
                let note = if n == 0 {
                    format!("Cancelled by session {by}.")
                } else {
                    format!("Cancelled by session {by}; {n} waiting action(s) were not run.")
                };
                messages::append(tx, &id, NewMessage::text(Role::System, note))?;
                conversations::set_status(tx, &id, ConversationStatus::Cancelled)?;
                conversations::set_turn_running(tx, &id, false)?;
                Ok((n, remote))
            })
            .await?;
        tracing::info!(conversation = %conversation_id, cancelled_actions = cancelled, "conversation cancelled");
        crate::metrics::get().approvals_ended("cancelled", cancelled as u64);
        // The remote tasks that waited with us are cancelled too (down the
        // chain), best effort: a remote that cannot be reached is logged.
        for (agent, task) in remote {
            let Some(url) = self.sub_agent_url(&agent) else {
                tracing::warn!(agent = %agent, "cannot cancel the remote task: the sub-agent is no longer configured");
                continue;
            };
            let agent_ctx = self.ctx_for_agent(&agent, &ctx);
            match self.inner.a2a.cancel(&url, &task, &agent_ctx).await {
                Ok(()) => tracing::info!(agent = %agent, task = %task, "remote task cancelled"),
                Err(e) => {
                    tracing::warn!(agent = %agent, task = %task, error = %e, "could not cancel the remote task")
                }
            }
        }
        self.emit_status(conversation_id, Some(ConversationStatus::Cancelled), false);
        load(store, conversation_id).await
    }
}

/// Who is deciding, as the approval row records it.
fn decider(ctx: &Ctx) -> Decider {
    Decider {
        name: ctx.principal.name.clone(),
        via: if ctx.via.is_empty() { "rest" } else { ctx.via }.to_string(),
        session: ctx.session_id.clone(),
    }
}

fn check_message(text: &str) -> Result<(), EngineError> {
    if text.trim().is_empty() {
        return Err(EngineError::Invalid(
            "\"message\" is empty: send the text for the agent".into(),
        ));
    }
    Ok(())
}
