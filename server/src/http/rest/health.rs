//! `GET /health`: liveness for load balancers and scripts.
//!
//! Always 200 while the server answers (existing conversations and approvals
//! stay usable), with an `llm` field when the configured model cannot be
//! used, e.g. `"GEMINI_API_KEY is not set"`.

use crate::http::state::AppState;
use app::models::{AgentInfo, Health};
use axum::Json;
use axum::extract::State;

/// With auth on, a caller who proved nothing gets the status only
/// (AUTH.md §3): the model's problem is for operators.
pub(crate) async fn health(
    State(state): State<AppState>,
    identity: Option<axum::Extension<crate::http::auth::identity::Identity>>,
) -> Json<Health> {
    let known = !state.auth.enforced() || identity.is_some_and(|i| i.0.known());
    Json(Health {
        status: "ok".into(),
        llm: state.engine.llm_problem().filter(|_| known),
    })
}

/// `GET /agent`: name, description and model, for the UI's header and banners.
pub(crate) async fn agent(State(state): State<AppState>) -> Json<AgentInfo> {
    Json(agent_info(&state))
}

/// The agent's description, shared with server-side rendering.
pub(crate) fn agent_info(state: &AppState) -> AgentInfo {
    AgentInfo {
        name: state.config.name.clone(),
        description: state.config.description.clone(),
        model: state.engine.llm_label(),
        llm_problem: state.engine.llm_problem(),
        mcp_endpoint: state
            .config
            .mcp_endpoint
            .enabled
            .then(|| crate::http::paths::MCP.to_string()),
    }
}
