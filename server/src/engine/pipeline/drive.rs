//! The entry point of a pipeline turn, `Engine::drive_pipeline`, in its
//! named steps: the state to start from (a paused run of this turn going
//! on, or a new run for the turn's message), running the root, and
//! recording how the run ended.

use super::kinds::run_kind;
use super::resume::{end_unresumable, mismatch};
use super::run::{NodeEnd, Run, run_node};
use crate::domain::tools::CallContext;
use crate::engine::error::EngineError;
use crate::engine::handle::Engine;
use crate::engine::outcome::TurnOutcome;
use crate::engine::tree::Pipeline;
use crate::store::{NewMessage, StoredMessage};
use app::models::{ConversationStatus, PendingApproval, Role};
use app::pipeline::{PIPELINE_STATE_VERSION, PendingCall, PipelineState, RunStatus};
use std::ops::ControlFlow;
use std::sync::Arc;

impl Engine {
    /// Runs (or resumes) the pipeline for the conversation's latest message.
    pub(crate) async fn drive_pipeline(
        &self,
        conversation_id: &str,
        ctx: &CallContext,
    ) -> Result<TurnOutcome, EngineError> {
        let Some(pipeline) = self.inner.pipeline.clone() else {
            return Err(EngineError::Task("no pipeline is configured".into()));
        };
        let (stored, ps) = self.inner.store.messages_and_run(conversation_id).await?;
        let Some(start) = stored.iter().rposition(|m| m.message.role == Role::User) else {
            return Err(EngineError::Invalid(
                "the conversation has no message to answer".into(),
            ));
        };
        let turn = &stored[start..];
        let this_turn = ps
            .as_ref()
            .filter(|p| p.turn == turn[0].message.id)
            .cloned();
        let state = match this_turn {
            Some(ps) => match self.resumed_state(conversation_id, &pipeline, ps).await? {
                ControlFlow::Continue(state) => state,
                ControlFlow::Break(waiting) => return Ok(waiting),
            },
            None => {
                self.fresh_state(conversation_id, &pipeline, turn, ps)
                    .await?
            }
        };
        let run = Arc::new(Run::new(
            self.clone(),
            conversation_id,
            ctx.clone(),
            state,
            run_kind,
        ));
        run.update(|_| (), None).await?;
        let root_key = pipeline.root.cfg.name.clone();
        let end = run_node(run.clone(), pipeline.root.clone(), root_key, None).await;
        self.end_run(&run, conversation_id, end).await
    }

    /// The run paused in this turn, going on; or, while an approval of
    /// the pause is still undecided, the turn waiting again.
    async fn resumed_state(
        &self,
        conversation_id: &str,
        pipeline: &Pipeline,
        ps: PipelineState,
    ) -> Result<ControlFlow<TurnOutcome, PipelineState>, EngineError> {
        if let Some(why) = mismatch(&ps, Some(pipeline)) {
            return Err(end_unresumable(self, conversation_id, Some(ps), why).await?);
        }
        // Every approval of the pause must be decided before it goes on.
        let uuids: Vec<String> = ps.pending.iter().map(|p| p.approval.clone()).collect();
        let still = self.inner.store.first_pending(uuids).await?;
        if let Some(a) = still {
            self.inner.store.pause_turn(conversation_id).await?;
            self.emit_status(
                conversation_id,
                Some(ConversationStatus::WaitingApproval),
                false,
            );
            return Ok(ControlFlow::Break(TurnOutcome::Waiting(Box::new(a))));
        }
        Ok(ControlFlow::Continue(PipelineState {
            status: RunStatus::Running,
            pending: Vec::new(),
            ..ps
        }))
    }

    /// A new run for the turn's user message (`turn[0]`, followed by what
    /// the turn stored since), keeping the session state of an earlier
    /// run (`ps`).
    async fn fresh_state(
        &self,
        conversation_id: &str,
        pipeline: &Pipeline,
        turn: &[StoredMessage],
        ps: Option<PipelineState>,
    ) -> Result<PipelineState, EngineError> {
        if turn[1..].iter().any(|m| m.node_run.is_none()) {
            let why = "this conversation paused in simple mode, but the agent now runs a pipeline (an `agent:` tree was added to the config)".to_string();
            return Err(end_unresumable(self, conversation_id, None, why).await?);
        }
        let user = &turn[0];
        let mut state = ps.map(|p| p.state).unwrap_or_default();
        state.insert(
            crate::config::USER_MESSAGE_KEY.to_string(),
            user.message.content.clone(),
        );
        Ok(PipelineState {
            version: PIPELINE_STATE_VERSION,
            shape: pipeline.shape.clone(),
            status: RunStatus::Running,
            turn: user.message.id.clone(),
            user_message: user.message.content.clone(),
            state,
            nodes: Vec::new(),
            pending: Vec::new(),
            output: None,
            error: None,
            updated_at: crate::domain::ids::now(),
        })
    }

    /// Records how the run ended (its status, output, pending calls or
    /// error) and ends or pauses the turn accordingly.
    async fn end_run(
        &self,
        run: &Run,
        conversation_id: &str,
        end: Result<NodeEnd, EngineError>,
    ) -> Result<TurnOutcome, EngineError> {
        match end {
            Ok(NodeEnd::Done { output, .. }) => {
                let out = output.clone();
                run.update(
                    move |s| {
                        s.status = RunStatus::Completed;
                        s.output = Some(out);
                    },
                    None,
                )
                .await?;
                self.inner.store.end_turn(conversation_id).await?;
                Ok(TurnOutcome::Done(output, None))
            }
            Ok(NodeEnd::Stopped(text)) => {
                let (out, note) = (text.clone(), text.clone());
                run.update(
                    move |s| {
                        s.status = RunStatus::Stopped;
                        s.output = Some(out);
                    },
                    Some(NewMessage::text(Role::System, note)),
                )
                .await?;
                self.inner.store.end_turn(conversation_id).await?;
                Ok(TurnOutcome::Done(text, None))
            }
            Ok(NodeEnd::Paused(list)) => self.pause_run(run, conversation_id, list).await,
            Err(e) => {
                let why = e.to_string();
                let r = run
                    .update(
                        move |s| {
                            s.status = RunStatus::Failed;
                            s.error = Some(why);
                        },
                        None,
                    )
                    .await;
                if let Err(store_error) = r {
                    tracing::error!(error = %store_error, "could not record the failed run");
                }
                Err(e)
            }
        }
    }

    /// The run paused on these calls: they are recorded, and the turn
    /// waits for the first one's approval.
    async fn pause_run(
        &self,
        run: &Run,
        conversation_id: &str,
        list: Vec<(PendingCall, PendingApproval)>,
    ) -> Result<TurnOutcome, EngineError> {
        let first = list
            .first()
            .map(|(_, a)| a.clone())
            .ok_or_else(|| EngineError::Task("a pause without an approval".into()))?;
        let calls: Vec<PendingCall> = list.into_iter().map(|(c, _)| c).collect();
        run.update(
            move |s| {
                s.status = RunStatus::Paused;
                s.pending = calls;
            },
            None,
        )
        .await?;
        self.inner.store.pause_turn(conversation_id).await?;
        self.emit_status(
            conversation_id,
            Some(ConversationStatus::WaitingApproval),
            false,
        );
        Ok(TurnOutcome::Waiting(Box::new(first)))
    }
}
