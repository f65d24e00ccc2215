//! The Tasks extension's shapes (SEP-2663) for the agent's tool: a task's
//! state as `tasks/get` and the `resultType: "task"` answer write it.
//! What a state means is the engine's (`engine::mcp_endpoint::tasks`).

use super::wire;
use crate::domain::pages::Pages;
use crate::engine::mcp_endpoint::reply::Pause;
use crate::engine::mcp_endpoint::tasks::{TaskState, TaskView};
use rmcp::model::{DetailedTask, InputRequest, JsonObject, Task, TaskPayload, TaskStatus};
use serde_json::json;

/// How often a client should poll, in milliseconds.
const POLL_MS: u64 = 1000;

/// The task as `tasks/get` shows it.
pub(crate) fn detailed(view: &TaskView, pages: &dyn Pages) -> DetailedTask {
    let payload = match &view.state {
        TaskState::Working { .. } => TaskPayload::Working,
        TaskState::InputRequired { on, form } => {
            let params = wire::elicitation(&view.id, on, *form, false, pages);
            let request = json!({"method": "elicitation/create", "params": params});
            match serde_json::from_value::<InputRequest>(request) {
                Ok(r) => TaskPayload::InputRequired {
                    input_requests: [(on.waits_on().key(), r)].into_iter().collect(),
                },
                Err(_) => TaskPayload::Working,
            }
        }
        TaskState::Completed(reply) => TaskPayload::Completed {
            result: object(wire::result_of(reply, pages)),
        },
        TaskState::Failed(why) => TaskPayload::Failed {
            error: object(
                json!({"code": -32603, "message": format!("the agent's turn failed: {why}")}),
            ),
        },
        TaskState::Cancelled => TaskPayload::Cancelled,
    };
    DetailedTask::new(task(view, pages), payload)
}

/// The task's base fields, with a status message saying what it waits on.
pub(crate) fn task(view: &TaskView, pages: &dyn Pages) -> Task {
    let status = match &view.state {
        TaskState::Working { .. } => TaskStatus::Working,
        TaskState::InputRequired { .. } => TaskStatus::InputRequired,
        TaskState::Completed(_) => TaskStatus::Completed,
        TaskState::Failed(_) => TaskStatus::Failed,
        TaskState::Cancelled => TaskStatus::Cancelled,
    };
    let mut t = Task::new(&view.id, status, &view.created_at, &view.updated_at)
        .with_poll_interval_ms(POLL_MS);
    if let TaskState::Working { waiting: Some(on) } = &view.state {
        let url = pages.conversation(&view.id);
        let what = match on {
            Pause::Approval(a) => format!("waiting for approval: {}", a.description),
            Pause::Question(q) => format!("waiting for an answer: {}", q.message),
        };
        t = t.with_status_message(format!("{what}; decide at {url}"));
    }
    t
}

fn object(v: serde_json::Value) -> JsonObject {
    match v {
        serde_json::Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}
