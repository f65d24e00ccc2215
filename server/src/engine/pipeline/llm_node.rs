//! The `llm` node: a full tool loop, like simple mode, with the node's own
//! prompt (placeholders resolved from session state), model and tools.
//!
//! The model sees the conversation's earlier turns (each question and its
//! answer), the current user message and its own steps; outputs of other
//! nodes reach it through `{placeholders}` in its prompt. `exit_loop` is
//! offered when the node may end its loop, and the node's `a2a` list
//! becomes `a2a_<name>` tools.

use super::run::{NodeEnd, Run};
use super::template::resolve;
use crate::engine::error::EngineError;
use crate::engine::scope::{LocalTool, Scope};
use crate::engine::tree::Node;
use crate::engine::turn::tool_loop::ScopeEnd;
use crate::store::NodeTag;
use app::pipeline::PendingCall;

/// Runs (or resumes) one run of an `llm` node.
pub(crate) async fn run(run: &Run, node: &Node, key: &str) -> Result<NodeEnd, EngineError> {
    let engine = &run.engine;
    let cfg = &node.cfg;
    let state = run.snapshot().await.state;
    let prompt = cfg
        .prompt
        .clone()
        .unwrap_or_else(|| engine.inner.config.prompt.clone());
    let mut local: Vec<LocalTool> = cfg
        .a2a
        .iter()
        .map(|a| LocalTool::a2a(&a.name, &a.url, &a.description, a.destructive_hint))
        .collect();
    if cfg.can_exit_loop {
        local.push(LocalTool::exit_loop());
    }
    let tag = NodeTag {
        name: cfg.name.clone(),
        run: key.to_string(),
    };
    let scope = Scope {
        node: Some(tag),
        system: resolve(&prompt, &state),
        llm: Some(engine.model_for(cfg.model.as_deref())?),
        local,
        asks_approval: node.asks_approval,
        stop_on_reject: node.stop_on_reject,
    };
    let end = engine
        .run_scope(&run.conversation_id, &scope, &run.ctx, None, None)
        .await?;
    Ok(match end {
        ScopeEnd::Done(output) | ScopeEnd::Answered(output, _) => NodeEnd::Done {
            output,
            exit_loop: false,
        },
        ScopeEnd::ExitLoop(output) => NodeEnd::Done {
            output,
            exit_loop: true,
        },
        ScopeEnd::Stopped(text) => NodeEnd::Stopped(text),
        ScopeEnd::Waiting(a) => NodeEnd::Paused(vec![(pending_call(node, key, &a), *a)]),
        // Calls in pipeline nodes have no asker: their questions are
        // declined at the MCP client and never pause a node.
        ScopeEnd::Asking(q) => {
            return Err(crate::engine::error::EngineError::Task(format!(
                "the tool `{}` asked a question inside the node `{}`, where questions cannot wait",
                q.tool_call.tool, node.cfg.name
            )));
        }
    })
}

/// The pipeline's record of a call waiting in `node`.
pub(crate) fn pending_call(
    node: &Node,
    key: &str,
    a: &app::models::PendingApproval,
) -> PendingCall {
    PendingCall {
        approval: a.uuid.clone(),
        node: node.cfg.name.clone(),
        run: key.to_string(),
        path: node.path.clone(),
        tool_name: a.tool_name.clone(),
        tool_args: a.tool_args.clone(),
    }
}
