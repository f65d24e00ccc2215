//! The `loop` node: its children, in order, again and again, until one of
//! them calls `exit_loop` or `max_iterations` (default 10) is reached.
//!
//! Each iteration's runs have their own keys (`…/checker@2`), so a resumed
//! loop skips the iterations it finished and continues the one it paused
//! in. Without `approvals: enforce` destructive tools run unattended here
//! (seed FR-024).

use super::run::{NodeEnd, Run};
use super::sequential;
use crate::config::DEFAULT_MAX_ITERATIONS;
use crate::engine::error::EngineError;
use crate::engine::tree::Node;
use crate::store::{NewMessage, NodeTag};
use app::models::Role;
use std::sync::Arc;

pub(crate) async fn run(run: Arc<Run>, node: Arc<Node>, key: &str) -> Result<NodeEnd, EngineError> {
    let max = node.cfg.max_iterations.unwrap_or(DEFAULT_MAX_ITERATIONS);
    let mut output = String::new();
    for i in 1..=max {
        let k = key.to_string();
        run.update(
            move |s| {
                if let Some(r) = s.nodes.iter_mut().find(|n| n.run == k) {
                    r.iteration = Some(r.iteration.unwrap_or(0).max(i));
                }
            },
            None,
        )
        .await?;
        match sequential::run_children(&run, &node, key, Some(i)).await? {
            NodeEnd::Done {
                output: o,
                exit_loop,
            } => {
                output = o;
                if exit_loop {
                    return Ok(NodeEnd::Done {
                        output,
                        exit_loop: false,
                    });
                }
            }
            other => return Ok(other),
        }
    }
    let tag = NodeTag {
        name: node.cfg.name.clone(),
        run: key.to_string(),
    };
    run.update(
        |_| (),
        Some(
            NewMessage::text(
                Role::System,
                format!(
                    "`{}` stopped after max_iterations ({max}) without an exit_loop call",
                    node.cfg.name
                ),
            )
            .in_node(Some(&tag)),
        ),
    )
    .await?;
    Ok(NodeEnd::Done {
        output,
        exit_loop: false,
    })
}
