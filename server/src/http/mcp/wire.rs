//! The agent's MCP replies as the protocol writes them (CLIENTS.md §2):
//! a tool result with `structuredContent`, an `input_required` round, an
//! elicitation's request. Only shapes here: what they say is the engine's.

use crate::domain::pages::Pages;
use crate::engine::mcp_endpoint::reply::{McpReply, Pause};
use app::models::{PendingApproval, Question};
use serde_json::{Value, json};

/// The tool result of a reply that asks nothing of this caller.
pub(crate) fn result_of(reply: &McpReply, pages: &dyn Pages) -> Value {
    match reply {
        McpReply::Ended {
            conversation_id,
            status,
            response,
        } => {
            let text = if response.is_empty() {
                format!("The conversation {conversation_id} is {}.", status.as_str())
            } else {
                response.clone()
            };
            json!({
                    "resultType": "complete",
            "content": [{"type": "text", "text": text}],
                    "isError": false,
                    "structuredContent": {
                        "conversation_id": conversation_id,
                        "status": status.as_str(),
                        "response": response,
                    }
                })
        }
        McpReply::Waiting {
            conversation_id,
            on,
        }
        | McpReply::Ask {
            conversation_id,
            on,
            ..
        } => waiting(conversation_id, on, pages),
    }
}

/// The plain waiting result: what waits, and the page where it is decided.
fn waiting(conversation_id: &str, on: &Pause, pages: &dyn Pages) -> Value {
    let url = pages.conversation(conversation_id);
    let (text, key, uuid) = match on {
        Pause::Approval(a) => (
            format!(
                "Waiting for approval: {}. Someone who may decide it does so at {url}; then call this tool again with conversation_id {conversation_id} and an empty message for the outcome.",
                a.description
            ),
            "approval",
            a.uuid.clone(),
        ),
        Pause::Question(q) => (
            format!(
                "Waiting for an answer: {} Answer it at {url}; then call this tool again with conversation_id {conversation_id} and an empty message for the outcome.",
                q.message
            ),
            "question",
            q.uuid.clone(),
        ),
    };
    json!({
        "resultType": "complete",
        "content": [{"type": "text", "text": text}],
        "isError": false,
        "structuredContent": {
            "conversation_id": conversation_id,
            "status": on.status().as_str(),
            key: {"uuid": uuid, "url": url},
        }
    })
}

/// The elicitation that asks about `on` (`params` of
/// `elicitation/create`): a form, or the page as a URL. `elicitation_id`
/// only for 2025-11-25 sessions (2026-07-28 removed it).
pub(crate) fn elicitation(
    conversation_id: &str,
    on: &Pause,
    form: bool,
    legacy: bool,
    pages: &dyn Pages,
) -> Value {
    let url = pages.conversation(conversation_id);
    let mut params = match (on, form) {
        (Pause::Approval(a), true) => json!({
            "mode": "form",
            "message": approval_message(a),
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "decision": {
                        "type": "string",
                        "title": "Decision",
                        "enum": ["approve", "reject"],
                        "enumNames": ["Approve", "Reject"],
                    },
                    "reason": {"type": "string", "title": "Reason (optional)"},
                },
                "required": ["decision"],
            }
        }),
        (Pause::Question(q), true) => json!({
            "mode": "form",
            "message": question_message(q),
            "requestedSchema": q.schema.clone().unwrap_or_else(|| json!({"type": "object", "properties": {}})),
        }),
        (Pause::Approval(a), false) => json!({
            "mode": "url",
            "message": format!("{} Decide it on the agent's page.", approval_message(a)),
            "url": url,
        }),
        (Pause::Question(q), false) => json!({
            "mode": "url",
            "message": question_message(q),
            "url": q.url.clone().unwrap_or(url),
        }),
    };
    if legacy
        && !form
        && let Value::Object(m) = &mut params
    {
        m.insert("elicitationId".into(), json!(on.waits_on().key()));
    }
    params
}

/// An approval as a person reads it: the tool, where it runs, the exact
/// arguments.
fn approval_message(a: &PendingApproval) -> String {
    let server = a
        .server
        .as_deref()
        .map(|s| format!(" on `{s}`"))
        .unwrap_or_default();
    let through = a
        .chain
        .as_ref()
        .filter(|c| !c.is_empty())
        .map(|c| format!(" (asked through {})", c.join(" → ")))
        .unwrap_or_default();
    let args = serde_json::to_string_pretty(a.edited_args.as_ref().unwrap_or(&a.tool_args))
        .unwrap_or_default();
    format!(
        "Approve `{}`{server}{through}? {}\nArguments:\n{args}",
        a.tool_name, a.description
    )
}

/// A tool's question, saying which tool asks.
fn question_message(q: &Question) -> String {
    format!("`{}` asks: {}", q.tool_call.tool, q.message)
}
