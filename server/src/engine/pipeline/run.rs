//! One turn's run of the tree: its state written whenever a node starts,
//! finishes or pauses, and the wrapper every node goes through.
//!
//! The run does not know the node kinds: it carries the function that runs
//! a node of a given kind ([`RunKind`], `kinds::run_kind`), so the nodes
//! that hold others (`sequential`, `parallel`, `loop`) run their children
//! through [`run_node`] without this file importing theirs.

use crate::domain::BoxFuture;
use crate::domain::tools::CallContext;
use crate::engine::error::EngineError;
use crate::engine::handle::Engine;
use crate::engine::tree::Node;
use crate::store::{NewMessage, NodeTag};
use app::models::{EventKind, PendingApproval, Role};
use app::pipeline::{NodeRun, PendingCall, PipelineState, RunStatus};
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

/// Runs a node of its kind (after `run_node` has recorded its start).
pub(crate) type RunKind =
    fn(Arc<Run>, Arc<Node>, String) -> BoxFuture<'static, Result<NodeEnd, EngineError>>;

/// One turn's run of the pipeline.
pub(crate) struct Run {
    pub(crate) engine: Engine,
    pub(crate) conversation_id: String,
    pub(crate) ctx: CallContext,
    state: tokio::sync::Mutex<PipelineState>,
    run_kind: RunKind,
}

impl Run {
    /// A run from `state`, running each node with `run_kind`.
    pub(crate) fn new(
        engine: Engine,
        conversation_id: &str,
        ctx: CallContext,
        state: PipelineState,
        run_kind: RunKind,
    ) -> Run {
        Run {
            engine,
            conversation_id: conversation_id.to_string(),
            ctx,
            state: tokio::sync::Mutex::new(state),
            run_kind,
        }
    }

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
/// and runs the node by its kind.
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
        let end = (run.run_kind)(run.clone(), node.clone(), key.clone()).await;
        match &end {
            Ok(e) => run.finish(&node, &key, e).await?,
            Err(_) => run.fail(&node, &key).await,
        }
        end
    })
}
