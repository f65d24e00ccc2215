//! Delegation to sub-agents, with approvals proxied across agents.
//!
//! A call to a sub-agent (`a2a_<name>` tool or `a2a` node) is a tool call
//! like any other: it may need local approval first (`destructiveHint`),
//! and sending it is a side effect written ahead (the call is marked
//! started, its approval `executing`). What differs is the answer: a
//! remote task that waits for a decision (`input-required`) becomes a
//! **proxy approval** on the same call, carrying the remote task id, the
//! sub-agent's name and the chain of agents the request came through. The
//! call then rests (nothing is in flight, so a restart changes nothing)
//! until an operator decides here; the decision is sent to the remote task
//! (same task id), whose next answer either completes the call or asks
//! again (another proxy approval). A rejection is forwarded too, so the
//! remote agent's model hears it; only a cancelled proxy ends the call
//! locally.
//!
//! A remote task that waits for the answer to a tool's question (a
//! `question` data part, QUESTIONS.md §4) becomes a **proxy question**
//! the same way: stored with the remote task and the remote question's
//! uuid, shown here with the chain, and its answer (or its expiry, as
//! `cancel`) sent to the remote task once, marked `relayed` in the
//! transaction that marks the call started. Inside a pipeline node,
//! where nothing can pause on a question, the remote hears `decline`.
//!
//! State is derived from the rows, as in the rest of the turn loop: the
//! call's latest approval (or its latest question) says what to do next.

use super::gate::Gate;
use super::outcome::CallOutcome;
use super::site::{CallSite, Target};
use crate::a2a::{A2aError, Outgoing, RemoteAsk, RemoteQuestion, RemoteReply};
use crate::domain::tools::{Ask, CallContext};
use crate::engine::error::EngineError;
use crate::engine::handle::Engine;
use crate::engine::scope::LocalAction;
use crate::store::approvals::{Approval, NewApproval, RemoteRef};
use crate::store::questions::{Era, NewQuestion, ProxyRef, Round, StoredQuestion};
use app::models::{EventKind, QuestionCall, ToolCall};
use serde_json::Value;

/// How many questions in a row a pipeline node's sub-agent may ask, each
/// declined at once, before the call gives up.
const AUTO_DECLINES: usize = 10;

/// What a send to a sub-agent settles when the call is marked started.
enum Claim {
    /// The call's approval, by its uuid, if it has one (`approved` →
    /// `executing`).
    Approval(Option<String>),
    /// The proxy question whose answer is being sent (→ `relayed`).
    Relay(String),
}

/// The message a call to a sub-agent sends first: its `message` argument.
fn first_message(tc: &ToolCall) -> Outgoing {
    let text = tc
        .arguments
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    Outgoing::new(text)
}

impl Engine {
    /// An unruled call to a sub-agent, as its gate says: denied, asking
    /// for an approval, or sent.
    pub(super) async fn delegate_unruled(
        &self,
        site: CallSite<'_>,
        target: Target<'_>,
        gate: Gate,
    ) -> Result<CallOutcome, EngineError> {
        let tc = site.tc;
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
                let description = format!(
                    "Delegate to the sub-agent `{}`: {}",
                    target.agent,
                    first_message(tc).text
                );
                self.ask(site, (rule, approvers, quorum, expires_in), description)
                    .await
            }
            Gate::Run | Gate::Granted { .. } => {
                let out = first_message(tc);
                if out.text.trim().is_empty() {
                    let text = format!(
                        "Invalid arguments, the sub-agent `{}` was not called: `message` (a non-empty string) is required",
                        target.agent
                    );
                    self.finish_call(site, tc, &text, true, None).await?;
                    return Ok(CallOutcome::AnsweredInStore);
                }
                self.delegate(site, target, Claim::Approval(None), out)
                    .await
            }
        }
    }

    /// An approved call to a sub-agent: its first message is sent (an
    /// approver may have edited it, POLICY.md §3), or, for a proxy
    /// approval, the decision goes to the remote task with the arguments
    /// edited here (the sub-agent checks them against its own schema and
    /// rules).
    pub(super) async fn delegate_approved(
        &self,
        site: CallSite<'_>,
        target: Target<'_>,
        a: Approval,
    ) -> Result<CallOutcome, EngineError> {
        let out = match &a.approval.remote_task_id {
            None => match a
                .approval
                .edited_args
                .as_ref()
                .and_then(|e| e.get("message"))
                .and_then(Value::as_str)
            {
                Some(m) => Outgoing::new(m),
                None => first_message(site.tc),
            },
            Some(task) => {
                let mut out = Outgoing::decision(task, true, a.reason.clone());
                out.arguments = a.approval.edited_args.clone();
                out.approval_uuid = a.remote_approval.clone();
                out
            }
        };
        let claim = Claim::Approval(Some(a.approval.uuid.clone()));
        self.delegate(site, target, claim, out).await
    }

    /// A proxy approval expired here: the sub-agent hears a rejection
    /// saying so, and its own approval ends with ours (POLICY.md §2). A
    /// call whose own approval expired is answered without a send.
    pub(super) async fn delegate_expired(
        &self,
        site: CallSite<'_>,
        target: Target<'_>,
        a: Approval,
    ) -> Result<CallOutcome, EngineError> {
        if let Some(task) = &a.approval.remote_task_id {
            return self.forward_rejection(site, target, task, &a).await;
        }
        let text = super::texts::expired_text(a.reason.as_deref());
        self.finish_call(site, site.tc, &text, true, None).await?;
        Ok(CallOutcome::AnsweredInStore)
    }

    /// A proxy approval rejected (or expired) here: the rejection goes to
    /// the remote task, so the remote agent's model hears it.
    pub(super) async fn forward_rejection(
        &self,
        site: CallSite<'_>,
        target: Target<'_>,
        task: &str,
        a: &Approval,
    ) -> Result<CallOutcome, EngineError> {
        let mut out = Outgoing::decision(task, false, a.reason.clone());
        out.approval_uuid = a.remote_approval.clone();
        self.delegate(site, target, Claim::Approval(None), out)
            .await
    }

    /// Sends the answer of a sub-agent's question on (its expiry or a
    /// cancel as `cancel`), once: the remote task's next answer is the
    /// call's result, or another approval or question.
    pub(super) async fn relay_answer(
        &self,
        site: CallSite<'_>,
        q: StoredQuestion,
    ) -> Result<CallOutcome, EngineError> {
        let action = site.scope.local_tool(&site.tc.name).map(|t| &t.action);
        let (Some(remote), Some(LocalAction::A2a { agent, url })) = (q.remote.clone(), action)
        else {
            let text = "The sub-agent's question was answered, but the sub-agent is no longer configured here: the answer was not sent.";
            self.finish_call(site, site.tc, text, true, None).await?;
            return Ok(CallOutcome::AnsweredInStore);
        };
        let answer = super::question::answer_of(&q);
        let out = Outgoing::answer(
            &remote.task_id,
            &remote.uuid,
            &answer.action,
            answer.content,
        );
        let target = Target { agent, url };
        let claim = Claim::Relay(q.question.uuid.clone());
        self.delegate(site, target, claim, out).await
    }

    /// Sends `out` to the sub-agent, write-ahead (the call is claimed
    /// first: one writer sends), and records its answer: the call's
    /// result, or a proxy approval or question when the remote task waits.
    async fn delegate(
        &self,
        site: CallSite<'_>,
        target: Target<'_>,
        claim: Claim,
        mut out: Outgoing,
    ) -> Result<CallOutcome, EngineError> {
        let store = &self.inner.store;
        let (id, message_id) = (site.conversation_id, site.message_id);
        let (may_run, approval_uuid) = match claim {
            Claim::Approval(uuid) => {
                // An approving decision carries this agent's receipt down.
                let mint = self
                    .inner
                    .receipts
                    .get()
                    .filter(|_| uuid.is_some() && matches!(out.decision, Some((true, _))))
                    .map(|i| i.mint_from_row(target.agent));
                let claimed = store.claim_call(id, message_id, uuid.clone(), mint).await?;
                let may = claimed.is_some();
                out.receipt = claimed.and_then(|c| c.receipt);
                (may, uuid)
            }
            Claim::Relay(uuid) => (store.claim_relay(id, message_id, &uuid).await?, None),
        };
        if !may_run {
            return Ok(CallOutcome::AnsweredInStore);
        }
        tracing::info!(agent = %target.agent, task = out.task_id.as_deref().unwrap_or("-"), "delegating to a sub-agent");
        let (tool, node) = (site.tc.name.clone(), site.scope.node_name());
        self.inner.events.emit(EventKind::ToolCallStarted, id, |e| {
            e.running = Some(true);
            e.tool = Some(tool.clone());
            e.approval = approval_uuid.clone();
            e.node = node.clone();
        });
        let sent = self.send_to_agent(site, target, &out).await;
        self.take_reply(site, target, sent, approval_uuid).await
    }

    /// Sends `out` and returns the sub-agent's reply: once more when a
    /// held card was accepted meanwhile, and, inside a pipeline node
    /// (where nothing can pause on a question), with each question the
    /// remote asks declined at once, up to [`AUTO_DECLINES`].
    async fn send_to_agent(
        &self,
        site: CallSite<'_>,
        target: Target<'_>,
        out: &Outgoing,
    ) -> Result<RemoteReply, A2aError> {
        let agent_ctx = self.ctx_for_agent(target.agent, site.ctx);
        let span = tracing::info_span!(
            "a2a.delegate",
            sid = %site.ctx.session_id,
            agent = %target.agent,
            tool = %site.tc.name,
            outcome = tracing::field::Empty,
        );
        let mut sent = self.send_once(target, out, &agent_ctx, &span).await;
        // What the card read (if one was) showed is recorded; a held card
        // an admin accepted on another replica lets the call go on.
        if self
            .note_card(target.agent, target.url, sent.as_ref().err())
            .await
        {
            sent = self.send_once(target, out, &agent_ctx, &span).await;
        }
        let mut declined = 0;
        while let Ok(RemoteReply::NeedsAnswer(q)) = &sent
            && !self.asks_humans(site.scope)
        {
            if declined == AUTO_DECLINES {
                sent = Err(A2aError::Protocol(format!(
                    "it asked {AUTO_DECLINES} questions in a row, each declined here (a pipeline node cannot wait for an answer)"
                )));
                break;
            }
            declined += 1;
            let decline = Outgoing::answer(&q.task_id, &q.uuid, "decline", None);
            sent = self.send_once(target, &decline, &agent_ctx, &span).await;
        }
        let waits = matches!(
            sent,
            Ok(RemoteReply::NeedsApproval(_) | RemoteReply::NeedsAnswer(_))
        );
        span.record(
            "outcome",
            match &sent {
                Ok(RemoteReply::Done(_)) => "completed",
                Ok(_) => "input_required",
                Err(_) => "error",
            },
        );
        if !waits {
            crate::telemetry::metrics::get().tool_call(&site.tc.name, target.agent, sent.is_ok());
        }
        sent
    }

    /// One send to the sub-agent, under the delegation's span.
    async fn send_once(
        &self,
        target: Target<'_>,
        out: &Outgoing,
        ctx: &CallContext,
        span: &tracing::Span,
    ) -> Result<RemoteReply, A2aError> {
        let send = self.inner.a2a.send(target.url, out, ctx);
        tracing::Instrument::instrument(send, span.clone()).await
    }

    /// Records what the sub-agent answered: its text is the call's result
    /// (an error too, saying why); a remote task that waits becomes a
    /// proxy question or a proxy approval on the call.
    async fn take_reply(
        &self,
        site: CallSite<'_>,
        target: Target<'_>,
        sent: Result<RemoteReply, A2aError>,
        approval_uuid: Option<String>,
    ) -> Result<CallOutcome, EngineError> {
        let tc = site.tc;
        match sent {
            Ok(RemoteReply::Done(text)) => {
                self.finish_call(site, tc, &text, false, approval_uuid)
                    .await?;
                Ok(CallOutcome::AnsweredInStore)
            }
            Err(e) => {
                let mut text = format!("sub-agent {} unavailable: {e}", target.agent);
                if let A2aError::Untrusted { card: Some(_), .. } = &e {
                    text.push_str(&format!(
                        " (an admin can accept the card held: POST /tools/a2a_{}/accept)",
                        target.agent
                    ));
                }
                tracing::warn!(agent = %target.agent, error = %e, "sub-agent call failed");
                self.finish_call(site, tc, &text, true, approval_uuid)
                    .await?;
                Ok(CallOutcome::AnsweredInStore)
            }
            Ok(RemoteReply::NeedsAnswer(q)) => self.ask_proxy(site, q, approval_uuid, target).await,
            Ok(RemoteReply::NeedsApproval(ask)) => {
                self.approve_proxy(site, ask, approval_uuid, target).await
            }
        }
    }

    /// Stores a sub-agent's approval request as a proxy approval on the
    /// call and pauses the turn on it. The send is done: the call's own
    /// approval (if any) is executed in the same transaction, and the call
    /// rests until the proxy approval is decided.
    async fn approve_proxy(
        &self,
        site: CallSite<'_>,
        ask: RemoteAsk,
        approval_uuid: Option<String>,
        target: Target<'_>,
    ) -> Result<CallOutcome, EngineError> {
        let mut chain = vec![target.agent.to_string()];
        chain.extend(ask.chain.iter().cloned());
        let new = NewApproval {
            conversation_id: site.conversation_id.to_string(),
            message_id: site.message_id.to_string(),
            tool_name: ask.tool.clone().unwrap_or_else(|| "input".into()),
            server: Some(target.agent.to_string()),
            tool_args: ask.arguments.clone(),
            description: ask.description.clone(),
            remote: Some(RemoteRef {
                task_id: ask.task_id.clone(),
                agent: target.agent.to_string(),
                chain,
                approval: ask.approval_uuid.clone(),
            }),
            traceparent: crate::telemetry::current_traceparent(),
            rule: Some("proxy".into()),
            approvers: Vec::new(),
            quorum: 1,
            // A proxy approval waits as long as ours would.
            expires_in: self.policy().expires_in,
        };
        let handed_over = crate::store::HandedOver {
            message_id: site.message_id.to_string(),
            approval_uuid,
        };
        let pending = self.request_approval(site, new, Some(handed_over)).await?;
        Ok(CallOutcome::AwaitsApproval(Box::new(pending)))
    }

    /// Stores a sub-agent's question on the call (which rests, its
    /// approval done, like a round's) and pauses the turn on it.
    async fn ask_proxy(
        &self,
        site: CallSite<'_>,
        q: RemoteQuestion,
        approval_uuid: Option<String>,
        target: Target<'_>,
    ) -> Result<CallOutcome, EngineError> {
        let mut chain = vec![target.agent.to_string()];
        chain.extend(q.chain.iter().cloned());
        let new = NewQuestion {
            conversation_id: site.conversation_id.to_string(),
            message_id: site.message_id.to_string(),
            call: QuestionCall {
                tool: q.tool.clone().unwrap_or_else(|| site.tc.name.clone()),
                server: Some(target.agent.to_string()),
                arguments: Value::Object(Default::default()),
            },
            ask: Ask {
                key: None,
                kind: q.kind,
                message: q.message,
                schema: q.schema,
                url: q.url,
                elicitation_id: None,
            },
            // A proxy question waits as long as ours would.
            expires_in: self.inner.config.questions.lifetime(None),
            chain,
            remote: Some(ProxyRef {
                agent: target.agent.to_string(),
                task_id: q.task_id,
                uuid: q.uuid,
            }),
        };
        let stored = self
            .inner
            .store
            .ask_round(vec![new], Round::default(), approval_uuid, Era::Proxy)
            .await?;
        let Some(first) = stored.into_iter().next() else {
            return Err(EngineError::Task("a proxy question was not stored".into()));
        };
        self.announce_question(&first.question, false);
        Ok(CallOutcome::AwaitsAnswer(Box::new(first.question)))
    }
}
