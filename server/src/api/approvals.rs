//! `POST /approvals/:uuid`: an operator's decision.
//!
//! Three body shapes are accepted, because the seed's clients use all of
//! them: `{"approved": bool}`, `{"action": "approve"|"reject"}` and
//! `{"answer": "yes"|"no"}`, each with an optional `"reason"`. Anything else
//! is a 400 that lists them, never a silent rejection.

use super::error::ApiError;
use super::extract::ApiJson;
use super::session::Caller;
use crate::engine::Decision;
use crate::state::AppState;
use app::models::{ApprovalList, ConversationResponse};
use axum::Json;
use axum::extract::{Path, State};
use serde_json::Value;

const SHAPES: &str = "send {\"approved\": true|false}, {\"action\": \"approve\"|\"reject\"} or {\"answer\": \"yes\"|\"no\"}, \
                      optionally with \"reason\" (and, approving, \"arguments\" to run the tool with)";

/// Reads a decision from any accepted body shape.
pub fn parse_decision(body: &Value) -> Result<Decision, String> {
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
    Ok(Decision {
        approve,
        reason,
        arguments,
    })
}

/// `POST /approvals/:uuid` → `{"conversation": C, "result": R}`.
pub async fn decide(
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

/// `GET /approvals` → `{"approvals": [PendingApproval…]}`: every approval
/// waiting for a decision, across conversations, oldest first (the inbox).
pub async fn list(State(state): State<AppState>) -> Result<Json<ApprovalList>, ApiError> {
    Ok(Json(pending(&state.store).await?))
}

/// The pending approvals, oldest first.
pub async fn pending(store: &crate::store::Store) -> Result<ApprovalList, ApiError> {
    let rows = store.pending_approvals().await?;
    Ok(ApprovalList {
        approvals: rows.into_iter().map(|a| a.approval).collect(),
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
