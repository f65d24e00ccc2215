//! `GET /tools`: every tool the agent can call, with `destructiveHint`, its
//! effective rule list (POLICY.md §1), and the health of the servers
//! behind them.

use crate::http::state::AppState;
use app::models::{ToolList, ToolRule};
use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

/// `{"tools": [{"name", "description", "inputSchema", "destructiveHint",
/// "server", "available", "rules": [{"name", "action", "conditional"}]}], "servers": [{"name", "available", "problem"?, "tools"}]}`.
pub(crate) async fn list(State(state): State<AppState>) -> Json<Value> {
    Json(json!({"tools": tool_list(&state).tools, "servers": state.engine.tools().servers()}))
}

/// Every tool as the API describes it (also what the UI's tools page
/// renders), each with its effective rule list.
pub(crate) fn tool_list(state: &AppState) -> ToolList {
    let policy = state.engine.policy();
    ToolList {
        tools: state
            .engine
            .all_tools()
            .iter()
            .map(|t| {
                let mut d = t.describe();
                let (rules, total) = policy.rules_for(&t.name, &t.server);
                d.rules = rules
                    .into_iter()
                    .map(|r| ToolRule {
                        name: r.name,
                        action: r.action.into(),
                        conditional: r.conditional,
                    })
                    .collect();
                d.pin = state
                    .engine
                    .pin_view(t)
                    .or_else(|| state.engine.card_view(t));
                if !total {
                    d.rules.push(ToolRule {
                        name: if t.hinted {
                            "annotation"
                        } else {
                            "unannotated"
                        }
                        .into(),
                        action: if t.destructive { "approve" } else { "allow" }.into(),
                        conditional: false,
                    });
                }
                d
            })
            .collect(),
    }
}

/// `POST /tools/:name/accept` (admin): accepts the changed definition of a
/// held tool (POLICY.md §4), audited as `tool.accepted`; answers the tool
/// as `GET /tools` lists it. 404 unknown tool, 409 nothing to accept.
pub(crate) async fn accept(
    State(state): State<AppState>,
    axum::extract::Path(name): axum::extract::Path<String>,
    crate::http::caller::Caller(ctx): crate::http::caller::Caller,
) -> Result<Json<Value>, crate::http::error::ApiError> {
    if !state.engine.accept_tool(&name, &ctx.principal.name).await? {
        let agent = name.strip_prefix("a2a_");
        let what = if agent.is_some_and(|a| state.engine.sub_agent_url(a).is_some()) {
            format!("the agent card behind `{name}` is not held")
        } else {
            format!("the definition of `{name}` has not changed since it was pinned")
        };
        return Err(crate::http::error::ApiError::Conflict(format!(
            "{what}: there is nothing to accept"
        )));
    }
    let tool = tool_list(&state).tools.into_iter().find(|t| t.name == name);
    Ok(Json(json!({ "tool": tool })))
}
