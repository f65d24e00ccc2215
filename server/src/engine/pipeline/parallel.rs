//! The `parallel` node: children at once, each on its own tokio task.
//! The branches are the turn's children (a child of the engine's task
//! owner): when the turn stops (shutdown, or its future dropped), they
//! stop with it rather than run on behind it.
//!
//! Results are joined in declared order (`[name]` headings when there is
//! more than one), whatever order they finished in. Branches share session
//! state through the run's lock, and calls to one stdio MCP server are
//! multiplexed by its client. Without `approvals: enforce` destructive
//! tools run unattended here (seed FR-023); with it, every branch runs
//! until it finishes or asks, and the pipeline pauses once with every
//! pending approval listed.

use super::run::{NodeEnd, Run, child_key, run_node};
use crate::engine::error::EngineError;
use crate::engine::tree::Node;
use std::sync::Arc;

/// Why a branch has no end: the agent is shutting down.
const STOPPED: &str = "the agent is shutting down";

pub(crate) async fn run(run: Arc<Run>, node: Arc<Node>, key: &str) -> Result<NodeEnd, EngineError> {
    let branches = run.engine.tasks().child();
    let _stop_with_the_turn = branches.stop_on_drop();
    let handles: Vec<_> = node
        .children
        .iter()
        .map(|child| {
            let k = child_key(key, child, None);
            let span = tracing::Span::current();
            branches.spawn(
                "parallel branch",
                tracing::Instrument::instrument(
                    run_node(run.clone(), child.clone(), k, None),
                    span,
                ),
            )
        })
        .collect();
    let mut ends = Vec::new();
    let mut first_error = None;
    // Wait for every branch, even after an error: none is left running
    // behind the turn.
    for h in handles {
        match h.await {
            Ok(Some(Ok(end))) => ends.push(end),
            Ok(Some(Err(e))) => {
                first_error.get_or_insert(e);
            }
            Ok(None) => {
                first_error.get_or_insert(EngineError::Task(STOPPED.into()));
            }
            Err(join) => {
                first_error.get_or_insert(EngineError::Task(join.to_string()));
            }
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    let mut outputs = Vec::new();
    let mut paused = Vec::new();
    let mut exit = false;
    for (child, end) in node.children.iter().zip(ends) {
        match end {
            NodeEnd::Done { output, exit_loop } => {
                exit |= exit_loop;
                outputs.push((child.cfg.name.clone(), output));
            }
            NodeEnd::Paused(list) => paused.extend(list),
            NodeEnd::Stopped(text) => return Ok(NodeEnd::Stopped(text)),
        }
    }
    if !paused.is_empty() {
        return Ok(NodeEnd::Paused(paused));
    }
    let output = if outputs.len() == 1 {
        outputs.remove(0).1
    } else {
        outputs
            .iter()
            .map(|(name, o)| format!("[{name}]\n{o}"))
            .collect::<Vec<_>>()
            .join("\n\n")
    };
    Ok(NodeEnd::Done {
        output,
        exit_loop: exit,
    })
}
