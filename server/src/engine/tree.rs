//! The configured tree of nodes, compiled once at startup: each node's
//! effective approval rule and `on_reject`, the shape a stored run must
//! match to resume, and the tree as the UI draws it.

use crate::config::{ApprovalsMode, NodeConfig, NodeKind, OnReject};
use app::pipeline::PipelineNode;
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
}
