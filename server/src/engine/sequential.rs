//! The `sequential` node: children in order, each seeing what the earlier
//! ones wrote to session state. A pause anywhere below pauses the whole
//! pipeline (the later children have not started); a child that calls
//! `exit_loop` ends the enclosing loop, so the rest of this iteration is
//! skipped.

use super::EngineError;
use super::pipeline::{Node, NodeEnd, Run, child_key, run_node};
use std::sync::Arc;

pub(crate) async fn run(run: Arc<Run>, node: Arc<Node>, key: &str) -> Result<NodeEnd, EngineError> {
    let mut output = String::new();
    for child in &node.children {
        let k = child_key(key, child, None);
        match run_node(run.clone(), child.clone(), k, None).await? {
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
