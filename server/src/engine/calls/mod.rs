//! The tool-call lifecycle: claim → gate → approval/question → execute →
//! record. `handle_call` takes the first unanswered call of a scope and
//! says whether the turn pauses or what the call's recorded result is.
//!
//! - `gate`: what happens to a call before it runs (rules, annotations, pins);
//! - `approval`: storing a pending approval and pausing;
//! - `execute`: running a call write-ahead and recording its result;
//! - `edit`: an approver's edit of the arguments, checked like the model's;
//! - `pins`: the tool pins and their drift checks;
//! - `cards`: trust in sub-agents' signed Agent Cards, held and accepted;
//! - `grants`: approvals that spare later identical calls (REACH.md §3);
//! - `delegate`: calls to sub-agents, with proxied approvals.

mod approval;
pub(super) mod cards;
pub(super) mod delegate;
pub(super) mod edit;
mod execute;
pub(super) mod gate;
pub(crate) mod grants;
pub(super) mod pins;
pub(crate) mod question;

use crate::engine::turn::scope::{LocalAction, Scope};
use crate::engine::turn::{declined_text, describe_call};
use crate::engine::{Ctx, Engine, EngineError};
use crate::store::StoredMessage;
use crate::store::approvals::Approval;
use crate::store::approvals::NewApproval;
use crate::store::questions::Era;
use app::models::{ApprovalStatus, EventKind, PendingApproval, Question, QuestionStatus};
use execute::Executed;
use gate::Gate;

/// What handling one call did.
pub(super) enum Handled {
    /// The turn pauses: the call waits for this approval.
    Paused(Box<PendingApproval>),
    /// The turn pauses: the call asked the human this (and waits for the
    /// answers of its round).
    Asked(Box<Question>),
    /// The call ran here and this result was recorded (with its note).
    Ran(CallResult),
    /// Anything else (answered otherwise, delegated, declined…).
    Other,
}

/// A call's result as recorded.
pub(super) struct CallResult {
    pub(in crate::engine) text: String,
    pub(in crate::engine) is_error: bool,
}

impl Engine {
    /// Handles the first unanswered call of the turn: says whether the turn
    /// must pause, or the result it recorded when the call ran. `fresh`: the call was recorded by this turn's own step,
    /// under its lease, so no approval can exist for it yet (one round trip
    /// less per call on PostgreSQL). `decided`: the call's approval as the
    /// decision that resumed this turn left it (under this turn's lease),
    /// so it is not read again.
    pub(super) async fn handle_call(
        &self,
        conversation_id: &str,
        call: &StoredMessage,
        scope: &Scope,
        ctx: &Ctx,
        fresh: bool,
        decided: Option<Approval>,
    ) -> Result<Handled, EngineError> {
        let store = &self.inner.store;
        let Some(tc) = call.message.tool_call.clone() else {
            return Ok(Handled::Other);
        };
        let message_id = call.message.id.clone();
        let info = self
            .scope_tools(scope)
            .into_iter()
            .find(|t| t.name == tc.name);
        // A call that asked the human (an MCP 2026-07-28 round) and rests:
        // it waits for the round's answers, then is retried with them, once.
        if !fresh && decided.is_none() && call.started_at.is_none() {
            let round = store.latest_round(&message_id).await?;
            // A sub-agent's question: its answer is sent on, once.
            if let Some(q) = round.first()
                && q.era == Era::Proxy
                && !q.relayed
            {
                if q.question.status == QuestionStatus::Pending {
                    return Ok(Handled::Asked(Box::new(q.question.clone())));
                }
                let q = q.clone();
                return self
                    .relay_answer(conversation_id, &message_id, &tc, q, scope, ctx)
                    .await;
            }
            if round.first().is_some_and(|q| q.era == Era::Round) {
                if let Some(q) = round
                    .iter()
                    .find(|q| q.question.status == QuestionStatus::Pending)
                {
                    return Ok(Handled::Asked(Box::new(q.question.clone())));
                }
                let (resume, expired) = question::resume_of(&round);
                let mut run = tc.clone();
                // The arguments it ran with (an approver's edit included):
                // the server's state is bound to them.
                if let Some(q) = round.first() {
                    run.arguments = q.question.tool_call.arguments.clone();
                }
                let note = expired.then(|| question::EXPIRED_NOTE.to_string());
                return self
                    .execute(
                        conversation_id,
                        &message_id,
                        &run,
                        (None, note),
                        Some(resume),
                        scope,
                        ctx,
                    )
                    .await
                    .map(handled);
            }
        }
        let approval = match decided {
            _ if fresh => None,
            Some(a) => Some(a),
            None => store.approval_for_message(&message_id).await?,
        };
        // Only a call nobody has ruled on yet meets the gate.
        let mut gate = match approval {
            None => self.gate(&tc, info.as_ref(), scope, conversation_id),
            Some(_) => Gate::Run,
        };
        // Replicas share grants through the store: before asking, read this
        // tool's again (another replica may have granted it just now).
        if matches!(gate, Gate::Ask { quorum: 1, .. }) && store.shared() {
            self.refresh_grants(&tc.name, tc.server.as_deref()).await?;
            gate = self.gate(&tc, info.as_ref(), scope, conversation_id);
        }
        // A grant spares the question: the call gets an approval approved
        // by the grant (its use recorded), and goes on like any approved
        // call; a grant that ended meanwhile leaves the question.
        let (approval, gate) = match gate {
            Gate::Granted { grant, ask } => {
                match self
                    .run_granted(conversation_id, &message_id, &tc, &grant, &ask, ctx)
                    .await?
                {
                    Some(a) => (Some(a), Gate::Run),
                    None => (approval, *ask),
                }
            }
            g => (approval, g),
        };
        if let Some(LocalAction::A2a { agent, url }) =
            scope.local_tool(&tc.name).map(|t| t.action.clone())
        {
            let target = self::delegate::Target {
                agent: &agent,
                url: &url,
            };
            return self
                .handle_delegation(
                    conversation_id,
                    &message_id,
                    &tc,
                    approval,
                    gate,
                    target,
                    scope,
                    ctx,
                )
                .await;
        }
        match approval {
            None if matches!(gate, Gate::Deny { .. }) => {
                if let Gate::Deny { rule, reason } = gate {
                    self.deny(conversation_id, &message_id, &tc, (rule, reason), scope)
                        .await?;
                }
                Ok(Handled::Other)
            }
            None if matches!(gate, Gate::Ask { .. }) => {
                let Gate::Ask {
                    rule,
                    approvers,
                    quorum,
                    expires_in,
                } = gate
                else {
                    return Ok(Handled::Other);
                };
                let description = describe_call(&tc.name, tc.server.as_deref(), &tc.arguments);
                let new = NewApproval {
                    conversation_id: conversation_id.to_string(),
                    message_id,
                    tool_name: tc.name.clone(),
                    server: tc.server.clone(),
                    tool_args: tc.arguments.clone(),
                    description,
                    remote: None,
                    traceparent: crate::telemetry::current_traceparent(),
                    rule: Some(rule),
                    approvers,
                    quorum,
                    expires_in,
                };
                Ok(Handled::Paused(Box::new(
                    self.request_approval(conversation_id, new, scope, None)
                        .await?,
                )))
            }
            None => self
                .execute(
                    conversation_id,
                    &message_id,
                    &tc,
                    (None, None),
                    None,
                    scope,
                    ctx,
                )
                .await
                .map(handled),
            Some(a) => match a.status {
                ApprovalStatus::Pending => Ok(Handled::Paused(Box::new(a.approval))),
                ApprovalStatus::Approved => {
                    // Edited before approving: the tool runs with the
                    // approver's arguments, and the model hears so.
                    let (run, note) = match &a.approval.edited_args {
                        Some(edited) => {
                            let changes = self::edit::diff(&tc.arguments, edited);
                            let note = format!(
                                "An approver ({}) edited the arguments before approving ({}); the tool ran with {edited}.",
                                a.approval.edited_by.as_deref().unwrap_or("?"),
                                changes.join("; ")
                            );
                            let mut run = tc.clone();
                            run.arguments = edited.clone();
                            (run, Some(note))
                        }
                        None => (tc.clone(), None),
                    };
                    self.execute(
                        conversation_id,
                        &message_id,
                        &run,
                        (Some(a.approval.uuid.clone()), note),
                        None,
                        scope,
                        ctx,
                    )
                    .await
                    .map(handled)
                }
                ApprovalStatus::Expired => {
                    // The expiry answered the call in its transaction; this
                    // covers a result write that was lost.
                    let text = self::gate::expired_text(a.reason.as_deref());
                    store
                        .answer_call(conversation_id, &message_id, text, true)
                        .await?;
                    Ok(Handled::Other)
                }
                ApprovalStatus::Rejected | ApprovalStatus::Cancelled => {
                    let text = declined_text(a.reason.as_deref());
                    store
                        .answer_call(conversation_id, &message_id, text, true)
                        .await?;
                    self.inner
                        .events
                        .emit(EventKind::ToolCallFinished, conversation_id, |e| {
                            e.tool = Some(tc.name.clone());
                            e.detail = Some("declined".into());
                            e.node = scope.node_name();
                        });
                    Ok(Handled::Other)
                }
                ApprovalStatus::Executing
                | ApprovalStatus::InDoubt
                | ApprovalStatus::Executed
                | ApprovalStatus::Failed => {
                    // Only reachable if a result write was lost; never run again.
                    let text = crate::engine::recovery::IN_DOUBT_TEXT.to_string();
                    store
                        .answer_call(conversation_id, &message_id, text, true)
                        .await?;
                    Ok(Handled::Other)
                }
            },
        }
    }
}

/// What running a call means for the turn.
fn handled(e: Executed) -> Handled {
    match e {
        Executed::Skipped => Handled::Other,
        Executed::Ran(r) => Handled::Ran(r),
        Executed::Asked(q) => Handled::Asked(q),
    }
}
