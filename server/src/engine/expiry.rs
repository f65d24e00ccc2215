//! The expiry sweeper (POLICY.md §2): every half second, each replica
//! looks for pending approvals past their deadline and settles them one
//! by one under the conversation's lock (so a decision and an expiry never
//! interleave): an escalation widens who may decide and restarts the clock
//! once; an expiry answers the call and lets the turn go on, so the model
//! hears it. It also runs once at startup, before requests are served:
//! what expired while the agent was down is expired, never decided late.

use crate::engine::handle::Engine;
use crate::engine::locks::LockGuard;
use crate::policy::Expiry;
use crate::store::ExpiryOutcome;
use app::models::{ConversationStatus, EventKind};
use std::time::Duration;

/// How often the sweeper looks.
const EVERY: Duration = Duration::from_millis(500);
/// Approvals settled per look.
const BATCH: u32 = 100;
/// Every how many looks the proxy approvals are checked against their
/// remote tasks (each check is a request to a sub-agent).
const PROXY_EVERY: u64 = 4;

impl Engine {
    /// Settles every approval past its deadline now, then keeps doing so in
    /// the background.
    pub(crate) async fn start_expiry(&self) {
        self.expire_due().await;
        self.expire_questions().await;
        let engine = self.clone();
        self.inner.tasks.spawn_background("expiry", async move {
            let mut every = tokio::time::interval(EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut n: u64 = 0;
            loop {
                every.tick().await;
                n += 1;
                engine.expire_due().await;
                engine.expire_questions().await;
                if n.is_multiple_of(PROXY_EVERY) {
                    engine.check_proxies().await;
                }
            }
        });
    }

    /// One look: the approvals due now. A conversation that is busy (a
    /// decision in progress, on this replica or another) is left for the
    /// next look.
    pub(crate) async fn expire_due(&self) {
        let due = match self.inner.store.due_approvals(BATCH).await {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(error = %e, "could not look for expired approvals");
                return;
            }
        };
        for a in due {
            let conversation = a.approval.conversation_id.clone();
            let Ok(guard) = self.lock(&conversation).await else {
                continue;
            };
            self.expire_one(&a.approval.uuid, a.traceparent, guard)
                .await;
        }
    }

    async fn expire_one(&self, uuid: &str, trace: Option<String>, guard: LockGuard) {
        let escalate = match &self.inner.policy.on_expiry {
            Expiry::Escalate(to) => Some(to.iter().map(ToString::to_string).collect()),
            Expiry::Reject => None,
        };
        let outcome = self
            .inner
            .store
            .expire(uuid, escalate, |why| {
                super::calls::texts::expired_text(Some(why))
            })
            .await;
        match outcome {
            Ok(ExpiryOutcome::NotDue) => guard.release().await,
            Ok(ExpiryOutcome::Escalated(a)) => {
                guard.release().await;
                tracing::info!(approval = %uuid, approvers = %a.approval.approvers.join(","), expires_at = a.approval.expires_at.as_deref().unwrap_or("-"), "approval escalated");
                self.inner.events.emit(
                    EventKind::ApprovalRequested,
                    &a.approval.conversation_id,
                    |e| {
                        e.approval = Some(uuid.to_string());
                        e.tool = Some(a.approval.tool_name.clone());
                        e.status = Some(ConversationStatus::WaitingApproval);
                        e.detail = Some("escalated".into());
                    },
                );
            }
            Ok(ExpiryOutcome::Expired { why }) => {
                crate::telemetry::metrics::get().approvals_ended("expired", 1);
                let Some(conversation) = self.conversation_of(uuid).await else {
                    guard.release().await;
                    return;
                };
                tracing::info!(approval = %uuid, conversation = %conversation, reason = %why, "approval expired");
                self.inner
                    .events
                    .emit(EventKind::ApprovalDecided, &conversation, |e| {
                        e.approval = Some(uuid.to_string());
                        e.status = Some(ConversationStatus::Active);
                        e.running = Some(true);
                        e.detail = Some("expired".into());
                    });
                // The turn goes on in the background: the model hears it.
                self.resume_expired("turn after an expiry", conversation, guard, trace);
            }
            Err(e) => {
                guard.release().await;
                tracing::warn!(approval = %uuid, error = %e, "could not expire an approval");
            }
        }
    }

    /// Proxy approvals whose remote task no longer waits on them: the
    /// sub-agent's own approval expired (or was decided there) and its
    /// task went on. They end here too (`expired`), the call answered with
    /// what the remote task ended with (POLICY.md §2: an expiry down the
    /// chain ends the approvals above it). A sub-agent that cannot be
    /// reached is asked again on the next check.
    pub(crate) async fn check_proxies(&self) {
        // Without sub-agents there is no proxy approval to check.
        if self.inner.config.sub_agents().is_empty() {
            return;
        }
        let pending = match self.inner.store.pending_proxies().await {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(error = %e, "could not list the proxy approvals");
                return;
            }
        };
        for a in pending {
            let (Some(task), Some(agent)) = (
                a.approval.remote_task_id.clone(),
                a.approval.remote_agent_name.clone(),
            ) else {
                continue;
            };
            let Some(url) = self.sub_agent_url(&agent) else {
                continue;
            };
            let ctx = self.ctx_for_agent(
                &agent,
                &crate::domain::tools::CallContext {
                    session_id: "expiry".into(),
                    ..Default::default()
                },
            );
            let got = self.inner.a2a.get(&url, &task, &ctx).await;
            // A card held or trusted here is recorded as a call's would be.
            self.note_card(&agent, &url, got.as_ref().err()).await;
            let (result, is_error) = match got {
                Ok(
                    crate::a2a::RemoteReply::NeedsApproval(_)
                    | crate::a2a::RemoteReply::NeedsAnswer(_),
                ) => continue,
                Ok(crate::a2a::RemoteReply::Done(text)) => (text, false),
                Err(crate::a2a::A2aError::Failed { state, .. })
                    if state == "working" || state == "submitted" =>
                {
                    continue;
                }
                Err(e @ crate::a2a::A2aError::Failed { .. }) => {
                    (format!("sub-agent {agent}: {e}"), true)
                }
                Err(e) => {
                    tracing::debug!(agent = %agent, error = %e, "cannot check a proxy approval's remote task; later");
                    continue;
                }
            };
            let conversation = a.approval.conversation_id.clone();
            let Ok(guard) = self.lock(&conversation).await else {
                continue;
            };
            let why = format!(
                "the sub-agent `{agent}` went on without this decision (its own approval ended there)"
            );
            match self
                .inner
                .store
                .end_proxy(&a.approval.uuid, why.clone(), result, is_error)
                .await
            {
                Ok(ExpiryOutcome::Expired { .. }) => {
                    crate::telemetry::metrics::get().approvals_ended("expired", 1);
                    tracing::info!(approval = %a.approval.uuid, agent = %agent, "proxy approval ended: the remote task went on");
                    self.inner
                        .events
                        .emit(EventKind::ApprovalDecided, &conversation, |e| {
                            e.approval = Some(a.approval.uuid.clone());
                            e.status = Some(ConversationStatus::Active);
                            e.running = Some(true);
                            e.detail = Some("expired".into());
                        });
                    let trace = a.traceparent.clone();
                    self.resume_expired("turn after a proxy expiry", conversation, guard, trace);
                }
                Ok(_) => guard.release().await,
                Err(e) => {
                    guard.release().await;
                    tracing::warn!(approval = %a.approval.uuid, error = %e, "could not end a proxy approval");
                }
            }
        }
    }

    /// Resumes the turn of `conversation` (holding `guard`) in the
    /// background, in the trace that asked: the model hears that its
    /// approval expired.
    fn resume_expired(
        &self,
        task: &'static str,
        conversation: String,
        guard: LockGuard,
        trace: Option<String>,
    ) {
        let engine = self.clone();
        self.inner.tasks.spawn_background(task, async move {
            engine
                .resume_after(conversation, guard, trace, "an expired approval")
                .await;
        });
    }

    async fn conversation_of(&self, uuid: &str) -> Option<String> {
        match self.inner.store.approval(uuid).await {
            Ok(Some(a)) => Some(a.approval.conversation_id),
            _ => None,
        }
    }
}
