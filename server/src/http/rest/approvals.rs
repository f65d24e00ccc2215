//! `POST /approvals/:uuid`: an operator's decision; `GET /approvals` (the
//! inbox) and `GET /approvals/:uuid` (one approval, its receipt).
//!
//! Three body shapes are accepted, because the seed's clients use all of
//! them: `{"approved": bool}`, `{"action": "approve"|"reject"}` and
//! `{"answer": "yes"|"no"}`, each with an optional `"reason"`. Anything else
//! is a 400 that lists them, never a silent rejection.

use crate::engine::DecisionRequest;
use crate::http::caller::Caller;
use crate::http::error::ApiError;
use crate::http::extract::{ApiJson, ApiQuery};
use crate::http::state::AppState;
use app::models::{ApprovalList, ApprovalQuery, ApprovalRecord, ConversationResponse};
use axum::Json;
use axum::extract::{Path, State};
use serde::Deserialize;
use serde_json::Value;

const SHAPES: &str = "send {\"approved\": true|false}, {\"action\": \"approve\"|\"reject\"} or {\"answer\": \"yes\"|\"no\"}, \
                      optionally with \"reason\" (and, approving, \"arguments\" to run the tool with and \"grant\" to allow it again)";

/// Reads a decision from any accepted body shape.
pub(crate) fn parse_decision(body: &Value) -> Result<DecisionRequest, String> {
    let Value::Object(m) = body else {
        return Err(format!("the body must be a JSON object: {SHAPES}"));
    };
    let reason = match m.get("reason") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("\"reason\" must be a string".into()),
    };
    let arguments = match m.get("arguments") {
        None | Some(Value::Null) => None,
        Some(v @ Value::Object(_)) => Some(v.clone()),
        Some(_) => {
            return Err(
                "\"arguments\" must be a JSON object: the tool's arguments as the approver edited them"
                    .into(),
            );
        }
    };
    let word = |v: &Value, yes: &[&str], no: &[&str]| -> Option<bool> {
        let s = v.as_str()?.trim().to_ascii_lowercase();
        if yes.contains(&s.as_str()) {
            Some(true)
        } else if no.contains(&s.as_str()) {
            Some(false)
        } else {
            None
        }
    };
    let approve = if let Some(v) = m.get("approved") {
        v.as_bool()
            .ok_or_else(|| format!("\"approved\" must be true or false: {SHAPES}"))?
    } else if let Some(v) = m.get("action") {
        word(v, &["approve", "approved"], &["reject", "rejected"])
            .ok_or_else(|| format!("\"action\" must be \"approve\" or \"reject\": {SHAPES}"))?
    } else if let Some(v) = m.get("answer") {
        word(v, &["yes", "y", "approve"], &["no", "n", "reject"])
            .ok_or_else(|| format!("\"answer\" must be \"yes\" or \"no\": {SHAPES}"))?
    } else {
        return Err(format!("no decision in the body: {SHAPES}"));
    };
    if arguments.is_some() && !approve {
        return Err("\"arguments\" only go with an approval: a rejection runs nothing".into());
    }
    let grant = match m.get("grant") {
        None | Some(Value::Null) => None,
        Some(v @ Value::Object(_)) => Some(
            serde_json::from_value::<app::models::GrantRequest>(v.clone()).map_err(|e| {
                format!(
                    "\"grant\" must be {{\"scope\": \"conversation\"|\"agent\", \"for\": \"1h\", \"match\": [\"/pointer\"]}} (each optional): {e}"
                )
            })?,
        ),
        Some(_) => {
            return Err(
                "\"grant\" must be an object: {\"scope\", \"for\", \"match\"}".into(),
            );
        }
    };
    if grant.is_some() && !approve {
        return Err("\"grant\" only goes with an approval: a rejection grants nothing".into());
    }
    Ok(DecisionRequest {
        approve,
        reason,
        arguments,
        grant,
        upstream_receipt: None,
    })
}

/// `POST /approvals/:uuid` → `{"conversation": C, "result": R}`.
pub(crate) async fn decide(
    State(state): State<AppState>,
    Path(uuid): Path<String>,
    Caller(ctx): Caller,
    ApiJson(body): ApiJson<Value>,
) -> Result<Json<ConversationResponse>, ApiError> {
    let decision = parse_decision(&body).map_err(ApiError::BadRequest)?;
    let reply = state.engine.decide(&uuid, decision, ctx).await?;
    Ok(Json(ConversationResponse {
        conversation: reply.conversation,
        result: Some(reply.result),
    }))
}

/// Approvals per page when the query names no `limit`.
const DEFAULT_LIMIT: u32 = 100;
/// The most approvals one page shows.
const MAX_LIMIT: u32 = 500;

/// The query of `GET /approvals` (and `GET /questions`, paged the same
/// way); an unknown parameter is a 400, so a typo does not silently return
/// the first page.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct InboxParams {
    limit: Option<u32>,
    cursor: Option<String>,
}

impl InboxParams {
    pub(crate) fn query(self) -> ApprovalQuery {
        ApprovalQuery {
            limit: self.limit,
            cursor: self.cursor,
        }
    }
}

/// A page's `limit` (the default when absent), or the 400 naming the range.
pub(crate) fn page_limit(limit: Option<u32>) -> Result<u32, ApiError> {
    let limit = limit.unwrap_or(DEFAULT_LIMIT);
    if limit > MAX_LIMIT {
        return Err(ApiError::BadRequest(format!(
            "limit must be between 0 (the total alone) and {MAX_LIMIT}, got {limit}"
        )));
    }
    Ok(limit)
}

/// The 400 for a cursor that names nothing waiting.
pub(crate) fn unknown_cursor(cursor: Option<String>) -> ApiError {
    ApiError::BadRequest(format!(
        "unknown cursor {:?}: pass the next_cursor of the page before",
        cursor.unwrap_or_default()
    ))
}

/// `GET /approvals?limit=&cursor=` → `{"approvals": [PendingApproval…],
/// "total": N, "next_cursor"?}`: the approvals waiting for a decision,
/// oldest first, a page at a time (the inbox).
pub(crate) async fn list(
    State(state): State<AppState>,
    ApiQuery(p): ApiQuery<InboxParams>,
) -> Result<Json<ApprovalList>, ApiError> {
    Ok(Json(pending(&state.store, p.query()).await?))
}

/// `GET /approvals/:uuid` → [`ApprovalRecord`]: the approval in any
/// state, with the receipt of the call it let through.
pub(crate) async fn get(
    State(state): State<AppState>,
    Path(uuid): Path<String>,
) -> Result<Json<ApprovalRecord>, ApiError> {
    let a = state
        .store
        .approval(&uuid)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("approval {uuid:?} not found")))?;
    Ok(Json(record(a)))
}

/// An approval row as the API shows it.
pub(crate) fn record(a: crate::store::approvals::Approval) -> ApprovalRecord {
    ApprovalRecord {
        receipt_claims: a.receipt.as_deref().and_then(receipts::unverified_claims),
        receipt: a.receipt,
        status: a.status,
        reason: a.reason,
        approval: a.approval,
    }
}

/// A page of the pending approvals, oldest first, with their total.
pub(crate) async fn pending(
    store: &crate::store::Store,
    q: ApprovalQuery,
) -> Result<ApprovalList, ApiError> {
    let limit = page_limit(q.limit)?;
    let cursor = q.cursor.filter(|c| !c.is_empty());
    let page = store
        .pending_page(cursor.clone(), limit)
        .await?
        .ok_or_else(|| unknown_cursor(cursor))?;
    let next_cursor = page
        .more
        .then(|| page.approvals.last().map(|a| a.approval.uuid.clone()))
        .flatten();
    Ok(ApprovalList {
        approvals: page.approvals.into_iter().map(|a| a.approval).collect(),
        total: u64::try_from(page.total).unwrap_or(u64::MAX),
        next_cursor,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn all_three_shapes_decide() {
        assert!(parse_decision(&json!({"approved": true})).unwrap().approve);
        assert!(!parse_decision(&json!({"approved": false})).unwrap().approve);
        assert!(
            parse_decision(&json!({"action": "approve"}))
                .unwrap()
                .approve
        );
        assert!(
            !parse_decision(&json!({"action": "Reject", "reason": "no"}))
                .unwrap()
                .approve
        );
        assert!(parse_decision(&json!({"answer": "yes"})).unwrap().approve);
        assert!(!parse_decision(&json!({"answer": "no"})).unwrap().approve);
        assert_eq!(
            parse_decision(&json!({"approved": false, "reason": "risky"}))
                .unwrap()
                .reason
                .as_deref(),
            Some("risky")
        );
    }

    #[test]
    fn anything_else_is_explained() {
        for bad in [
            json!({}),
            json!({"approved": "yes"}),
            json!({"action": "maybe"}),
            json!({"answer": 1}),
            json!([1]),
            json!({"approved": true, "reason": 5}),
        ] {
            let e = parse_decision(&bad).unwrap_err();
            assert!(
                e.contains("must") || e.contains("no decision"),
                "{bad}: {e}"
            );
        }
    }
}
