//! One AG-UI run (CLIENTS.md §3): the thread's conversation, the client's
//! answers to its open interrupts, the user messages it has not stored,
//! then the conversation once the turn has settled.
//!
//! Key decisions: a `threadId` is recorded as the conversation's context
//! (`ag-ui:<threadId>`) in the transaction that opens it, and reusing one
//! follows REST's principal rules (another principal's thread is "not
//! found"). Every resume entry for an open interrupt is checked before any
//! is decided, and one that misses an open interrupt refuses the run, so a
//! refused run decides nothing. An entry for an interrupt no longer open
//! (replayed, or decided elsewhere) decides nothing; the run streams what
//! followed the interrupt, as the client has not seen it. A user message is stored with the client's id
//! as its `client_id`, which is how a later run (carrying the whole
//! history, as AG-UI clients do) knows it is not new.

use super::resume::{answer_of, decision_of};
use super::run::{Interrupt, ResumeEntry, RunRequest, RunView, Seen, UserInput, pause_of};
use crate::domain::channel::Channel;
use crate::domain::tools::CallContext;
use crate::engine::error::EngineError;
use crate::engine::handle::Engine;
use crate::engine::mcp_endpoint::reply::Pause;
use app::models::Conversation;

/// The AG-UI back end: the engine it drives.
#[derive(Clone)]
pub(crate) struct AgUi {
    engine: Engine,
}

impl AgUi {
    pub(crate) fn new(engine: Engine) -> AgUi {
        AgUi { engine }
    }

    /// Runs `req` for the caller in `ctx`.
    pub(crate) async fn run(
        &self,
        req: RunRequest,
        mut ctx: CallContext,
    ) -> Result<RunView, EngineError> {
        ctx.via = Channel::AgUi;
        let context = format!("ag-ui:{}", req.thread_id);
        let mut id = self.engine.store().by_context(&context).await?;
        let before = match &id {
            Some(cid) => {
                self.engine.may_continue(cid, &ctx).await?;
                Some(crate::engine::commands::load(self.engine.store(), cid).await?)
            }
            None => None,
        };
        let mut seen = Seen::of(before.as_ref());
        if let Some(c) = &before {
            for e in &req.resume {
                seen.resume_from(c, &e.interrupt_id);
            }
        }
        let known: Vec<String> = before
            .iter()
            .flat_map(|c| c.messages.iter().filter_map(|m| m.client_id.clone()))
            .collect();
        let new: Vec<&UserInput> = req
            .messages
            .iter()
            .filter(|m| !known.contains(&m.id))
            .collect();
        match &before {
            Some(c) => self.resume(c, &req.resume, !new.is_empty(), &ctx).await?,
            None if !req.resume.is_empty() => {
                return Err(EngineError::Invalid(format!(
                    "thread {:?} has no interrupt to resume: it has no conversation yet",
                    req.thread_id
                )));
            }
            None => {}
        }
        if !new.is_empty() && !req.may_send {
            return Err(EngineError::Forbidden(
                "adding a message to a thread needs the role requester".into(),
            ));
        }
        for m in new {
            ctx.message_id = Some(m.id.clone());
            match &id {
                None => {
                    let (c, _) = self
                        .engine
                        .start_in_context(Some(m.text.clone()), Some(context.clone()), ctx.clone())
                        .await?;
                    id = Some(c.id);
                }
                Some(cid) => match self
                    .engine
                    .send_message(cid, m.text.clone(), ctx.clone())
                    .await
                {
                    Ok(_) => {}
                    // Paused again: the rest waits for the next run, which
                    // still finds them new.
                    Err(EngineError::WaitingApproval { .. } | EngineError::WaitingInput { .. }) => {
                        break;
                    }
                    Err(e) => return Err(e),
                },
            }
        }
        let Some(cid) = id else {
            return Err(EngineError::Invalid(
                "a run on a new thread needs a user message in `messages`".into(),
            ));
        };
        let conversation = self.engine.settled(&cid).await?;
        let interrupts = self.interrupts(&conversation);
        Ok(RunView {
            conversation,
            seen,
            interrupts,
        })
    }

    /// What `c` waits on, as interrupts.
    pub(crate) fn interrupts(&self, c: &Conversation) -> Vec<Interrupt> {
        pause_of(c)
            .map(|pause| {
                let editable = match &pause {
                    Pause::Approval(a) => self.engine.may_edit(a),
                    Pause::Question(_) => false,
                };
                Interrupt { pause, editable }
            })
            .into_iter()
            .collect()
    }

    /// Decides what the resume entries answer. Every open interrupt must
    /// be addressed when the run resumes or adds a message; all entries are
    /// checked before the first is decided.
    async fn resume(
        &self,
        c: &Conversation,
        entries: &[ResumeEntry],
        adds_message: bool,
        ctx: &CallContext,
    ) -> Result<(), EngineError> {
        let open = self.interrupts(c);
        if open.is_empty() || (entries.is_empty() && !adds_message) {
            // Nothing waits (entries for interrupts settled already decide
            // nothing), or a plain re-run: the interrupts are shown again.
            return Ok(());
        }
        let missing: Vec<&str> = open
            .iter()
            .map(Interrupt::id)
            .filter(|id| !entries.iter().any(|e| e.interrupt_id == *id))
            .collect();
        if !missing.is_empty() {
            return Err(EngineError::Invalid(format!(
                "the thread waits on interrupt(s) {}: a run must resume every open interrupt (resume: [{{interruptId, status, payload}}]) before it goes on",
                missing.join(", ")
            )));
        }
        let mut steps = Vec::new();
        for i in &open {
            let Some(e) = entries.iter().find(|e| e.interrupt_id == i.id()) else {
                continue;
            };
            steps.push(match &i.pause {
                Pause::Approval(a) => Step::Decide(a.uuid.clone(), decision_of(e, i.editable)?),
                Pause::Question(q) => Step::Answer(q.uuid.clone(), answer_of(e)?),
            });
        }
        for step in steps {
            let done = match step {
                Step::Decide(uuid, d) => self.engine.decide(&uuid, d, ctx.clone()).await,
                Step::Answer(uuid, a) => self.engine.answer(&uuid, a, ctx.clone()).await,
            };
            match done {
                Ok(_) => {}
                // Settled elsewhere meanwhile: the run shows it as it is.
                Err(EngineError::AlreadyDecided { .. } | EngineError::AlreadyAnswered { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// One checked resume entry, ready to go through the engine.
enum Step {
    Decide(String, crate::engine::DecisionRequest),
    Answer(String, crate::engine::Answer),
}
