//! `GET /notifications` and `POST /notifications/:id/retry`: the outbox as
//! operators see it (POLICY.md §5): recent deliveries with their status
//! and attempts, dead letters, and sending a dead letter again (admin).

use crate::http::caller::Caller;
use crate::http::error::ApiError;
use crate::http::extract::Drained;
use crate::http::state::AppState;
use app::models::DeliveryList;
use axum::Json;
use axum::extract::{Path, Query, State};
use serde::Deserialize;
use serde_json::{Value, json};

/// The most rows one page shows.
const MAX_LIMIT: u32 = 500;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NotificationQuery {
    /// `pending`, `delivered`, `dead` or `skipped`.
    pub(crate) status: Option<String>,
    pub(crate) limit: Option<u32>,
}

/// The newest rows, checked query first.
pub(crate) async fn page(state: &AppState, q: NotificationQuery) -> Result<DeliveryList, ApiError> {
    if let Some(s) = &q.status
        && !["pending", "delivered", "dead", "skipped"].contains(&s.as_str())
    {
        return Err(ApiError::BadRequest(format!(
            "unknown status {s:?}: use pending, delivered, dead or skipped"
        )));
    }
    let limit = q.limit.unwrap_or(100);
    if limit == 0 || limit > MAX_LIMIT {
        return Err(ApiError::BadRequest(format!(
            "limit must be 1 to {MAX_LIMIT}"
        )));
    }
    Ok(state.store.notifications(q.status, limit).await?)
}

/// `GET /notifications?status=&limit=` → `{"deliveries": [...], "counts": {...}}`.
pub(crate) async fn list(
    State(state): State<AppState>,
    q: Result<Query<NotificationQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<DeliveryList>, ApiError> {
    let Query(q) = q.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    Ok(Json(page(&state, q).await?))
}

/// `POST /notifications/:id/retry` (admin): a dead letter is sent again
/// with a fresh retry window. 409 when it is not a dead letter.
pub(crate) async fn retry(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Caller(ctx): Caller,
    _body: Drained,
) -> Result<Json<Value>, ApiError> {
    if !state
        .store
        .retry_notification(&id, &ctx.principal.name)
        .await?
    {
        return Err(ApiError::Conflict(format!(
            "notification {id:?} is not a dead letter: only dead letters are sent again"
        )));
    }
    Ok(Json(json!({"id": id, "status": "pending"})))
}
