//! `POST /approvals/:uuid/resolve` (RECEIPTS.md §3): a person's word on a
//! call left `in_doubt`: `{"outcome": "executed" | "failed" | "retry",
//! "note"?}`. The answer is the approval as `GET /approvals/:uuid` shows
//! it.

use crate::http::caller::Caller;
use crate::http::error::ApiError;
use crate::http::extract::ApiJson;
use crate::http::state::AppState;
use crate::store::resolutions::Outcome;
use app::models::{ApprovalRecord, ResolveInDoubt};
use axum::Json;
use axum::extract::{Path, State};

/// Reads the outcome a person named.
fn outcome_of(s: &str) -> Result<Outcome, ApiError> {
    Outcome::parse(s).ok_or_else(|| {
        ApiError::BadRequest(format!(
            "\"outcome\" must be \"executed\" (it ran), \"failed\" (it did not) or \"retry\" (send it again with its idempotency key), not {s:?}"
        ))
    })
}

pub(crate) async fn resolve(
    State(state): State<AppState>,
    Path(uuid): Path<String>,
    Caller(ctx): Caller,
    ApiJson(body): ApiJson<ResolveInDoubt>,
) -> Result<Json<ApprovalRecord>, ApiError> {
    let outcome = outcome_of(&body.outcome)?;
    let note = body.note.filter(|n| !n.trim().is_empty());
    if note.as_ref().is_some_and(|n| n.chars().count() > 1000) {
        return Err(ApiError::BadRequest(
            "\"note\" is at most 1000 characters".into(),
        ));
    }
    let a = state.engine.resolve(&uuid, outcome, note, &ctx).await?;
    Ok(Json(super::approvals::record(a)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_outcomes_and_nothing_else() {
        assert_eq!(outcome_of("executed").unwrap(), Outcome::Executed);
        assert_eq!(outcome_of("failed").unwrap(), Outcome::Failed);
        assert_eq!(outcome_of("retry").unwrap(), Outcome::Retry);
        assert!(outcome_of("ran").is_err());
    }
}
