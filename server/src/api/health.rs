//! `GET /health`: liveness for load balancers and scripts.
//!
//! Always 200 while the server answers (existing conversations and approvals
//! stay usable), with an `llm` field when the configured model cannot be
//! used, e.g. `"GEMINI_API_KEY is not set"`.

use crate::state::AppState;
use app::models::Health;
use axum::Json;
use axum::extract::State;

pub async fn health(State(state): State<AppState>) -> Json<Health> {
    Json(Health {
        status: "ok".into(),
        llm: state.engine.llm_problem(),
    })
}
