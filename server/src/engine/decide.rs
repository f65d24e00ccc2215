//! Starting turns and deciding approvals: the engine's public entry points.

use super::turn::declined_text;
use super::{Ctx, Engine, EngineError, Reply};
use crate::store::approvals::Decider;
use crate::store::{Decided, DecisionRecord, Requester, Store, StoredMessage};
use app::models::{ApprovalStatus, Conversation, ConversationStatus, EventKind};

/// An operator's decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Decision {
    pub(crate) approve: bool,
    /// Why (for a rejection, told to the model).
    pub(crate) reason: Option<String>,
    /// Approve with these arguments instead of the model's (POLICY.md §3).
    pub(crate) arguments: Option<serde_json::Value>,
}

/// Reads a conversation or says it does not exist.
pub(crate) async fn load(store: &Store, id: &str) -> Result<Conversation, EngineError> {
    store
        .get_conversation(id.to_string())
        .await?
        .ok_or_else(|| not_found(id))
}

/// `Ok` when the conversation exists: one indexed read, no history.
async fn must_exist(store: &Store, id: &str) -> Result<(), EngineError> {
    match store.conversation_exists(id).await? {
        true => Ok(()),
        false => Err(not_found(id)),
    }
}

fn not_found(id: &str) -> EngineError {
    EngineError::NotFound(format!("conversation {id:?} not found"))
}

impl Engine {
    /// Creates a conversation; with a first message, runs its first turn.
    pub(crate) async fn start_conversation(
        &self,
        message: Option<String>,
        ctx: Ctx,
    ) -> Result<(Conversation, Option<Reply>), EngineError> {
        let store = &self.inner.store;
        let Some(text) = message else {
            let c = store.open_conversation(requester(&ctx), None).await?;
            self.emit_status(&c.id, Some(c.status), false);
            return Ok((c, None));
        };
        check_message(&text)?;
        self.llm()?;
        // One transaction: the conversation, its first message, the running
        // flag and the turn's lease.
        let (c, lease) = store.open_turn(requester(&ctx), text).await?;
        self.inner.events.emit(EventKind::MessageAdded, &c.id, |e| {
            e.status = Some(ConversationStatus::Active);
            e.running = Some(true);
        });
        let guard = self.lock_new(&c.id, lease)?;
        // Its one message, as the turn would read it back.
        let first = match c.messages.as_slice() {
            [m] => Some(StoredMessage::of_user(m.clone())),
            _ => None,
        };
        let reply = self.run_turn(c.id.clone(), ctx, guard, first, None).await?;
        Ok((reply.conversation.clone(), Some(reply)))
    }

    /// Adds a user message to a conversation and runs the turn.
    pub(crate) async fn send_message(
        &self,
        conversation_id: &str,
        text: String,
        ctx: Ctx,
    ) -> Result<Reply, EngineError> {
        check_message(&text)?;
        let store = &self.inner.store;
        // Whether it exists, not the whole conversation: the history of a
        // long one is not read to accept a message (the pending approval
        // is checked in the message's own transaction below).
        must_exist(store, conversation_id).await?;
        let guard = self.lock(conversation_id).await?;
        if let Err(e) = self.llm() {
            // A waiting approval is the better answer (409 naming it).
            return Err(match store.pending_approval(conversation_id).await? {
                Some(a) => EngineError::WaitingApproval {
                    conversation_id: conversation_id.to_string(),
                    approval: Box::new(a),
                },
                None => e,
            });
        }
        // The pending approval is checked inside the transaction: the
        // authority, with no snapshot read before it.
        let waiting = store
            .add_user_message(conversation_id, requester(&ctx), text)
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
        self.run_turn(conversation_id.to_string(), ctx, guard, None, None)
            .await
    }

    /// Approves or rejects a pending approval, then lets the turn go on.
    pub(crate) async fn decide(
        &self,
        uuid: &str,
        decision: Decision,
        ctx: Ctx,
    ) -> Result<Reply, EngineError> {
        self.decide_with(uuid, decision, ctx, None).await
    }

    /// [`Engine::decide`] through the signed link `link` (POLICY.md §5):
    /// checked like any other decision, and the link is used up in the
    /// decision's transaction.
    pub(crate) async fn decide_by_link(
        &self,
        uuid: &str,
        decision: Decision,
        mut ctx: Ctx,
        link: String,
    ) -> Result<Reply, EngineError> {
        ctx.via = "link";
        self.decide_with(uuid, decision, ctx, Some(link)).await
    }

    async fn decide_with(
        &self,
        uuid: &str,
        decision: Decision,
        ctx: Ctx,
        link: Option<String>,
    ) -> Result<Reply, EngineError> {
        let store = &self.inner.store;
        let found = store
            .approval(uuid)
            .await?
            .ok_or_else(|| EngineError::NotFound(format!("approval {uuid:?} not found")))?;
        if found.status != ApprovalStatus::Pending {
            return Err(EngineError::AlreadyDecided {
                uuid: uuid.to_string(),
                status: found.status,
            });
        }
        let auth = &self.inner.config.auth;
        let overrides = crate::domain::principal::may_decide(
            auth.mode != crate::config::AuthMode::None,
            auth.separation_of_duties(),
            &ctx.principal,
            found.approval.requested_by.as_deref(),
        )
        .map_err(|r| EngineError::Forbidden(r.message(&ctx.principal.name)))?;
        if auth.mode != crate::config::AuthMode::None {
            may_decide_by_rule(&found.approval, &ctx.principal)?;
        }
        if let Some(edited) = &decision.arguments {
            self.check_edit(&found, edited)?;
        }
        let conversation_id = found.approval.conversation_id.clone();
        // With a quorum each principal votes once; in auth mode none there
        // are no principals, so browser sessions are counted instead.
        let voter = (found.approval.needed() > 1).then(|| {
            if auth.mode == crate::config::AuthMode::None {
                format!("session:{}", ctx.session_id)
            } else {
                ctx.principal.name.clone()
            }
        });
        let guard = self.lock(&conversation_id).await?;
        let proxy = found.approval.remote_task_id.is_some();
        let outcome = store
            .decide(DecisionRecord {
                uuid: uuid.to_string(),
                conversation_id: conversation_id.clone(),
                message_id: found.message_id.clone(),
                approve: decision.approve,
                reason: decision.reason.clone(),
                by: decider(&ctx),
                // A rejected local call is answered now; a rejected proxy
                // approval is forwarded to the remote task by the turn.
                answer: (!decision.approve && !proxy)
                    .then(|| declined_text(decision.reason.as_deref())),
                overrides,
                tool: found.approval.tool_name.clone(),
                arguments: found.approval.tool_args.clone(),
                voter: voter.clone(),
                expires: found.approval.expires_at.is_some(),
                edited: decision.arguments.clone().map(|after| {
                    let changes = super::edit::diff(&found.approval.tool_args, &after);
                    (after, changes)
                }),
                link,
            })
            .await?;
        match outcome {
            Decided::Done => {}
            Decided::Lost(status) => {
                return Err(EngineError::AlreadyDecided {
                    uuid: uuid.to_string(),
                    status,
                });
            }
            Decided::LinkUsed => return Err(EngineError::LinkUsed),
            Decided::AlreadyVoted => {
                return Err(EngineError::AlreadyVoted {
                    uuid: uuid.to_string(),
                    voter: voter.unwrap_or_default(),
                });
            }
            Decided::Voted { approvals, quorum } => {
                guard.release().await;
                tracing::info!(approval = %uuid, conversation = %conversation_id, approvals, quorum, "approval vote recorded");
                self.inner
                    .events
                    .emit(EventKind::ApprovalVoted, &conversation_id, |e| {
                        e.approval = Some(uuid.to_string());
                        e.tool = Some(found.approval.tool_name.clone());
                        e.status = Some(ConversationStatus::WaitingApproval);
                        e.detail = Some(format!("{approvals} of {quorum}"));
                    });
                let now = store
                    .approval(uuid)
                    .await?
                    .map(|a| a.approval)
                    .unwrap_or(found.approval);
                return self
                    .reply(&conversation_id, super::TurnOutcome::Waiting(Box::new(now)))
                    .await;
            }
        }
        tracing::info!(approval = %uuid, conversation = %conversation_id, approved = decision.approve, "approval decided");
        let waited = crate::telemetry::metrics::since(&found.approval.created_at);
        let outcome = if decision.approve {
            "approved"
        } else {
            "rejected"
        };
        crate::telemetry::metrics::get().approval(outcome, waited);
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
        self.run_turn(conversation_id, ctx, guard, None, found.traceparent)
            .await
    }
}

impl Engine {
    /// True while a turn or a decision of the conversation runs.
    pub(crate) fn is_busy(&self, conversation_id: &str) -> bool {
        self.inner.locks.is_locked(conversation_id)
    }

    /// True while a turn of `c` runs: here (the lock), or as the snapshot's
    /// own running flag says (on another replica; or here, read before the
    /// turn ended: a snapshot with the user's message and a lock released
    /// since would otherwise look failed, which a push watcher took for
    /// the task's end on both backends).
    pub(crate) fn runs(&self, c: &Conversation) -> bool {
        self.is_busy(&c.id) || c.running
    }

    /// Cancels a conversation (A2A `CancelTask`): a running turn is
    /// stopped first (on whichever replica runs it), every waiting action
    /// is cancelled and never runs, remote tasks a proxy approval waited on
    /// are cancelled too, a pipeline run stops, and the conversation is
    /// `cancelled` until a new message opens it again. Busy if the turn
    /// does not stop in time (a long tool call).
    pub(crate) async fn cancel(
        &self,
        conversation_id: &str,
        ctx: Ctx,
    ) -> Result<Conversation, EngineError> {
        let store = &self.inner.store;
        must_exist(store, conversation_id).await?;
        let guard = self.stop_turn(conversation_id).await?;
        let by = ctx.session_id.clone();
        let note = move |n: usize| {
            if n == 0 {
                format!("Cancelled by session {by}.")
            } else {
                format!("Cancelled by session {by}; {n} waiting action(s) were not run.")
            }
        };
        let (cancelled, remote) = store
            .cancel_conversation(conversation_id, decider(&ctx), note)
            .await?;
        tracing::info!(conversation = %conversation_id, cancelled_actions = cancelled, "conversation cancelled");
        crate::telemetry::metrics::get().approvals_ended("cancelled", cancelled as u64);
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
        guard.release().await;
        self.emit_status(conversation_id, Some(ConversationStatus::Cancelled), false);
        load(store, conversation_id).await
    }
}

impl Engine {
    /// Takes the conversation's lock, stopping its running turn first: its
    /// switch is tripped here, or the replica running it is asked through
    /// the store (its heartbeat sees it). Waits for the turn to let go for
    /// up to a lease and ten seconds (a tool that started finishes).
    async fn stop_turn(&self, conversation_id: &str) -> Result<super::LockGuard, EngineError> {
        let wait = std::time::Duration::from_secs(self.inner.config.store.lease_seconds + 10);
        let deadline = tokio::time::Instant::now() + wait;
        let mut asked = false;
        loop {
            match self.lock(conversation_id).await {
                Err(EngineError::Busy(_)) if tokio::time::Instant::now() < deadline => {
                    if !self.inner.turns.cancel(conversation_id)
                        && !asked
                        && self.inner.store.shared()
                    {
                        asked = self.inner.store.request_cancel(conversation_id).await?;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
                out => return out,
            }
        }
    }
}

/// The rule's `approvers` (recorded on the approval when it was asked):
/// deciding needs the approver role (AUTH.md) *and* one of these.
fn may_decide_by_rule(
    a: &app::models::PendingApproval,
    p: &crate::domain::principal::Principal,
) -> Result<(), EngineError> {
    if a.approvers.is_empty() {
        return Ok(());
    }
    let admitted = a
        .approvers
        .iter()
        .any(|entry| crate::policy::Approver::parse(entry).is_ok_and(|who| who.admits(p)));
    if admitted {
        return Ok(());
    }
    Err(EngineError::Forbidden(format!(
        "{} may not decide this approval: the rule `{}` lets {} decide it",
        p.name,
        a.rule.as_deref().unwrap_or("?"),
        a.approvers.join(", ")
    )))
}

/// Who asks, as the conversation records it.
fn requester(ctx: &Ctx) -> Requester {
    Requester {
        name: ctx.principal.name.clone(),
        session: ctx.session_id.clone(),
        message_id: ctx.message_id.clone(),
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
    // PostgreSQL's text cannot hold it, so neither backend takes it.
    if text.contains('\0') {
        return Err(EngineError::Invalid(
            "\"message\" contains the NUL character (U+0000), which cannot be stored".into(),
        ));
    }
    Ok(())
}
