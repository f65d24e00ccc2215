//! The tool loop of one scope: model → tools → model … until the model
//! answers, a call waits, or the scope ends otherwise. Each pass derives
//! what to do next from the stored messages: an unanswered call goes to
//! `calls::handle_call` (which computes its state once), otherwise the
//! model is asked.

use super::step::Step;
use crate::domain::tools::CallContext;
use crate::engine::calls::outcome::{CallOutcome, CallResult};
use crate::engine::calls::state::Known;
use crate::engine::error::EngineError;
use crate::engine::handle::Engine;
use crate::engine::scope::{EXIT_LOOP, Scope};
use crate::store::approvals::Approval;
use crate::store::{NewMessage, StoredMessage};
use app::models::{Conversation, EventKind, PendingApproval, Question, Role};
use tokio_util::sync::CancellationToken;

/// How a tool loop ended.
#[derive(Clone, Debug)]
pub(crate) enum ScopeEnd {
    /// The model answered with text.
    Done(String),
    /// Simple mode: the model answered with text, and the conversation as
    /// the final write left it (read in that write's transaction, so the
    /// reply needs no read of its own).
    Answered(String, Box<Conversation>),
    /// A destructive call waits for an operator.
    Waiting(Box<PendingApproval>),
    /// A call asked the human something and waits for the answer.
    Asking(Box<Question>),
    /// The model called `exit_loop` (its text, if any).
    ExitLoop(String),
    /// A call was rejected and the node says `on_reject: stop`.
    Stopped(String),
}

/// What this turn wrote itself under its lease, so the loop needs no read
/// of it: only in simple mode for the messages and the decision (the turn
/// holds the conversation's lease, nothing else wrote since); in every
/// scope for the step it just recorded (its calls were written here and
/// nobody has ruled on them).
struct Written {
    /// The messages as this turn's last commit left them. (The engine's
    /// view: the call times it never reads are not kept.)
    messages: Option<Vec<StoredMessage>>,
    /// The step this loop just recorded.
    step: Option<String>,
    /// The approval a decision just moved on: handed to its call instead
    /// of read again.
    decided: Option<Approval>,
}

impl Written {
    fn new(scope: &Scope, known: Option<Vec<StoredMessage>>, decided: Option<Approval>) -> Self {
        Written {
            messages: known.filter(|_| scope.node.is_none()),
            step: None,
            decided: decided.filter(|_| scope.node.is_none()),
        }
    }

    /// What the turn knows of `call`'s rows without reading them.
    fn known(&mut self, call: &StoredMessage) -> Known {
        if self.step.is_some() && call.step == self.step {
            return Known::RecordedHere;
        }
        match self.decided.take_if(|a| a.message_id == call.message.id) {
            Some(a) => Known::Decided(Box::new(a)),
            None => Known::Nothing,
        }
    }
}

/// `stored` with the result of call `message_id` as its commit wrote it
/// (`store::messages::with_result`: the result and whether it failed,
/// nothing else the loop reads). `None` if the call is not in it: the loop
/// then reads, and never sees the call unanswered (it would run again).
fn answered(
    mut stored: Vec<StoredMessage>,
    message_id: &str,
    result: CallResult,
) -> Option<Vec<StoredMessage>> {
    let call = stored
        .iter_mut()
        .find(|m| m.message.id == message_id)
        .and_then(|m| m.message.tool_call.as_mut())?;
    call.result = Some(result.text);
    call.is_error = Some(result.is_error);
    Some(stored)
}

/// Model steps taken in this scope: distinct `step` ids.
fn count_steps(turn: &[&StoredMessage]) -> usize {
    let mut seen: Vec<&str> = Vec::new();
    for m in turn {
        if let Some(s) = m.step.as_deref()
            && !seen.contains(&s)
        {
            seen.push(s);
        }
    }
    seen.len()
}

impl Engine {
    /// The tool loop of one scope: model → tools → model … until the model
    /// answers, a call waits for approval, or the scope ends otherwise.
    /// Re-reads the conversation before each step, so it resumes from
    /// whatever the last commit left, except where this turn made that
    /// commit itself under its lease ([`Written`]): `known`, the messages
    /// of a conversation created for this turn; `decided`, the approval
    /// the decision that resumed it left.
    pub(crate) async fn run_scope(
        &self,
        conversation_id: &str,
        scope: &Scope,
        ctx: &CallContext,
        known: Option<Vec<StoredMessage>>,
        decided: Option<Approval>,
    ) -> Result<ScopeEnd, EngineError> {
        let cancelled = self.inner.turns.token(conversation_id);
        let mut written = Written::new(scope, known, decided);
        loop {
            // A cancel is seen between steps: a tool that started finishes
            // and its result is kept.
            if cancelled.is_cancelled() {
                return Err(EngineError::Cancelled(conversation_id.to_string()));
            }
            let stored = match written.messages.take() {
                Some(stored) => stored,
                None => self.inner.store.messages(conversation_id).await?,
            };
            let start = stored
                .iter()
                .rposition(|m| m.message.role == Role::User)
                .unwrap_or(0);
            let mine: Vec<&StoredMessage> =
                stored[start..].iter().filter(|m| scope.owns(m)).collect();

            if let Some(call) = mine.iter().find(|m| m.is_unanswered_call()) {
                let known = written.known(call);
                let fresh = matches!(known, Known::RecordedHere);
                let message_id = call.message.id.clone();
                match self
                    .handle_call(conversation_id, call, scope, ctx, known)
                    .await?
                {
                    CallOutcome::AwaitsApproval(a) => return Ok(ScopeEnd::Waiting(a)),
                    CallOutcome::AwaitsAnswer(q) => return Ok(ScopeEnd::Asking(q)),
                    // Its result is the one write since `stored` (the
                    // call was recorded by this turn, so nobody else could
                    // rule on it): the next pass goes on without a read.
                    CallOutcome::Ran(result) if fresh && scope.node.is_none() => {
                        written.messages = answered(stored, &message_id, result);
                    }
                    CallOutcome::Ran(_) | CallOutcome::AnsweredInStore => {}
                }
                continue;
            }
            if let Some(end) = self.scope_ended(conversation_id, scope, &mine).await? {
                return Ok(end);
            }
            let steps = count_steps(&mine);
            let step = crate::domain::ids::new_id();
            let recorded = self
                .model_step(
                    conversation_id,
                    scope,
                    ctx,
                    (&stored, start, &mine),
                    steps,
                    &step,
                    &cancelled,
                )
                .await?;
            // A final answer ends the scope without another read.
            match recorded {
                Step::Final(text, Some(c)) => return Ok(ScopeEnd::Answered(text, c)),
                Step::Final(text, None) => return Ok(ScopeEnd::Done(text)),
                Step::Calls(calls) => {
                    written.step = Some(step);
                    if scope.node.is_none() {
                        let mut next = stored;
                        next.extend(calls);
                        written.messages = Some(next);
                    }
                }
            }
        }
    }

    /// How the scope ends when no call is unanswered, if it ends: a
    /// rejected call under `on_reject: stop`, `exit_loop`, the model's
    /// last answer, or `llm.max_steps` reached (noted in the conversation).
    async fn scope_ended(
        &self,
        conversation_id: &str,
        scope: &Scope,
        mine: &[&StoredMessage],
    ) -> Result<Option<ScopeEnd>, EngineError> {
        let store = &self.inner.store;
        if scope.stop_on_reject
            && let Some(text) = self.rejected_in(mine).await?
        {
            return Ok(Some(ScopeEnd::Stopped(text)));
        }
        if mine.iter().any(|m| {
            m.message
                .tool_call
                .as_ref()
                .is_some_and(|t| t.name == EXIT_LOOP)
        }) {
            let last_text = mine
                .iter()
                .rev()
                .find(|m| m.message.role == Role::Assistant)
                .map(|m| m.message.content.clone());
            return Ok(Some(ScopeEnd::ExitLoop(
                last_text.unwrap_or_else(|| "Exited the loop.".into()),
            )));
        }
        if let Some(last) = mine
            .iter()
            .rev()
            .find(|m| m.message.role != Role::System)
            .filter(|m| m.message.role == Role::Assistant)
        {
            if scope.owns_status() {
                store.end_turn(conversation_id).await?;
            }
            return Ok(Some(ScopeEnd::Done(last.message.content.clone())));
        }
        let steps = count_steps(mine);
        let max = self.inner.config.llm.max_steps as usize;
        if steps >= max {
            let note = format!(
                "Stopped: the model made {steps} calls in this turn without finishing (llm.max_steps is {max}). \
                 Send another message to let it go on."
            );
            let m = NewMessage::text(Role::System, note.clone()).in_node(scope.node.as_ref());
            store
                .add_note(conversation_id, m, scope.owns_status())
                .await?;
            return Ok(Some(ScopeEnd::Done(note)));
        }
        Ok(None)
    }

    /// Asks the scope's model for step `steps + 1` and records its answer
    /// as step `step`; a failed model call is noted in the conversation
    /// and ends the turn with the error. `(stored, start, mine)`: the
    /// messages, where this turn starts in them, and the scope's own.
    #[allow(clippy::too_many_arguments)]
    async fn model_step(
        &self,
        conversation_id: &str,
        scope: &Scope,
        ctx: &CallContext,
        (stored, start, mine): (&[StoredMessage], usize, &[&StoredMessage]),
        steps: usize,
        step: &str,
        cancelled: &CancellationToken,
    ) -> Result<Step, EngineError> {
        let store = &self.inner.store;
        let Some(llm) = scope.llm.clone() else {
            return Err(EngineError::Task(
                "this node has no model to ask".to_string(),
            ));
        };
        let max = self.inner.config.llm.max_steps as usize;
        self.inner
            .events
            .emit(EventKind::ModelCalled, conversation_id, |e| {
                e.running = Some(true);
                e.node = scope.node_name();
                e.detail = Some(format!("step {} of at most {max}", steps + 1));
            });
        let tools = self.scope_tools(scope);
        let messages = super::model::request_messages(scope, stored, start, mine);
        let answer = self
            .ask_model(&llm, scope, ctx, messages, &tools, cancelled)
            .await
            .ok_or_else(|| EngineError::Cancelled(conversation_id.to_string()))?;
        match answer {
            Ok(resp) => Ok(self
                .record_step(conversation_id, resp, &tools, scope, step)
                .await?),
            Err(error) => {
                tracing::warn!(conversation = %conversation_id, node = scope.node_name().as_deref().unwrap_or("-"), error = %error, "model call failed");
                let text = match &scope.node {
                    Some(t) => format!("The model call of node `{}` failed: {error}", t.name),
                    None => format!("The model call failed: {error}"),
                };
                let note = NewMessage::text(Role::System, text).in_node(scope.node.as_ref());
                store.fail_turn(conversation_id, note).await?;
                let conversation = crate::engine::commands::load(store, conversation_id).await?;
                Err(EngineError::Llm {
                    error,
                    conversation: Box::new(conversation),
                })
            }
        }
    }
}
