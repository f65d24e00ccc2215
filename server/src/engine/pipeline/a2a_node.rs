//! The `a2a` node: sends its prompt (placeholders resolved; by default the
//! user message) to a remote A2A agent as one step, and the answer is its
//! output.
//!
//! The step is stored as a tool call (`a2a_<node>` with a `message`
//! argument) before anything is sent, so it goes through the same
//! write-ahead path as every tool: `destructiveHint: true` asks for
//! approval first, a crash while the remote works leaves the call in
//! doubt instead of sending it twice, and a remote that is down gives
//! "sub-agent <name> unavailable: <reason>" as the output rather than a
//! hang (every request is bounded).

use super::llm_node::pending_call;
use super::run::{NodeEnd, Run};
use super::template::resolve;
use crate::engine::calls::outcome::CallOutcome;
use crate::engine::calls::state::Known;
use crate::engine::error::EngineError;
use crate::engine::scope::{LocalTool, Scope};
use crate::engine::tree::Node;
use crate::store::{NewMessage, NodeTag, StoredMessage};
use app::models::{EventKind, Role, ToolCall};
use serde_json::json;

pub(crate) async fn run(run: &Run, node: &Node, key: &str) -> Result<NodeEnd, EngineError> {
    let engine = &run.engine;
    let cfg = &node.cfg;
    let snapshot = run.snapshot().await;
    let message = match &cfg.prompt {
        Some(p) => resolve(p, &snapshot.state),
        None => snapshot.user_message.clone(),
    };
    let tool = LocalTool::a2a(
        &cfg.name,
        cfg.url.as_deref().unwrap_or_default(),
        &cfg.description,
        cfg.destructive_hint,
    );
    let tool_name = tool.info.name.clone();
    let tag = NodeTag {
        name: cfg.name.clone(),
        run: key.to_string(),
    };
    let scope = Scope {
        node: Some(tag.clone()),
        system: String::new(),
        llm: None,
        local: vec![tool],
        asks_approval: node.asks_approval,
        stop_on_reject: node.stop_on_reject,
    };
    let store = &engine.inner.store;
    loop {
        let id = run.conversation_id.clone();
        let stored = store.messages(&id).await?;
        let start = stored
            .iter()
            .rposition(|m| m.message.role == Role::User)
            .unwrap_or(0);
        let mine: Vec<&StoredMessage> = stored[start..].iter().filter(|m| scope.owns(m)).collect();
        let Some(call) = mine.iter().find(|m| m.message.tool_call.is_some()) else {
            let m = NewMessage {
                tool_call: Some(ToolCall {
                    name: tool_name.clone(),
                    arguments: json!({ "message": message }),
                    server: Some(cfg.name.clone()),
                    ..Default::default()
                }),
                call_id: Some(key.to_string()),
                step: Some(crate::domain::ids::new_id()),
                ..NewMessage::text(Role::Tool, "")
            }
            .in_node(Some(&tag));
            store.append_message(run.conversation_id.clone(), m).await?;
            engine
                .inner
                .events
                .emit(EventKind::MessageAdded, &run.conversation_id, |e| {
                    e.running = Some(true);
                    e.node = Some(cfg.name.clone());
                });
            continue;
        };
        if call.is_unanswered_call() {
            if let CallOutcome::AwaitsApproval(a) = engine
                .handle_call(&run.conversation_id, call, &scope, &run.ctx, Known::Nothing)
                .await?
            {
                return Ok(NodeEnd::Paused(vec![(pending_call(node, key, &a), *a)]));
            }
            continue;
        }
        if scope.stop_on_reject
            && let Some(text) = engine.rejected_in(&mine).await?
        {
            return Ok(NodeEnd::Stopped(text));
        }
        let output = call
            .message
            .tool_call
            .as_ref()
            .and_then(|t| t.result.clone())
            .unwrap_or_default();
        return Ok(NodeEnd::Done {
            output,
            exit_loop: false,
        });
    }
}
