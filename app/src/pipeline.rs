//! The orchestration models shared by the server and the browser: the
//! configured tree (`GET /pipeline`) and a conversation's run of it (the
//! `pipeline_state` of a conversation).
//!
//! `PipelineState` is the durable position of a run. The server writes it
//! (whole, in one transaction) whenever a node starts, finishes or pauses,
//! and rebuilds the run from it after an approval or a restart: a node
//! recorded as `done` is never run again. The browser reads the same struct
//! to tick finished nodes and highlight the running one. A run's key
//! (`NodeRun::run`) is the node's path with the loop iteration of every
//! loop it sits in (`pipeline/refine/checker@2`), so the same node in two
//! iterations is two runs.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One node of the configured tree, as the UI draws it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct PipelineNode {
    pub name: String,
    /// `llm`, `sequential`, `parallel`, `loop` or `a2a`.
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_key: Option<String>,
    /// The model of an `llm` node (its own or `llm.model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The remote agent of an `a2a` node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The bound of a `loop` node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<u32>,
    #[serde(default)]
    pub can_exit_loop: bool,
    /// False inside `parallel` and `loop` nodes without `approvals: enforce`:
    /// destructive tools run there without asking.
    pub asks_approval: bool,
    /// `continue` or `stop`: what a rejected call does to the pipeline.
    pub on_reject: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<PipelineNode>,
}

/// `GET /pipeline`: the configured tree, absent in simple mode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct PipelineView {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<PipelineNode>,
}

/// Where a run stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    /// Waiting for every approval in `pending`.
    Paused,
    Completed,
    /// A rejected call ended it (`on_reject: stop`).
    Stopped,
    Failed,
    /// The agent restarted while it ran; the user sends the message again.
    Interrupted,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Paused => "paused",
            RunStatus::Completed => "completed",
            RunStatus::Stopped => "stopped",
            RunStatus::Failed => "failed",
            RunStatus::Interrupted => "interrupted",
        }
    }
}

/// One run of one node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct NodeRun {
    /// The run key: path plus loop iterations (`pipeline/refine/checker@2`).
    pub run: String,
    pub node: String,
    pub kind: String,
    /// Node names from the root.
    pub path: Vec<String>,
    /// The iteration of the innermost enclosing loop (for a loop node: the
    /// iterations it has started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u32>,
    pub status: RunStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// The node called `exit_loop`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exit_loop: bool,
    pub started_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
}

/// A call the run waits on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct PendingCall {
    pub approval: String,
    pub node: String,
    pub run: String,
    pub path: Vec<String>,
    pub tool_name: String,
    pub tool_args: serde_json::Value,
}

/// A conversation's run of the pipeline (its `pipeline_state`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct PipelineState {
    /// Format version of this struct.
    pub version: u32,
    /// The tree's structure when the run started; a config whose structure
    /// differs cannot resume it.
    pub shape: String,
    pub status: RunStatus,
    /// The id of the user message this run answers.
    pub turn: String,
    pub user_message: String,
    /// Session state: every `output_key` written so far (kept across turns).
    pub state: BTreeMap<String, String>,
    /// Every node run of this turn, in start order.
    pub nodes: Vec<NodeRun>,
    /// The calls waiting for a decision (several when a parallel node with
    /// `approvals: enforce` paused in more than one branch).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<PendingCall>,
    /// The run's answer once it completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub updated_at: String,
}

/// The version written by this build.
pub const PIPELINE_STATE_VERSION: u32 = 1;

impl PipelineState {
    /// Reads a conversation's `pipeline_state`; `None` if absent or of a
    /// format this build does not know.
    pub fn parse(v: Option<&serde_json::Value>) -> Option<PipelineState> {
        v.and_then(|v| serde_json::from_value(v.clone()).ok())
    }

    /// The latest run of the node named `name`.
    pub fn latest(&self, name: &str) -> Option<&NodeRun> {
        self.nodes.iter().rev().find(|n| n.node == name)
    }

    /// The run with key `run`.
    pub fn run(&self, run: &str) -> Option<&NodeRun> {
        self.nodes.iter().find(|n| n.run == run)
    }

    /// Runs of leaf nodes that are running or paused (the "current" nodes).
    pub fn current(&self) -> Vec<&NodeRun> {
        self.nodes
            .iter()
            .filter(|n| {
                matches!(n.status, RunStatus::Running | RunStatus::Paused)
                    && matches!(n.kind.as_str(), "llm" | "a2a")
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips_and_finds_runs() {
        let run = |key: &str, node: &str, status| NodeRun {
            run: key.into(),
            node: node.into(),
            kind: "llm".into(),
            path: vec!["p".into(), node.into()],
            iteration: None,
            status,
            output: None,
            exit_loop: false,
            started_at: "t".into(),
            finished_at: None,
        };
        let s = PipelineState {
            version: PIPELINE_STATE_VERSION,
            shape: "p:sequential(a:llm,b:llm)".into(),
            status: RunStatus::Paused,
            turn: "m1".into(),
            user_message: "hi".into(),
            state: BTreeMap::from([("analysis".to_string(), "x".to_string())]),
            nodes: vec![
                run("p/a", "a", RunStatus::Completed),
                run("p/b", "b", RunStatus::Paused),
            ],
            pending: vec![],
            output: None,
            error: None,
            updated_at: "t".into(),
        };
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["status"], "paused");
        assert_eq!(v["nodes"][1]["status"], "paused");
        assert!(v.get("pending").is_none());
        let back: PipelineState = serde_json::from_value(v).unwrap();
        assert_eq!(back, s);
        assert_eq!(back.latest("b").unwrap().run, "p/b");
        assert_eq!(back.current().len(), 1);
    }
}
