//! Where a tool loop runs: the whole turn (simple mode) or one run of one
//! pipeline node.
//!
//! The turn loop (`turn/mod.rs`) is the same in both cases; a [`Scope`] tells it
//! which stored messages are its own (a node run's messages carry the run
//! key, so parallel branches writing into one conversation never read each
//! other's steps), what to send the model, which extra tools exist
//! (`exit_loop`, sub-agents of an `a2a` node or a node's own `a2a` list),
//! and the approval rules of the node's place in the tree.

use crate::domain::tools::ToolInfo;
use crate::llm::LlmClient;
use crate::store::{NodeTag, StoredMessage};
use serde_json::json;
use std::sync::Arc;

/// The name of the tool that ends a loop.
pub(crate) const EXIT_LOOP: &str = "exit_loop";

/// A tool that lives in the engine rather than behind the tool router.
#[derive(Clone, Debug)]
pub(crate) struct LocalTool {
    pub(crate) info: ToolInfo,
    pub(crate) action: LocalAction,
}

/// What a local tool does.
#[derive(Clone, Debug)]
pub(crate) enum LocalAction {
    /// Ends the enclosing loop once the node's step is done.
    ExitLoop,
    /// Sends `message` to a remote A2A agent.
    A2a { agent: String, url: String },
}

impl LocalTool {
    /// `exit_loop`, offered to nodes with `can_exit_loop: true`.
    pub(crate) fn exit_loop() -> LocalTool {
        LocalTool {
            info: ToolInfo {
                name: EXIT_LOOP.into(),
                description: "End the loop you are running in: call it when the task is done \
                              and no further iteration is needed."
                    .into(),
                input_schema: json!({"type": "object", "properties": {}}),
                destructive: false,
                hinted: true,
                annotations: None,
                digest: String::new(),
                server: "engine".into(),
                available: true,
            },
            action: LocalAction::ExitLoop,
        }
    }

    /// A sub-agent as the tool `a2a_<name>` with a `message` argument.
    pub(crate) fn a2a(name: &str, url: &str, description: &str, destructive: bool) -> LocalTool {
        let description = if description.trim().is_empty() {
            format!("Delegate a task to the remote agent `{name}` and get its answer.")
        } else {
            description.to_string()
        };
        LocalTool {
            info: ToolInfo {
                name: format!("a2a_{name}"),
                description,
                input_schema: json!({
                    "type": "object",
                    "properties": {"message": {"type": "string", "description": "What to ask the agent"}},
                    "required": ["message"]
                }),
                destructive,
                hinted: true,
                annotations: None,
                digest: String::new(),
                server: name.to_string(),
                available: true,
            },
            action: LocalAction::A2a {
                agent: name.to_string(),
                url: url.to_string(),
            },
        }
    }
}

/// Everything a tool loop needs to know about where it runs.
#[derive(Clone)]
pub(crate) struct Scope {
    /// The node run; `None` in simple mode (the scope is the whole turn).
    pub(crate) node: Option<NodeTag>,
    /// The system prompt, placeholders already resolved.
    pub(crate) system: String,
    /// The model; `None` for scopes that never ask one (an `a2a` node).
    pub(crate) llm: Option<Arc<dyn LlmClient>>,
    /// Tools beyond the router's.
    pub(crate) local: Vec<LocalTool>,
    /// False where destructive tools run without asking (inside `parallel`
    /// and `loop` nodes without `approvals: enforce`).
    pub(crate) asks_approval: bool,
    /// A rejected call ends the pipeline (`on_reject: stop`).
    pub(crate) stop_on_reject: bool,
}

impl Scope {
    /// Simple mode: the whole turn, the configured prompt.
    pub(crate) fn simple(system: String, llm: Arc<dyn LlmClient>) -> Scope {
        Scope {
            node: None,
            system,
            llm: Some(llm),
            local: Vec::new(),
            asks_approval: true,
            stop_on_reject: false,
        }
    }

    /// True in simple mode: the scope owns the conversation's status and
    /// running flag (a pipeline sets them once for all its nodes).
    pub(crate) fn owns_status(&self) -> bool {
        self.node.is_none()
    }

    /// True if `m` belongs to this scope.
    pub(crate) fn owns(&self, m: &StoredMessage) -> bool {
        match &self.node {
            None => true,
            Some(tag) => m.node_run.as_deref() == Some(tag.run.as_str()),
        }
    }

    /// The node's name, for events and logs.
    pub(crate) fn node_name(&self) -> Option<String> {
        self.node.as_ref().map(|t| t.name.clone())
    }

    /// The local tool called `name`.
    pub(crate) fn local_tool(&self, name: &str) -> Option<&LocalTool> {
        self.local.iter().find(|t| t.info.name == name)
    }
}
