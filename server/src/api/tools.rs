//! `GET /tools`: every tool the agent can call, with `destructiveHint`, and
//! the health of the servers behind them.

use crate::state::AppState;
use app::models::ToolList;
use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

/// `{"tools": [{"name", "description", "inputSchema", "destructiveHint",
/// "server", "available"}], "servers": [{"name", "available", "problem"?, "tools"}]}`.
pub async fn list(State(state): State<AppState>) -> Json<Value> {
    Json(json!({"tools": tool_list(&state).tools, "servers": state.engine.tools().servers()}))
}

/// Every tool as the API describes it (also what the UI's tools page renders).
pub fn tool_list(state: &AppState) -> ToolList {
    ToolList {
        tools: state
            .engine
            .all_tools()
            .iter()
            .map(|t| t.describe())
            .collect(),
    }
}
