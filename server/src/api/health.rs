//! `GET /health`: liveness for load balancers and `make run` scripts.

use app::models::Health;
use axum::Json;

/// Always `{"status":"ok"}` while the server answers; later issues add an
/// `llm` field when the configured model cannot be used.
pub async fn health() -> Json<Health> {
    Json(Health {
        status: "ok".into(),
        llm: None,
    })
}
