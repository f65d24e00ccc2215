//! `GET /tools`: every tool the agent can call, with `destructiveHint`.

use crate::state::AppState;
use app::models::ToolList;
use axum::Json;
use axum::extract::State;

pub async fn list(State(state): State<AppState>) -> Json<ToolList> {
    Json(ToolList {
        tools: state
            .engine
            .tools()
            .tools()
            .iter()
            .map(|t| t.describe())
            .collect(),
    })
}
