//! `GET /grants` and `DELETE /grants/:id` (REACH.md §3): the grants that
//! let calls run without asking, and their revocation.

use crate::http::caller::Caller;
use crate::http::error::ApiError;
use crate::http::extract::Drained;
use crate::http::state::AppState;
use app::models::{Grant, GrantList};
use axum::Json;
use axum::extract::{Path, State};

/// `GET /grants` → `{"grants": [Grant…]}`: the live ones, newest first.
pub(crate) async fn list(State(state): State<AppState>) -> Result<Json<GrantList>, ApiError> {
    Ok(Json(GrantList {
        grants: state.engine.grants().await?,
    }))
}

/// `DELETE /grants/:id` → `{"grant": Grant}` as revoked: its creator,
/// whatever their roles now (the route needs only a known caller), or an
/// admin; 404 when no live grant has that id.
pub(crate) async fn revoke(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Caller(ctx): Caller,
    _body: Drained,
) -> Result<Json<serde_json::Value>, ApiError> {
    let g: Grant = state.engine.revoke_grant(&id, &ctx).await?;
    Ok(Json(serde_json::json!({"grant": g})))
}
