//! The engine as its users hold it: a cheap, cloneable handle on the parts
//! every command, turn and call shares (the store, the config, the model,
//! the tools, the locks, the policy, the boards). Its own file, so that
//! the engine's rooms import it by path and `engine/mod.rs` holds only
//! `mod` lines and re-exports.

use crate::a2a::RemoteAgents;
use crate::config::{Config, NodeConfig, NodeKind};
use crate::domain::tasks::Tasks;
use crate::domain::tools::{CallContext, ToolRouter};
use crate::engine::boards::{CardBoard, PinBoard};
use crate::engine::error::EngineError;
use crate::engine::locks::{ConversationLocks, LockGuard};
use crate::engine::running::RunningTurns;
use crate::engine::scope::LocalTool;
use crate::engine::tree::Pipeline;
use crate::events::Events;
use crate::llm::{LlmClient, LlmError};
use crate::store::Store;
use app::models::{ConversationStatus, EventKind};
use std::collections::HashMap;
use std::sync::Arc;

/// The models of `llm` nodes that name their own, by configured name.
pub(crate) type NodeModels = HashMap<String, Result<Arc<dyn LlmClient>, LlmError>>;

/// A cheap, cloneable handle to the engine.
#[derive(Clone)]
pub(crate) struct Engine {
    pub(in crate::engine) inner: Arc<Inner>,
}

pub(in crate::engine) struct Inner {
    /// Durable state; the engine's only source of truth.
    pub(in crate::engine) store: Store,
    /// The validated config (prompt, limits).
    pub(in crate::engine) config: Arc<Config>,
    /// The configured model, or why it cannot be used (e.g. a missing key):
    /// kept so the server still starts and serves existing conversations.
    pub(in crate::engine) llm: Result<Arc<dyn LlmClient>, LlmError>,
    /// MCP tools (and later A2A sub-agents).
    pub(in crate::engine) tools: Arc<dyn ToolRouter>,
    /// One writer per conversation.
    pub(in crate::engine) locks: ConversationLocks,
    /// The turns running here, each with its cancel switch.
    pub(in crate::engine) turns: RunningTurns,
    /// Published after each committed change, for the SSE streams.
    pub(in crate::engine) events: Events,
    /// The orchestration tree; `None` in simple mode.
    pub(in crate::engine) pipeline: Option<Arc<Pipeline>>,
    /// A lone `llm` root node: simple mode with its prompt, model and tools.
    pub(in crate::engine) simple_root: Option<NodeConfig>,
    /// Models of nodes that name their own.
    pub(in crate::engine) models: NodeModels,
    /// Remote A2A agents (`a2a` nodes and `a2a_<name>` tools).
    pub(in crate::engine) a2a: Arc<dyn RemoteAgents>,
    /// The approval rules (`approvals:`), compiled.
    pub(in crate::engine) policy: crate::policy::Policy,
    /// The tool pins (POLICY.md §4).
    pub(in crate::engine) pins: PinBoard,
    /// The sub-agents' card pins (signed Agent Cards).
    pub(in crate::engine) cards: CardBoard,
    /// The live grants the gate consults (REACH.md §3).
    pub(in crate::engine) grants: crate::policy::grants::GrantIndex,
    /// Each question as it is asked (a request waiting on a turn whose
    /// call asks on a live session is answered with it).
    pub(in crate::engine) asked: tokio::sync::broadcast::Sender<app::models::Question>,
    /// Woken on every answer recorded here (the waiting calls re-read).
    pub(in crate::engine) answered: tokio::sync::Notify,
    /// The owner of every task the engine spawns (turns, their branches,
    /// the sweepers): stopped and drained by `run` on shutdown.
    pub(in crate::engine) tasks: Tasks,
    /// Who signs the receipts of decided calls (RECEIPTS.md §1), once the
    /// agent knows its public address; unset: no receipts.
    pub(in crate::engine) receipts: std::sync::OnceLock<Arc<super::receipt::Issuer>>,
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
                let p = Pipeline::compile(root);
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
                pins: PinBoard::default(),
                cards: CardBoard::default(),
                grants: crate::policy::grants::GrantIndex::new(),
                store,
                config,
                llm,
                tools,
                locks: ConversationLocks::default(),
                turns: RunningTurns::default(),
                events,
                pipeline,
                simple_root,
                models,
                a2a,
                asked: tokio::sync::broadcast::channel(64).0,
                answered: tokio::sync::Notify::new(),
                tasks,
                receipts: std::sync::OnceLock::new(),
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
    pub(crate) fn sub_agent_tools(&self) -> Vec<LocalTool> {
        let root = self.inner.simple_root.iter().flat_map(|r| r.a2a.iter());
        self.inner
            .config
            .a2a
            .iter()
            .chain(root)
            .map(|a| LocalTool::a2a(&a.name, &a.url, &a.description, a.destructive_hint))
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
    pub(crate) fn ctx_for_agent(&self, name: &str, ctx: &CallContext) -> CallContext {
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
    pub(in crate::engine) fn model_for(
        &self,
        model: Option<&str>,
    ) -> Result<Arc<dyn LlmClient>, EngineError> {
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

    /// The store the engine writes to (the A2A task service reads tasks
    /// through it).
    pub(crate) fn store(&self) -> &Store {
        &self.inner.store
    }

    /// Signs every decided call's receipt from now on, with `signer`, as
    /// the agent at `public_base` (RECEIPTS.md §1); set once, when the
    /// agent knows the address it serves at.
    pub(crate) fn issue_receipts(&self, signer: Arc<receipts::Signer>, public_base: &str) {
        let issuer = super::receipt::Issuer::new(signer, public_base, &self.inner.config);
        let _ = self.inner.receipts.set(Arc::new(issuer));
    }

    /// The event bus the engine publishes to.
    pub(crate) fn events(&self) -> &Events {
        &self.inner.events
    }

    /// Publishes a status change of a conversation.
    pub(in crate::engine) fn emit_status(
        &self,
        id: &str,
        status: Option<ConversationStatus>,
        running: bool,
    ) {
        self.inner.events.emit(EventKind::StatusChanged, id, |e| {
            e.status = status;
            e.running = Some(running);
        });
    }

    pub(in crate::engine) fn llm(&self) -> Result<Arc<dyn LlmClient>, EngineError> {
        self.inner
            .llm
            .clone()
            .map_err(|e| EngineError::LlmUnavailable(format!("the agent cannot answer: {e}")))
    }
}
