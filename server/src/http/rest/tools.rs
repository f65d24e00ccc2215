//! `GET /tools`: every tool the agent can call, with `destructiveHint`, its
//! effective rule list (POLICY.md §1), and the health of the servers
//! behind them.

use crate::http::state::AppState;
use crate::store::pins::Acceptance;
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

/// The body of an accept: the digest of what the admin looked at (the
/// pin's `digest` in `GET /tools`), optional.
#[derive(serde::Deserialize)]
pub(crate) struct Accept {
    #[serde(default)]
    digest: Option<String>,
}

/// `POST /tools/:name/accept` (admin): accepts the changed definition of a
/// held tool (POLICY.md §4), audited as `tool.accepted`, or the held agent
/// card of a sub-agent's tool (`a2a.card_accepted`); answers the tool as
/// `GET /tools` lists it. 404 unknown tool, 409 nothing to accept or not
/// what `digest` names.
pub(crate) async fn accept(
    State(state): State<AppState>,
    axum::extract::Path(name): axum::extract::Path<String>,
    crate::http::caller::Caller(ctx): crate::http::caller::Caller,
    crate::http::extract::ApiJson(body): crate::http::extract::ApiJson<Accept>,
) -> Result<Json<Value>, crate::http::error::ApiError> {
    let card = name
        .strip_prefix("a2a_")
        .is_some_and(|a| state.engine.sub_agent_url(a).is_some());
    let (what, waits) = if card {
        ("the agent card", "held")
    } else {
        ("the definition", "changed")
    };
    let conflict = |text: String| Err(crate::http::error::ApiError::Conflict(text));
    match state
        .engine
        .accept_tool(&name, &ctx.principal.name, body.digest.as_deref())
        .await?
    {
        Acceptance::Accepted => {}
        Acceptance::Nothing => {
            return conflict(format!(
                "{what} of `{name}` is not {waits}: there is nothing to accept"
            ));
        }
        Acceptance::Moved(now) => {
            return conflict(format!(
                "{what} of `{name}` that waits is not the one you looked at (digest {now}): look again (GET /tools), then accept"
            ));
        }
    }
    let tool = tool_list(&state).tools.into_iter().find(|t| t.name == name);
    Ok(Json(json!({ "tool": tool })))
}
