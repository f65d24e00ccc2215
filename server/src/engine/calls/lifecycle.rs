//! Handling one unanswered call: its [`CallState`] is computed once from
//! the stored rows, and each state has one small function that says what
//! the call does (pause, run once, answer without running). A call to a
//! sub-agent takes the same states to `delegate.rs`.

use super::edit;
use super::gate::Gate;
use super::outcome::CallOutcome;
use super::site::CallSite;
use super::state::{CallState, Known};
use super::texts::{declined_text, describe_call, expired_text};
use crate::domain::tools::CallContext;
use crate::engine::error::EngineError;
use crate::engine::handle::Engine;
use crate::engine::scope::Scope;
use crate::store::StoredMessage;
use crate::store::approvals::Approval;
use crate::store::questions::StoredQuestion;
use app::models::EventKind;

impl Engine {
    /// Handles the first unanswered call of the turn: says whether the turn
    /// must pause, or the result it recorded when the call ran. `known`:
    /// what the turn knows of the call's rows without reading them.
    pub(crate) async fn handle_call(
        &self,
        conversation_id: &str,
        call: &StoredMessage,
        scope: &Scope,
        ctx: &CallContext,
        known: Known,
    ) -> Result<CallOutcome, EngineError> {
        let Some(tc) = call.message.tool_call.as_ref() else {
            return Ok(CallOutcome::AnsweredInStore);
        };
        let site = CallSite {
            conversation_id,
            message_id: &call.message.id,
            tc,
            scope,
            ctx,
        };
        let state = CallState::read(&self.inner.store, call, known).await?;
        tracing::debug!(tool = %tc.name, state = state.name(), may_start = state.may_start(), pauses = state.pauses(), "tool call state");
        match state {
            CallState::Unruled => self.meet_gate(site).await,
            CallState::Pending(a) => Ok(CallOutcome::AwaitsApproval(a)),
            CallState::Asking(q) => Ok(CallOutcome::AwaitsAnswer(q)),
            CallState::Approved(a) => self.run_approved(site, *a).await,
            CallState::Expired(a) => self.answer_expired(site, *a).await,
            CallState::Rejected(a) => self.answer_rejected(site, *a).await,
            CallState::Cancelled(a) => self.answer_declined(site, &a).await,
            CallState::Claimed => self.answer_in_doubt(site).await,
            CallState::RoundAnswered(round) => self.retry_with_answers(site, &round).await,
            CallState::ProxyAnswered(q) => self.relay_answer(site, *q).await,
        }
    }

    /// An unruled call meets the gate: it runs, asks, or is denied; a live
    /// grant spares the question (the call gets an approval approved by
    /// the grant, its use recorded, and runs like any approved call).
    async fn meet_gate(&self, site: CallSite<'_>) -> Result<CallOutcome, EngineError> {
        let tc = site.tc;
        let info = self
            .scope_tools(site.scope)
            .into_iter()
            .find(|t| t.name == tc.name);
        let mut gate = self.gate(tc, info.as_ref(), site.scope, site.conversation_id);
        // Replicas share grants through the store: before asking, read this
        // tool's again (another replica may have granted it just now).
        if matches!(gate, Gate::Ask { quorum: 1, .. }) && self.inner.store.shared() {
            self.refresh_grants(&tc.name, tc.server.as_deref()).await?;
            gate = self.gate(tc, info.as_ref(), site.scope, site.conversation_id);
        }
        let gate = match gate {
            // A grant that ended meanwhile leaves the question.
            Gate::Granted { grant, ask } => match &*ask {
                Gate::Ask {
                    rule,
                    approvers,
                    quorum,
                    ..
                } => match self
                    .run_granted(site, &grant, (rule, approvers, *quorum))
                    .await?
                {
                    Some(a) => return self.run_approved(site, a).await,
                    None => *ask,
                },
                _ => *ask,
            },
            g => g,
        };
        if let Some(target) = site.target() {
            return self.delegate_unruled(site, target, gate).await;
        }
        match gate {
            Gate::Deny { rule, reason } => {
                self.deny(site, (rule, reason)).await?;
                Ok(CallOutcome::AnsweredInStore)
            }
            Gate::Ask {
                rule,
                approvers,
                quorum,
                expires_in,
            } => {
                let description = describe_call(&tc.name, tc.server.as_deref(), &tc.arguments);
                self.ask(site, (rule, approvers, quorum, expires_in), description)
                    .await
            }
            Gate::Run | Gate::Granted { .. } => self.execute(site, tc, (None, None), None).await,
        }
    }

    /// An approved call runs once (the claim lets one writer through).
    /// Edited before approving: the tool runs with the approver's
    /// arguments, and the model hears so.
    async fn run_approved(
        &self,
        site: CallSite<'_>,
        a: Approval,
    ) -> Result<CallOutcome, EngineError> {
        if let Some(target) = site.target() {
            return self.delegate_approved(site, target, a).await;
        }
        let tc = site.tc;
        let (run, note) = match &a.approval.edited_args {
            Some(edited) => {
                let changes = edit::diff(&tc.arguments, edited);
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
        self.execute(site, &run, (Some(a.approval.uuid), note), None)
            .await
    }

    /// An expired call never runs. The expiry answered it in its
    /// transaction; this covers a result write that was lost.
    async fn answer_expired(
        &self,
        site: CallSite<'_>,
        a: Approval,
    ) -> Result<CallOutcome, EngineError> {
        if let Some(target) = site.target() {
            return self.delegate_expired(site, target, a).await;
        }
        let text = expired_text(a.reason.as_deref());
        self.inner
            .store
            .answer_call(site.conversation_id, site.message_id, text, true)
            .await?;
        Ok(CallOutcome::AnsweredInStore)
    }

    /// A rejected call never runs; a sub-agent waiting on the decision
    /// hears it.
    async fn answer_rejected(
        &self,
        site: CallSite<'_>,
        a: Approval,
    ) -> Result<CallOutcome, EngineError> {
        if let (Some(target), Some(task)) = (site.target(), &a.approval.remote_task_id) {
            return self.forward_rejection(site, target, task, &a).await;
        }
        self.answer_declined(site, &a).await
    }

    /// A rejected or cancelled call is answered with the reason.
    async fn answer_declined(
        &self,
        site: CallSite<'_>,
        a: &Approval,
    ) -> Result<CallOutcome, EngineError> {
        let text = declined_text(a.reason.as_deref());
        if site.target().is_some() {
            self.finish_call(site, site.tc, &text, true, None).await?;
            return Ok(CallOutcome::AnsweredInStore);
        }
        self.inner
            .store
            .answer_call(site.conversation_id, site.message_id, text, true)
            .await?;
        let (tool, node) = (site.tc.name.clone(), site.scope.node_name());
        self.inner
            .events
            .emit(EventKind::ToolCallFinished, site.conversation_id, |e| {
                e.tool = Some(tool.clone());
                e.detail = Some("declined".into());
                e.node = node.clone();
            });
        Ok(CallOutcome::AnsweredInStore)
    }

    /// A claimed call (its tool started once) is never started again: it
    /// is unanswered only if a result write was lost, and is answered as
    /// in doubt.
    async fn answer_in_doubt(&self, site: CallSite<'_>) -> Result<CallOutcome, EngineError> {
        let text = crate::store::recovery::IN_DOUBT_TEXT;
        if site.target().is_some() {
            self.finish_call(site, site.tc, text, true, None).await?;
            return Ok(CallOutcome::AnsweredInStore);
        }
        self.inner
            .store
            .answer_call(
                site.conversation_id,
                site.message_id,
                text.to_string(),
                true,
            )
            .await?;
        Ok(CallOutcome::AnsweredInStore)
    }

    /// A call whose question round is answered is retried once with the
    /// answers, and the arguments it ran with (an approver's edit
    /// included): the server's state is bound to them.
    async fn retry_with_answers(
        &self,
        site: CallSite<'_>,
        round: &[StoredQuestion],
    ) -> Result<CallOutcome, EngineError> {
        let (resume, expired) = super::question::resume_of(round);
        let mut run = site.tc.clone();
        if let Some(q) = round.first() {
            run.arguments = q.question.tool_call.arguments.clone();
        }
        let note = expired.then(|| super::question::EXPIRED_NOTE.to_string());
        self.execute(site, &run, (None, note), Some(resume)).await
    }
}
