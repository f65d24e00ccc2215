//! One turn's run of the tree: its state written whenever a node starts,
//! finishes or pauses, the wrapper every node goes through, and the entry
//! point that runs (or resumes) the pipeline.

use super::Node;
use super::resume::{end_unresumable, mismatch};
use crate::config::NodeKind;
use crate::domain::BoxFuture;
use crate::engine::{Ctx, Engine, EngineError, TurnOutcome};
use crate::store::{NewMessage, NodeTag};
use app::models::{ConversationStatus, EventKind, PendingApproval, Role};
use app::pipeline::{NodeRun, PIPELINE_STATE_VERSION, PendingCall, PipelineState, RunStatus};
use std::sync::Arc;

/// How a node run ended.
#[derive(Debug)]
pub(crate) enum NodeEnd {
    Done {
        output: String,
        exit_loop: bool,
    },
    /// Waiting for these approvals (with the node run that asked).
    Paused(Vec<(PendingCall, PendingApproval)>),
    /// A rejected call ended the pipeline.
    Stopped(String),
}

/// One turn's run of the pipeline.
pub(crate) struct Run {
    pub(crate) engine: Engine,
    pub(crate) conversation_id: String,
    pub(crate) ctx: Ctx,
    state: tokio::sync::Mutex<PipelineState>,
}

impl Run {
    /// Applies `f` to the run's state and commits it (with `note`, a message
    /// to append in the same transaction). The lock is held across the
    /// commit so concurrent branches write their changes in order.
    pub(crate) async fn update<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut PipelineState) -> T,
        note: Option<NewMessage>,
    ) -> Result<T, EngineError> {
        let mut state = self.state.lock().await;
        let out = f(&mut state);
        state.updated_at = crate::domain::ids::now();
        self.engine
            .inner
            .store
            .save_pipeline(&self.conversation_id, state.clone(), note)
            .await?;
        Ok(out)
    }

    /// A copy of the current state.
    pub(crate) async fn snapshot(&self) -> PipelineState {
        self.state.lock().await.clone()
    }

    fn emit(&self, kind: EventKind, node: &str, detail: Option<String>) {
        self.engine
            .inner
            .events
            .emit(kind, &self.conversation_id, |e| {
                e.running = Some(true);
                e.node = Some(node.to_string());
                e.detail = detail;
            });
    }

    /// Records that a node run starts (or resumes).
    async fn start(
        &self,
        node: &Node,
        key: &str,
        iteration: Option<u32>,
    ) -> Result<(), EngineError> {
        let fresh = self.snapshot().await.run(key).is_none();
        let tag = NodeTag {
            name: node.cfg.name.clone(),
            run: key.to_string(),
        };
        let note = fresh.then(|| {
            let it = iteration
                .map(|i| format!(", iteration {i}"))
                .unwrap_or_default();
            NewMessage::text(
                Role::System,
                format!(
                    "`{}` ({}{it}) started",
                    node.cfg.name,
                    node.cfg.kind.as_str()
                ),
            )
            .in_node(Some(&tag))
        });
        let run = NodeRun {
            run: key.to_string(),
            node: node.cfg.name.clone(),
            kind: node.cfg.kind.as_str().to_string(),
            path: node.path.clone(),
            iteration,
            status: RunStatus::Running,
            output: None,
            exit_loop: false,
            started_at: crate::domain::ids::now(),
            finished_at: None,
        };
        let key = key.to_string();
        self.update(
            move |s| match s.nodes.iter_mut().find(|n| n.run == key) {
                Some(existing) => existing.status = RunStatus::Running,
                None => s.nodes.push(run),
            },
            note,
        )
        .await?;
        self.emit(
            EventKind::NodeStarted,
            &node.cfg.name,
            iteration.map(|i| format!("iteration {i}")),
        );
        Ok(())
    }

    /// Records how a node run ended, and its output in the session state.
    async fn finish(&self, node: &Node, key: &str, end: &NodeEnd) -> Result<(), EngineError> {
        let (status, output, exit_loop) = match end {
            NodeEnd::Done { output, exit_loop } => {
                (RunStatus::Completed, Some(output.clone()), *exit_loop)
            }
            NodeEnd::Paused(_) => (RunStatus::Paused, None, false),
            NodeEnd::Stopped(text) => (RunStatus::Stopped, Some(text.clone()), false),
        };
        let tag = NodeTag {
            name: node.cfg.name.clone(),
            run: key.to_string(),
        };
        let note = (status == RunStatus::Completed).then(|| {
            let into = node
                .cfg
                .output_key
                .as_deref()
                .map(|k| format!(" → `{{{k}}}`"))
                .unwrap_or_default();
            NewMessage::text(Role::System, format!("`{}` finished{into}", node.cfg.name))
                .in_node(Some(&tag))
        });
        let (key_s, out_key) = (key.to_string(), node.cfg.output_key.clone());
        let out = output.clone();
        self.update(
            move |s| {
                if let Some(r) = s.nodes.iter_mut().find(|n| n.run == key_s) {
                    r.status = status;
                    r.output = out.clone();
                    r.exit_loop = exit_loop;
                    if status != RunStatus::Paused {
                        r.finished_at = Some(crate::domain::ids::now());
                    }
                }
                if status == RunStatus::Completed
                    && let (Some(k), Some(v)) = (out_key, out)
                {
                    s.state.insert(k, v);
                }
            },
            note,
        )
        .await?;
        self.emit(
            EventKind::NodeFinished,
            &node.cfg.name,
            Some(status.as_str().to_string()),
        );
        Ok(())
    }

    /// Marks a node run failed (best effort: the error itself is what matters).
    async fn fail(&self, node: &Node, key: &str) {
        let key_s = key.to_string();
        let r = self
            .update(
                move |s| {
                    if let Some(r) = s.nodes.iter_mut().find(|n| n.run == key_s) {
                        r.status = RunStatus::Failed;
                        r.finished_at = Some(crate::domain::ids::now());
                    }
                },
                None,
            )
            .await;
        if let Err(e) = r {
            tracing::warn!(node = %node.cfg.name, error = %e, "could not record a failed node");
        }
        self.emit(
            EventKind::NodeFinished,
            &node.cfg.name,
            Some("failed".into()),
        );
    }
}

/// The key of a child's run: the parent's key plus the child's name, with
/// the loop iteration when the parent is a loop.
pub(crate) fn child_key(parent: &str, child: &Node, iteration: Option<u32>) -> String {
    match iteration {
        Some(i) => format!("{parent}/{}@{i}", child.cfg.name),
        None => format!("{parent}/{}", child.cfg.name),
    }
}

/// Runs one node: skips a run already completed, records start and end,
/// and dispatches on the node's kind.
pub(crate) fn run_node(
    run: Arc<Run>,
    node: Arc<Node>,
    key: String,
    iteration: Option<u32>,
) -> BoxFuture<'static, Result<NodeEnd, EngineError>> {
    Box::pin(async move {
        if let Some(done) = run.snapshot().await.run(&key).cloned() {
            match done.status {
                RunStatus::Completed => {
                    return Ok(NodeEnd::Done {
                        output: done.output.unwrap_or_default(),
                        exit_loop: done.exit_loop,
                    });
                }
                RunStatus::Stopped => return Ok(NodeEnd::Stopped(done.output.unwrap_or_default())),
                _ => {}
            }
        }
        run.start(&node, &key, iteration).await?;
        let end = match node.cfg.kind {
            NodeKind::Llm => super::llm_node::run(&run, &node, &key).await,
            NodeKind::A2a => super::a2a_node::run(&run, &node, &key).await,
            NodeKind::Sequential => super::sequential::run(run.clone(), node.clone(), &key).await,
            NodeKind::Parallel => super::parallel::run(run.clone(), node.clone(), &key).await,
            NodeKind::Loop => super::loop_node::run(run.clone(), node.clone(), &key).await,
        };
        match &end {
            Ok(e) => run.finish(&node, &key, e).await?,
            Err(_) => run.fail(&node, &key).await,
        }
        end
    })
}

impl Engine {
    /// Runs (or resumes) the pipeline for the conversation's latest message.
    pub(crate) async fn drive_pipeline(
        &self,
        conversation_id: &str,
        ctx: &Ctx,
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
        let user = &stored[start];
        let this_turn = ps.as_ref().filter(|p| p.turn == user.message.id).cloned();
        let state = match this_turn {
            Some(ps) => {
                if let Some(why) = mismatch(&ps, Some(&pipeline)) {
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
                    return Ok(TurnOutcome::Waiting(Box::new(a)));
                }
                PipelineState {
                    status: RunStatus::Running,
                    pending: Vec::new(),
                    ..ps
                }
            }
            None => {
                if stored[start + 1..].iter().any(|m| m.node_run.is_none()) {
                    let why = "this conversation paused in simple mode, but the agent now runs a pipeline (an `agent:` tree was added to the config)".to_string();
                    return Err(end_unresumable(self, conversation_id, None, why).await?);
                }
                let mut state = ps.map(|p| p.state).unwrap_or_default();
                state.insert(
                    crate::config::USER_MESSAGE_KEY.to_string(),
                    user.message.content.clone(),
                );
                PipelineState {
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
                }
            }
        };
        let run = Arc::new(Run {
            engine: self.clone(),
            conversation_id: conversation_id.to_string(),
            ctx: ctx.clone(),
            state: tokio::sync::Mutex::new(state),
        });
        run.update(|_| (), None).await?;
        let root_key = pipeline.root.cfg.name.clone();
        let end = run_node(run.clone(), pipeline.root.clone(), root_key, None).await;
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
            Ok(NodeEnd::Paused(list)) => {
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
}
