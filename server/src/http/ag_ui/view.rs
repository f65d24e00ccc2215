//! A run's view as AG-UI events: what the run added to the conversation
//! (the model's text, its tool calls and their results, a result that
//! arrived for a call stored before, such as an approved one), then how it
//! ended: `success`, or `interrupt` with what it waits on.

use super::events::{Event, Interrupt, Outcome, SubagentOutcome};
use crate::domain::pages::Pages;
use crate::engine::ag_ui::run::{Interrupt as Open, RunView};
use crate::engine::mcp_endpoint::reply::Pause;
use app::models::{Conversation, PendingApproval, Question, Role};
use serde_json::{Value, json};

/// The events after `RUN_STARTED`, ending with `RUN_FINISHED`.
pub(crate) fn events(view: &RunView, thread: &str, run: &str, pages: &dyn Pages) -> Vec<Event> {
    let mut out = Vec::new();
    let c = &view.conversation;
    for m in &c.messages {
        let new = !view.seen.messages.contains(&m.id);
        match (&m.tool_call, m.role) {
            (Some(t), _) => {
                if new {
                    out.push(Event::ToolCallStart {
                        tool_call_id: m.id.clone(),
                        tool_call_name: t.name.clone(),
                    });
                    out.push(Event::ToolCallArgs {
                        tool_call_id: m.id.clone(),
                        delta: t.arguments.to_string(),
                    });
                    out.push(Event::ToolCallEnd {
                        tool_call_id: m.id.clone(),
                    });
                }
                if let Some(result) = &t.result
                    && !view.seen.results.contains(&m.id)
                {
                    out.push(Event::ToolCallResult {
                        message_id: format!("{}-result", m.id),
                        tool_call_id: m.id.clone(),
                        content: result.clone(),
                        role: "tool",
                    });
                }
            }
            (None, Role::Assistant) if new && !m.content.is_empty() => {
                out.push(Event::TextMessageStart {
                    message_id: m.id.clone(),
                    role: "assistant",
                });
                out.push(Event::TextMessageContent {
                    message_id: m.id.clone(),
                    delta: m.content.clone(),
                });
                out.push(Event::TextMessageEnd {
                    message_id: m.id.clone(),
                });
            }
            _ => {}
        }
    }
    let interrupts: Vec<Interrupt> = view
        .interrupts
        .iter()
        .map(|i| interrupt(c, i, pages))
        .collect();
    for i in &interrupts {
        out.extend(suspended_subagent(i, &view.interrupts));
    }
    let outcome = if interrupts.is_empty() {
        Outcome::Success
    } else {
        Outcome::Interrupt { interrupts }
    };
    out.push(Event::RunFinished {
        thread_id: thread.to_string(),
        run_id: run.to_string(),
        result: json!({"conversationId": c.id, "status": c.status}),
        outcome,
    });
    out
}

/// A proxy approval's sub-agent, started and suspended on the interrupt
/// (AG-UI's subagent events: the client can group it under the call that
/// reached the sub-agent; a later run continues the same invocation).
fn suspended_subagent(i: &Interrupt, open: &[Open]) -> Vec<Event> {
    let Some(run) = &i.subagent_run_id else {
        return Vec::new();
    };
    let name = open
        .iter()
        .find_map(|o| match &o.pause {
            Pause::Approval(a) if a.uuid == i.id => a.remote_agent_name.clone(),
            _ => None,
        })
        .unwrap_or_else(|| "sub-agent".into());
    vec![
        Event::SubagentStarted {
            subagent_run_id: run.clone(),
            name,
            parent_tool_call_id: i.tool_call_id.clone(),
        },
        Event::SubagentFinished {
            subagent_run_id: run.clone(),
            outcome: SubagentOutcome::Suspended {
                interrupt_ids: vec![i.id.clone()],
            },
        },
    ]
}

fn interrupt(c: &Conversation, open: &Open, pages: &dyn Pages) -> Interrupt {
    match &open.pause {
        Pause::Approval(a) => approval(c, a, open.editable, pages),
        Pause::Question(q) => question(q, pages),
    }
}

/// An approval: `tool_call`, its call's id, the exact arguments.
fn approval(c: &Conversation, a: &PendingApproval, editable: bool, pages: &dyn Pages) -> Interrupt {
    let call = c.messages.iter().rev().find(|m| {
        m.tool_call
            .as_ref()
            .and_then(|t| t.approval.as_ref())
            .is_some_and(|o| o.uuid == a.uuid)
    });
    let mut properties = json!({
        "approved": {"type": "boolean", "description": "true runs the call, false rejects it"},
        "reason": {"type": "string", "description": "why (told to the model on a rejection)"},
    });
    if editable {
        properties["editedArgs"] = json!({
            "type": "object",
            "description": "approve with these arguments instead",
        });
    }
    let mut metadata = json!({
        "tool": a.tool_name,
        "server": a.server,
        "arguments": a.tool_args,
        "url": pages.conversation(&c.id),
    });
    if let Some(chain) = &a.chain {
        metadata["chain"] = json!(chain);
    }
    if a.needed() > 1 {
        metadata["quorum"] = json!({"needed": a.needed(), "approvals": a.approvals()});
    }
    Interrupt {
        subagent_run_id: a.remote_task_id.clone(),
        id: a.uuid.clone(),
        reason: "tool_call",
        message: a.description.clone(),
        tool_call_id: call.map(|m| m.id.clone()),
        response_schema: json!({"type": "object", "properties": properties, "required": ["approved"]}),
        expires_at: a.expires_at.clone(),
        metadata,
    }
}

/// A question: `input_required` with its form's schema (a URL question:
/// its page in `metadata.url`, answered with an empty payload).
fn question(q: &Question, pages: &dyn Pages) -> Interrupt {
    let schema = q
        .schema
        .clone()
        .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
    let mut metadata = json!({
        "kind": q.kind,
        "tool": q.tool_call,
        "page": pages.conversation(&q.conversation_id),
    });
    if let Some(url) = &q.url {
        metadata["url"] = Value::String(url.clone());
    }
    if !q.chain.is_empty() {
        metadata["chain"] = json!(q.chain);
    }
    Interrupt {
        subagent_run_id: None,
        id: q.uuid.clone(),
        reason: "input_required",
        message: q.message.clone(),
        tool_call_id: None,
        response_schema: schema,
        expires_at: q.expires_at.clone(),
        metadata,
    }
}
