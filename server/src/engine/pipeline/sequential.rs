//! The `sequential` node: children in order, each seeing what the earlier
//! ones wrote to session state. A pause anywhere below pauses the whole
//! pipeline (the later children have not started); a child that calls
//! `exit_loop` ends the enclosing loop, so the rest of this iteration is
//! skipped.

use super::run::{NodeEnd, Run, child_key, run_node};
use crate::engine::error::EngineError;
use crate::engine::tree::Node;
use std::sync::Arc;

pub(crate) async fn run(run: Arc<Run>, node: Arc<Node>, key: &str) -> Result<NodeEnd, EngineError> {
    run_children(&run, &node, key, None).await
}

/// Runs `node`'s children in order (the iteration's children for a loop).
/// Stops at a pause, a stop, or an `exit_loop` (reported in the result);
/// the output is the last child's.
pub(crate) async fn run_children(
    run: &Arc<Run>,
    node: &Node,
    key: &str,
    iteration: Option<u32>,
) -> Result<NodeEnd, EngineError> {
    let mut output = String::new();
    for child in &node.children {
        let k = child_key(key, child, iteration);
        match run_node(run.clone(), child.clone(), k, iteration).await? {
            NodeEnd::Done {
                output: o,
                exit_loop,
            } => {
                output = o;
                if exit_loop {
                    return Ok(NodeEnd::Done {
                        output,
                        exit_loop: true,
                    });
                }
            }
            other => return Ok(other),
        }
    }
    Ok(NodeEnd::Done {
        output,
        exit_loop: false,
    })
}
