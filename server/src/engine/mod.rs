//! The agent engine: turns, the tool-call lifecycle, the orchestration
//! tree, and the commands that start, decide and cancel them.
//!
//! - `turn/`: the tool loop: model → tools → model … → answer, pausing at a
//!   destructive call; runs a whole turn (simple mode) or one pipeline node
//!   (`scope`). `model` asks the model, `step` records its answer,
//!   `history` turns the stored timeline into a transcript.
//! - `calls/`: one call's lifecycle: claim → gate → approval → execute →
//!   record (`handle_call`), with the gate (rules, annotations, pins), an
//!   approver's edit, and delegation to sub-agents with proxied approvals.
//! - `pipeline/`: the orchestration tree and its durable run (`run`),
//!   whether a stored run can be resumed (`resume`), `{key}` placeholders
//!   (`template`), and one file per node kind (`llm_node`, `sequential`,
//!   `parallel`, `loop_node`, `a2a_node`).
//! - `commands/`: the public commands: `send` (start a conversation, send a
//!   message), `decide` (approve/reject, by API or link), `cancel`.
//! - `expiry`: approvals that time out or escalate.
//! - `recovery`: what a restart does with turns and approvals it finds
//!   half-done.
//! - `replicas`: each replica's background work (heartbeat, lease
//!   takeover); `running`: the running turns' cancel switches; `locks`: one
//!   writer per conversation.
//!
//! Key decisions:
//! - **The database is the turn's state.** The loop re-reads the
//!   conversation before every step and derives what to do next (an
//!   unanswered call, a decided approval, a model call). Nothing lives only in
//!   memory, so a restart resumes from exactly where the last commit left it.
//! - **Write ahead of every side effect.** A destructive call is stored as
//!   an approval row before the turn pauses; an approved call is moved to
//!   `executing` (and the tool message marked started) in a committed
//!   transaction *before* the tool runs, and its result is committed
//!   together with `executed`. A crash in between leaves `executing`, which
//!   recovery turns into `in_doubt`, never into a second run.
//! - **Events follow commits.** Each state change is published on the
//!   [`Events`] bus only after its transaction committed, so an SSE client
//!   that reloads on an event sees the change.
//! - **Turns run on their own task.** Each turn is a task of the engine's
//!   owner ([`Tasks`]) holding the conversation's lock; the HTTP request
//!   awaits it but cannot cancel it by disconnecting. Shutdown stops it at
//!   its next await point, as a crash would, and the crash rules settle it.

mod calls;
mod commands;
mod expiry;
mod locks;
mod pipeline;
mod recovery;
mod replicas;
mod running;
mod turn;

#[cfg(test)]
use commands as decide;
pub(crate) use commands::answer::Answer;
pub(crate) use commands::decide::DecisionRequest;
pub(crate) use locks::{ConversationLocks, LockGuard};
#[cfg(test)]
use recovery::TURN_INTERRUPTED_NOTE;
pub(crate) use turn::TurnOutcome;
#[cfg(test)]
use turn::history;

use crate::a2a::RemoteAgents;
use crate::config::{Config, NodeConfig, NodeKind};
use crate::domain::tasks::Tasks;
use crate::domain::tools::{CallContext, ToolRouter};
use crate::events::Events;
use crate::llm::{LlmClient, LlmError};
use crate::store::{Store, StoreError};
use app::models::{
    ApprovalStatus, Conversation, ConversationStatus, EventKind, PendingApproval, ProcessResult,
};
use std::collections::HashMap;
use std::sync::Arc;

/// The models of `llm` nodes that name their own, by configured name.
pub(crate) type NodeModels = HashMap<String, Result<Arc<dyn LlmClient>, LlmError>>;

/// The outcome a caller gets: the conversation after the turn and what it produced.
#[derive(Clone, Debug)]
pub(crate) struct Reply {
    pub(crate) conversation: Conversation,
    pub(crate) result: ProcessResult,
}

/// Why a request to the engine failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EngineError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Invalid(String),
    #[error("conversation {0:?} is busy with another request; try again when it has finished")]
    Busy(String),
    #[error("conversation {conversation_id:?} is waiting for approval of `{}`: approve or reject it first (POST /approvals/{})", approval.tool_name, approval.uuid)]
    WaitingApproval {
        conversation_id: String,
        approval: Box<PendingApproval>,
    },
    #[error("conversation {conversation_id:?} is waiting for the answer to a question from `{}`: answer it first (POST /questions/{})", question.tool_call.tool, question.uuid)]
    WaitingInput {
        conversation_id: String,
        question: Box<app::models::Question>,
    },
    #[error("question {uuid} was already answered (status: {})", status.as_str())]
    AlreadyAnswered {
        uuid: String,
        status: app::models::QuestionStatus,
    },
    #[error("approval {uuid} was already decided (status: {})", status.as_str())]
    AlreadyDecided {
        uuid: String,
        status: ApprovalStatus,
    },
    /// A second vote by one principal on an approval with a quorum.
    #[error("{voter} has already voted on approval {uuid}: its quorum needs another approver")]
    AlreadyVoted { uuid: String, voter: String },
    /// A signed link from a notification that was used already.
    #[error("this link was used already: each link works once")]
    LinkUsed,
    #[error("{0}")]
    LlmUnavailable(String),
    #[error("{error}")]
    Llm {
        error: LlmError,
        conversation: Box<Conversation>,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the turn stopped unexpectedly: {0}")]
    Task(String),
    /// A paused pipeline run no longer matches the config.
    #[error("{0}")]
    ConfigChanged(String),
    /// The caller may not do this (AUTH.md): the message says why.
    #[error("{0}")]
    Forbidden(String),
    /// The turn was stopped by a cancel (A2A `CancelTask`).
    #[error("the turn of conversation {0:?} was cancelled")]
    Cancelled(String),
}

/// A cheap, cloneable handle to the engine.
#[derive(Clone)]
pub(crate) struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    /// Durable state; the engine's only source of truth.
    store: Store,
    /// The validated config (prompt, limits).
    config: Arc<Config>,
    /// The configured model, or why it cannot be used (e.g. a missing key):
    /// kept so the server still starts and serves existing conversations.
    llm: Result<Arc<dyn LlmClient>, LlmError>,
    /// MCP tools (and later A2A sub-agents).
    tools: Arc<dyn ToolRouter>,
    /// One writer per conversation.
    locks: ConversationLocks,
    /// The turns running here, each with its cancel switch.
    turns: running::RunningTurns,
    /// Published after each committed change, for the SSE streams.
    events: Events,
    /// The orchestration tree; `None` in simple mode.
    pipeline: Option<Arc<pipeline::Pipeline>>,
    /// A lone `llm` root node: simple mode with its prompt, model and tools.
    simple_root: Option<NodeConfig>,
    /// Models of nodes that name their own.
    models: NodeModels,
    /// Remote A2A agents (`a2a` nodes and `a2a_<name>` tools).
    a2a: Arc<dyn RemoteAgents>,
    /// The approval rules (`approvals:`), compiled.
    policy: crate::policy::Policy,
    /// The tool pins (POLICY.md §4).
    pins: calls::pins::PinBoard,
    /// The sub-agents' card pins (signed Agent Cards).
    cards: calls::cards::CardBoard,
    /// The live grants the gate consults (REACH.md §3).
    grants: crate::policy::grants::GrantIndex,
    /// Each question as it is asked (a request waiting on a turn whose
    /// call asks on a live session is answered with it).
    asked: tokio::sync::broadcast::Sender<app::models::Question>,
    /// Woken on every answer recorded here (the waiting calls re-read).
    answered: tokio::sync::Notify,
    /// The owner of every task the engine spawns (turns, their branches,
    /// the sweepers): stopped and drained by `run` on shutdown.
    tasks: Tasks,
}

impl Engine {
    #[cfg(test)]
    pub(crate) fn new(
        store: Store,
        config: Arc<Config>,
        llm: Result<Arc<dyn LlmClient>, LlmError>,
        tools: Arc<dyn ToolRouter>,
    ) -> Engine {
        Engine::with_parts(
            store,
            config,
            llm,
            tools,
            NodeModels::new(),
            Arc::new(crate::a2a::A2aClient::default()),
            Events::new(),
            Tasks::new(),
        )
    }

    /// An engine with node models, the A2A client, the event bus and the
    /// owner of its tasks given.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn with_parts(
        store: Store,
        config: Arc<Config>,
        llm: Result<Arc<dyn LlmClient>, LlmError>,
        tools: Arc<dyn ToolRouter>,
        models: NodeModels,
        a2a: Arc<dyn RemoteAgents>,
        events: Events,
        tasks: Tasks,
    ) -> Engine {
        let (pipeline, simple_root) = match &config.agent {
            Some(root) if root.kind == NodeKind::Llm => (None, Some(root.clone())),
            Some(root) => {
                let p = pipeline::Pipeline::compile(root);
                for name in p.unguarded() {
                    tracing::warn!(node = %name, "destructive tools run without approval inside this node; set `approvals: enforce` on it to ask");
                }
                (Some(Arc::new(p)), None)
            }
            None => (None, None),
        };
        let policy = config.policy();
        Engine {
            inner: Arc::new(Inner {
                policy,
                pins: calls::pins::PinBoard::default(),
                cards: calls::cards::CardBoard::default(),
                grants: crate::policy::grants::GrantIndex::new(),
                store,
                config,
                llm,
                tools,
                locks: ConversationLocks::default(),
                turns: running::RunningTurns::default(),
                events,
                pipeline,
                simple_root,
                models,
                a2a,
                asked: tokio::sync::broadcast::channel(64).0,
                answered: tokio::sync::Notify::new(),
                tasks,
            }),
        }
    }

    /// The owner of the engine's tasks.
    pub(crate) fn tasks(&self) -> &Tasks {
        &self.inner.tasks
    }

    /// The approval rules.
    pub(crate) fn policy(&self) -> &crate::policy::Policy {
        &self.inner.policy
    }

    /// Takes the conversation's writer lock here and its lease in the
    /// store; `Busy` when another writer (of this or another replica) has
    /// it.
    pub(crate) async fn lock(&self, conversation_id: &str) -> Result<LockGuard, EngineError> {
        let guard = self.hold_or_busy(conversation_id)?;
        match self.inner.store.claim_lease(conversation_id).await? {
            Some(lease) => Ok(guard.with_lease(lease)),
            None => Err(EngineError::Busy(conversation_id.to_string())),
        }
    }

    /// Takes the writer lock of a conversation just created with its
    /// lease (`Store::open_turn`).
    pub(crate) fn lock_new(
        &self,
        conversation_id: &str,
        lease: crate::store::Lease,
    ) -> Result<LockGuard, EngineError> {
        Ok(self.hold_or_busy(conversation_id)?.with_lease(lease))
    }

    /// The writer lock here, or `Busy`.
    fn hold_or_busy(&self, conversation_id: &str) -> Result<LockGuard, EngineError> {
        self.hold(conversation_id)
            .ok_or_else(|| EngineError::Busy(conversation_id.to_string()))
    }

    /// Takes the conversation's writer lock (it then reads as busy); `None`
    /// if another writer has it. For the A2A conformance executor.
    pub(crate) fn hold(&self, conversation_id: &str) -> Option<LockGuard> {
        self.inner.locks.try_lock(conversation_id)
    }

    /// The configured tree as the UI draws it; `None` in simple mode.
    pub(crate) fn pipeline_view(&self) -> Option<app::pipeline::PipelineNode> {
        self.inner
            .pipeline
            .as_ref()
            .map(|p| p.view(&self.inner.config.llm.model))
    }

    /// Simple mode's sub-agents as `a2a_<name>` tools: the top-level `a2a`
    /// list, plus a lone `llm` root node's own.
    pub(crate) fn sub_agent_tools(&self) -> Vec<turn::scope::LocalTool> {
        let root = self.inner.simple_root.iter().flat_map(|r| r.a2a.iter());
        self.inner
            .config
            .a2a
            .iter()
            .chain(root)
            .map(|a| {
                turn::scope::LocalTool::a2a(&a.name, &a.url, &a.description, a.destructive_hint)
            })
            .collect()
    }

    /// The URL of the sub-agent this agent calls `name`: a top-level or
    /// node-level `a2a` entry, or an `a2a` node.
    pub(crate) fn sub_agent_url(&self, name: &str) -> Option<String> {
        self.sub_agent(name).map(|(url, _)| url)
    }

    /// The URL and configured headers of the sub-agent `name`.
    pub(crate) fn sub_agent(&self, name: &str) -> Option<(String, Vec<(String, String)>)> {
        fn entry(a: &crate::config::A2aAgentConfig) -> (String, Vec<(String, String)>) {
            (a.url.clone(), a.headers.clone().into_iter().collect())
        }
        fn walk(n: &NodeConfig, name: &str) -> Option<(String, Vec<(String, String)>)> {
            if n.kind == NodeKind::A2a && n.name == name {
                return n
                    .url
                    .clone()
                    .map(|u| (u, n.headers.clone().into_iter().collect()));
            }
            n.a2a
                .iter()
                .find(|a| a.name == name)
                .map(entry)
                .or_else(|| n.agents.iter().find_map(|c| walk(c, name)))
        }
        let c = &self.inner.config;
        c.a2a
            .iter()
            .find(|a| a.name == name)
            .map(entry)
            .or_else(|| c.agent.as_ref().and_then(|root| walk(root, name)))
    }

    /// `ctx` for a call to the sub-agent `name`, with its configured headers.
    pub(crate) fn ctx_for_agent(&self, name: &str, ctx: &Ctx) -> Ctx {
        let mut c = ctx.clone();
        c.headers = self.sub_agent(name).map(|(_, h)| h).unwrap_or_default();
        c
    }

    /// Every tool a simple-mode turn can call: the router's and the
    /// sub-agents' (what `GET /tools` lists).
    pub(crate) fn all_tools(&self) -> Vec<crate::domain::tools::ToolInfo> {
        let mut tools = self.inner.tools.tools();
        if self.inner.pipeline.is_none() {
            tools.extend(self.sub_agent_tools().into_iter().map(|t| t.info));
        }
        tools
    }

    /// The model of a node: its own `model`, or `llm.model`.
    fn model_for(&self, model: Option<&str>) -> Result<Arc<dyn LlmClient>, EngineError> {
        match model {
            Some(m) if m != self.inner.config.llm.model => match self.inner.models.get(m) {
                Some(Ok(c)) => Ok(c.clone()),
                Some(Err(e)) => Err(EngineError::LlmUnavailable(format!(
                    "the model `{m}` cannot be used: {e}"
                ))),
                None => Err(EngineError::LlmUnavailable(format!(
                    "the model `{m}` was not loaded at startup"
                ))),
            },
            _ => self.llm(),
        }
    }

    /// Why the model cannot be used, if it cannot.
    pub(crate) fn llm_problem(&self) -> Option<String> {
        self.inner.llm.as_ref().err().map(ToString::to_string)
    }

    /// The model's label (`openai:gpt-4o`), if usable.
    pub(crate) fn llm_label(&self) -> Option<String> {
        self.inner.llm.as_ref().ok().map(|l| l.describe())
    }

    pub(crate) fn tools(&self) -> &Arc<dyn ToolRouter> {
        &self.inner.tools
    }

    #[cfg(test)]
    pub(crate) fn store(&self) -> &Store {
        &self.inner.store
    }

    /// The event bus the engine publishes to.
    pub(crate) fn events(&self) -> &Events {
        &self.inner.events
    }

    /// Publishes a status change of a conversation.
    fn emit_status(&self, id: &str, status: Option<ConversationStatus>, running: bool) {
        self.inner.events.emit(EventKind::StatusChanged, id, |e| {
            e.status = status;
            e.running = Some(running);
        });
    }

    fn llm(&self) -> Result<Arc<dyn LlmClient>, EngineError> {
        self.inner
            .llm
            .clone()
            .map_err(|e| EngineError::LlmUnavailable(format!("the agent cannot answer: {e}")))
    }
}

/// Who is acting, carried into the turn.
pub(crate) type Ctx = CallContext;

#[cfg(test)]
mod tests;
