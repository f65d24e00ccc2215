//! Orchestration: running the configured tree of nodes as one turn.
//!
//! The node kinds live one per file (`llm_node`, `sequential`, `parallel`,
//! `loop_node`, `a2a_node`); this file owns what they share:
//! - [`Pipeline`]: the tree compiled once at startup, with each node's
//!   effective approval rule (destructive tools run without asking inside
//!   `parallel` and `loop` nodes unless one says `approvals: enforce`) and
//!   `on_reject` (a `stop` on a node covers its subtree);
//! - [`Run`]: one turn's run, whose position (`PipelineState`) is written to
//!   the conversation whenever a node starts, finishes or pauses;
//! - [`run_node`]: the wrapper every node goes through.
//!
//! **Resuming is replaying.** After an approval (or a restart that found an
//! approved call) the turn runs the tree again from the root. A node run
//! recorded as completed returns its recorded output without running; the
//! paused node's tool loop re-reads its own messages and goes on from the
//! decided call (`turn.rs`). So nothing before the pause runs twice, and a
//! crash at any point leaves a position the next run can continue from.
//! A stored run whose tree shape no longer matches the config is ended
//! with an explicit error (HTTP 409), never guessed at.

use super::{Ctx, Engine, EngineError, TurnOutcome};
use crate::config::{ApprovalsMode, NodeConfig, NodeKind, OnReject};
use crate::domain::BoxFuture;
use crate::store::{NewMessage, NodeTag};
use app::models::{ConversationStatus, EventKind, PendingApproval, Role};
use app::pipeline::{
    NodeRun, PIPELINE_STATE_VERSION, PendingCall, PipelineNode, PipelineState, RunStatus,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A node of the compiled tree.
#[derive(Debug)]
pub(crate) struct Node {
    pub(crate) cfg: NodeConfig,
    pub(crate) children: Vec<Arc<Node>>,
    /// Node names from the root.
    pub(crate) path: Vec<String>,
    /// Destructive calls below this node ask for approval.
    pub(crate) asks_approval: bool,
    /// A rejected call below this node ends the pipeline.
    pub(crate) stop_on_reject: bool,
}

/// The configured tree.
#[derive(Debug)]
pub(crate) struct Pipeline {
    pub(crate) root: Arc<Node>,
    /// The structure a stored run must match to resume.
    pub(crate) shape: String,
}

impl Pipeline {
    pub(crate) fn compile(root: &NodeConfig) -> Pipeline {
        Pipeline {
            root: compile(root, Vec::new(), true, false),
            shape: shape(root),
        }
    }

    /// The tree as the UI draws it.
    pub(crate) fn view(&self, default_model: &str) -> PipelineNode {
        view(&self.root, default_model)
    }

    /// Nodes that run destructive tools without asking (for a startup warning).
    pub(crate) fn unguarded(&self) -> Vec<String> {
        fn walk(n: &Node, out: &mut Vec<String>) {
            if matches!(n.cfg.kind, NodeKind::Parallel | NodeKind::Loop)
                && n.cfg.approvals != Some(ApprovalsMode::Enforce)
            {
                out.push(n.cfg.name.clone());
            }
            for c in &n.children {
                walk(c, out);
            }
        }
        let mut out = Vec::new();
        walk(&self.root, &mut out);
        out
    }
}

fn compile(cfg: &NodeConfig, parent: Vec<String>, asks: bool, stop: bool) -> Arc<Node> {
    let mut path = parent;
    path.push(cfg.name.clone());
    let asks = asks || cfg.approvals == Some(ApprovalsMode::Enforce);
    let stop = stop || cfg.on_reject == OnReject::Stop;
    // Children of parallel and loop nodes run unattended unless enforced.
    let child_asks = match cfg.kind {
        NodeKind::Parallel | NodeKind::Loop => cfg.approvals == Some(ApprovalsMode::Enforce),
        _ => asks,
    };
    Arc::new(Node {
        children: cfg
            .agents
            .iter()
            .map(|c| compile(c, path.clone(), child_asks, stop))
            .collect(),
        cfg: NodeConfig {
            agents: Vec::new(),
            ..cfg.clone()
        },
        path,
        asks_approval: asks,
        stop_on_reject: stop,
    })
}

/// `name:kind[>output_key](children…)`: what a paused run depends on.
/// Prompts, models and limits may change while a run is paused; names,
/// kinds, order and outputs may not.
fn shape(n: &NodeConfig) -> String {
    let mut s = format!("{}:{}", n.name, n.kind.as_str());
    if let Some(k) = &n.output_key {
        s.push('>');
        s.push_str(k);
    }
    if !n.agents.is_empty() {
        let inner: Vec<String> = n.agents.iter().map(shape).collect();
        s.push_str(&format!("({})", inner.join(",")));
    }
    s
}

fn view(n: &Node, default_model: &str) -> PipelineNode {
    PipelineNode {
        name: n.cfg.name.clone(),
        kind: n.cfg.kind.as_str().to_string(),
        description: n.cfg.description.clone(),
        output_key: n.cfg.output_key.clone(),
        model: (n.cfg.kind == NodeKind::Llm)
            .then(|| n.cfg.model.clone().unwrap_or_else(|| default_model.into())),
        url: n.cfg.url.clone(),
        max_iterations: (n.cfg.kind == NodeKind::Loop).then(|| {
            n.cfg
                .max_iterations
                .unwrap_or(crate::config::DEFAULT_MAX_ITERATIONS)
        }),
        can_exit_loop: n.cfg.can_exit_loop,
        asks_approval: n.asks_approval,
        on_reject: if n.stop_on_reject { "stop" } else { "continue" }.into(),
        children: n.children.iter().map(|c| view(c, default_model)).collect(),
    }
}

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

/// Replaces `{key}` placeholders with session state; a key no node has
/// written yet becomes empty (config loading already refused keys that no
/// node writes). Braces around anything else are left alone.
pub(crate) fn resolve(prompt: &str, state: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(prompt.len());
    let mut rest = prompt;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        match after.find(['}', '{']) {
            Some(end) if after.as_bytes()[end] == b'}' && is_key(&after[..end]) => {
                if let Some(v) = state.get(&after[..end]) {
                    out.push_str(v);
                }
                rest = &after[end + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn is_key(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(f) if f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// Why a stored run cannot go on under the current config, if it cannot.
fn mismatch(ps: &PipelineState, pipeline: Option<&Pipeline>) -> Option<String> {
    let Some(p) = pipeline else {
        return Some(
            "this conversation paused inside a pipeline, but the agent now runs without one \
             (the `agent:` tree was removed from the config)"
                .into(),
        );
    };
    if ps.version != PIPELINE_STATE_VERSION {
        return Some(format!(
            "the paused run was stored in format version {} and this agent reads version {PIPELINE_STATE_VERSION}",
            ps.version
        ));
    }
    if ps.shape == p.shape {
        return None;
    }
    let at = ps
        .pending
        .first()
        .map(|c| c.path.join("/"))
        .or_else(|| ps.current().first().map(|r| r.path.join("/")))
        .unwrap_or_default();
    Some(format!(
        "the config's `agent` tree changed while the run was paused at `{at}` (was {}, now {})",
        ps.shape, p.shape
    ))
}

/// In simple mode: an error if the current turn paused inside a pipeline
/// that the config no longer has.
pub(crate) async fn paused_elsewhere(
    engine: &Engine,
    conversation_id: &str,
) -> Result<Option<EngineError>, EngineError> {
    // Most conversations never ran a pipeline: one cheap read.
    let (ps, turn) = engine.inner.store.run_and_turn(conversation_id).await?;
    match ps {
        Some(ps)
            if Some(&ps.turn) == turn.as_ref()
                && matches!(
                    ps.status,
                    RunStatus::Running | RunStatus::Paused | RunStatus::Interrupted
                ) =>
        {
            let why = mismatch(&ps, None).unwrap_or_default();
            Ok(Some(
                end_unresumable(engine, conversation_id, Some(ps), why).await?,
            ))
        }
        _ => Ok(None),
    }
}

/// Ends a run that cannot resume: its waiting calls are cancelled (never
/// run), the conversation says why and is open for a new message.
async fn end_unresumable(
    engine: &Engine,
    conversation_id: &str,
    ps: Option<PipelineState>,
    why: String,
) -> Result<EngineError, EngineError> {
    let text = format!(
        "The paused run cannot resume: {why}. Its waiting actions were cancelled and not run. \
         Send a new message to start again, or restore the previous config for new conversations."
    );
    engine
        .inner
        .store
        .abandon_run(conversation_id, ps, text.clone())
        .await?;
    tracing::warn!(conversation = %conversation_id, "{text}");
    engine.emit_status(conversation_id, Some(ConversationStatus::Active), false);
    Ok(EngineError::ConfigChanged(text))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(yaml: &str) -> NodeConfig {
        serde_yaml::from_str(yaml).unwrap()
    }

    const SEQ: &str = r#"
name: p
type: sequential
agents:
  - {name: a, type: llm, output_key: analysis}
  - name: fan
    type: parallel
    agents:
      - {name: b, type: llm}
      - {name: c, type: llm, approvals: enforce}
  - {name: d, type: llm, on_reject: stop}
"#;

    #[test]
    fn approvals_are_unattended_inside_parallel_unless_enforced() {
        let p = Pipeline::compile(&tree(SEQ));
        let r = &p.root;
        assert!(r.asks_approval && r.children[0].asks_approval);
        let fan = &r.children[1];
        assert!(
            fan.asks_approval,
            "the parallel node itself sits in a sequential"
        );
        assert!(!fan.children[0].asks_approval);
        assert!(fan.children[1].asks_approval, "enforce on the branch");
        assert!(r.children[2].stop_on_reject && !r.children[0].stop_on_reject);
        assert_eq!(p.unguarded(), vec!["fan"]);
    }

    #[test]
    fn shape_ignores_prompts_but_not_structure() {
        let a = Pipeline::compile(&tree(SEQ)).shape;
        assert_eq!(
            a,
            "p:sequential(a:llm>analysis,fan:parallel(b:llm,c:llm),d:llm)"
        );
        let prompt_changed =
            SEQ.replace("output_key: analysis}", "output_key: analysis, prompt: hi}");
        assert_eq!(Pipeline::compile(&tree(&prompt_changed)).shape, a);
        let renamed = SEQ.replace("{name: d,", "{name: e,");
        assert_ne!(Pipeline::compile(&tree(&renamed)).shape, a);
    }

    #[test]
    fn placeholders_resolve_from_state() {
        let state = BTreeMap::from([
            ("analysis".to_string(), "3 items".to_string()),
            ("user_message".to_string(), "hi".to_string()),
        ]);
        assert_eq!(
            resolve(
                "Do {user_message} with {analysis}; JSON {\"a\": 1} {later}.",
                &state
            ),
            "Do hi with 3 items; JSON {\"a\": 1} ."
        );
        assert_eq!(resolve("{{analysis}}", &state), "{3 items}");
        assert_eq!(resolve("open {analysis", &state), "open {analysis");
    }
}
