//! An operator's approve/reject (by API or by a signed link), and the turn
//! going on after it.

use super::{decider, may_decide_by_rule};
use crate::engine::turn::declined_text;
use crate::engine::{Ctx, Engine, EngineError, Reply};
use crate::store::{Decided, DecisionRecord};
use app::models::{ApprovalStatus, ConversationStatus, EventKind};

/// An operator's decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Decision {
    pub(crate) approve: bool,
    /// Why (for a rejection, told to the model).
    pub(crate) reason: Option<String>,
    /// Approve with these arguments instead of the model's (POLICY.md §3).
    pub(crate) arguments: Option<serde_json::Value>,
    /// Approve, and let later identical calls run for a while (REACH.md §3).
    pub(crate) grant: Option<app::models::GrantRequest>,
}

/// What a decision's transaction recorded, told as soon as it committed
/// (before the turn goes on): a surface that must answer quickly (Slack's
/// three seconds) answers with it and lets the turn run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Committed {
    /// The approval is approved (`true`) or rejected.
    Decided(bool),
    /// A vote short of the quorum: `approvals` of `quorum`.
    Voted { approvals: usize, quorum: usize },
}

impl Engine {
    /// Approves or rejects a pending approval, then lets the turn go on.
    pub(crate) async fn decide(
        &self,
        uuid: &str,
        decision: Decision,
        ctx: Ctx,
    ) -> Result<Reply, EngineError> {
        self.decide_with(uuid, decision, ctx, None, None).await
    }

    /// [`Engine::decide`], telling `committed` what was recorded the
    /// moment it commits (the turn then goes on as usual).
    pub(crate) async fn decide_reporting(
        &self,
        uuid: &str,
        decision: Decision,
        ctx: Ctx,
        committed: tokio::sync::oneshot::Sender<Committed>,
    ) -> Result<Reply, EngineError> {
        self.decide_with(uuid, decision, ctx, None, Some(committed))
            .await
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
        ctx.via = crate::domain::channel::Channel::Link;
        self.decide_with(uuid, decision, ctx, Some(link), None)
            .await
    }

    async fn decide_with(
        &self,
        uuid: &str,
        decision: Decision,
        ctx: Ctx,
        link: Option<String>,
        committed: Option<tokio::sync::oneshot::Sender<Committed>>,
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
        let grant = match &decision.grant {
            None => None,
            Some(_) if !decision.approve => {
                return Err(EngineError::Invalid(
                    "a grant goes with an approval: a rejection grants nothing".into(),
                ));
            }
            Some(req) => {
                let ran_with = decision
                    .arguments
                    .as_ref()
                    .unwrap_or(&found.approval.tool_args);
                Some(self.grant_of(req, &found, ran_with, &ctx)?)
            }
        };
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
                    let changes =
                        crate::engine::calls::edit::diff(&found.approval.tool_args, &after);
                    (after, changes)
                }),
                link,
                grant: grant.clone(),
            })
            .await;
        // Every way out that does not hand the guard to a turn releases it
        // here, awaiting the lease's write: dropped, the lease would be
        // released by a spawned task, after the answer, and the caller's
        // next request (another vote, say) could find it still held.
        let outcome = outcome
            .map_err(EngineError::from)
            .and_then(|o| refusal(&o, uuid, &voter).map_or(Ok(o), Err));
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                guard.release().await;
                return Err(e);
            }
        };
        if let Some(tx) = committed {
            let told = match outcome {
                Decided::Done => Some(Committed::Decided(decision.approve)),
                Decided::Voted { approvals, quorum } => {
                    Some(Committed::Voted { approvals, quorum })
                }
                _ => None,
            };
            if let Some(c) = told {
                let _ = tx.send(c);
            }
        }
        if let Decided::Voted { approvals, quorum } = outcome {
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
                .reply(
                    &conversation_id,
                    crate::engine::TurnOutcome::Waiting(Box::new(now)),
                )
                .await;
        }
        if let Some(g) = &grant {
            self.granted(g);
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
        // The approval as the decision left it, handed to the turn (which
        // runs under this lease, so nobody else moved it) instead of read
        // again. A rejected local call was answered by the decision; a
        // proxy approval goes through the delegation, which reads its own.
        let traceparent = found.traceparent.clone();
        let decided = (decision.approve && !proxy).then(|| {
            let mut a = found;
            a.status = ApprovalStatus::Approved;
            a.reason = decision.reason.clone();
            a.decided_by = Some(decider(&ctx).name);
            if let Some(args) = decision.arguments.clone() {
                a.approval.edited_args = Some(args);
                a.approval.edited_by = a.decided_by.clone();
            }
            a
        });
        // The work after the decision belongs to the trace that asked.
        self.run_turn(conversation_id, ctx, guard, None, decided, traceparent)
            .await
    }
}

/// The refusal a decision's write answered, as the caller's error (`None`
/// when it was recorded: decided, or a vote counted).
fn refusal(outcome: &Decided, uuid: &str, voter: &Option<String>) -> Option<EngineError> {
    match outcome {
        Decided::Done | Decided::Voted { .. } => None,
        Decided::Lost(status) => Some(EngineError::AlreadyDecided {
            uuid: uuid.to_string(),
            status: *status,
        }),
        Decided::LinkUsed => Some(EngineError::LinkUsed),
        Decided::AlreadyVoted => Some(EngineError::AlreadyVoted {
            uuid: uuid.to_string(),
            voter: voter.clone().unwrap_or_default(),
        }),
    }
}
