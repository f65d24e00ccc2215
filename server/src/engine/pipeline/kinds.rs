//! Which file runs which node kind: the one place that knows every kind,
//! handed to the run as its [`RunKind`](super::run::RunKind) so the nodes
//! that hold others reach their children through `run_node` without a
//! circle between the files.

use super::run::{NodeEnd, Run};
use super::{a2a_node, llm_node, loop_node, parallel, sequential};
use crate::config::NodeKind;
use crate::domain::BoxFuture;
use crate::engine::error::EngineError;
use crate::engine::tree::Node;
use std::sync::Arc;

/// Runs `node` (its run recorded as started under `key`) by its kind.
pub(super) fn run_kind(
    run: Arc<Run>,
    node: Arc<Node>,
    key: String,
) -> BoxFuture<'static, Result<NodeEnd, EngineError>> {
    Box::pin(async move {
        match node.cfg.kind {
            NodeKind::Llm => llm_node::run(&run, &node, &key).await,
            NodeKind::A2a => a2a_node::run(&run, &node, &key).await,
            NodeKind::Sequential => sequential::run(run.clone(), node.clone(), &key).await,
            NodeKind::Parallel => parallel::run(run.clone(), node.clone(), &key).await,
            NodeKind::Loop => loop_node::run(run.clone(), node.clone(), &key).await,
        }
    })
}
