//! `GET /tools`: every tool the agent can call, with `destructiveHint`, and
//! the health of the servers behind them.

use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

/// `{"tools": [{"name", "description", "inputSchema", "destructiveHint",
/// "server", "available"}], "servers": [{"name", "available", "problem"?, "tools"}]}`.
pub async fn list(State(state): State<AppState>) -> Json<Value> {
    let router = state.engine.tools();
    let tools: Vec<_> = router.tools().iter().map(|t| t.describe()).collect();
    Json(json!({"tools": tools, "servers": router.servers()}))
}
