//! `GET /links/:token` and `POST /links/:token`: the signed links of
//! notifications (POLICY.md §5).
//!
//! A GET only shows: the approval, the link's action and whether it can
//! still be used (a link never decides on a GET, so a mail scanner or a
//! chat unfurler that follows it changes nothing). The POST decides, as the
//! caller (checked like any other decision: roles, separation of duties,
//! approvers, quorum, expiry) and uses the link up in the same
//! transaction. A link that was used, whose approval left `pending`, or
//! whose bytes were changed says so.

use crate::engine::DecisionRequest;
use crate::http::caller::Caller;
use crate::http::error::ApiError;
use crate::http::extract::ApiJson;
use crate::http::state::AppState;
use crate::notify::links::{Action, Claims};
use app::models::{ApprovalStatus, ConversationResponse, LinkView};
use axum::Json;
use axum::extract::{Path, State};
use serde_json::Value;

pub(crate) fn claims(state: &AppState, token: &str) -> Result<Claims, ApiError> {
    state
        .notify
        .links()
        .verify(token)
        .map_err(|e| ApiError::BadRequest(e.to_string()))
}

/// What the link opens, and whether it can still be used.
pub(crate) async fn view(state: &AppState, token: &str) -> Result<LinkView, ApiError> {
    let c = claims(state, token)?;
    let a = state.store.approval(&c.approval).await?.ok_or_else(|| {
        ApiError::NotFound("the approval this link was for no longer exists".into())
    })?;
    let used = state.store.link_used(&c.link).await?;
    let (st, message) = if used {
        (
            "used",
            Some("This link was used already: each link works once.".to_string()),
        )
    } else {
        match a.status {
            ApprovalStatus::Pending => ("valid", None),
            ApprovalStatus::Expired => (
                "expired",
                Some("This link expired with its approval: nobody decided in time.".to_string()),
            ),
            other => (
                "decided",
                Some(format!(
                    "This approval is {} already: the link can no longer decide it.",
                    other.as_str()
                )),
            ),
        }
    };
    Ok(LinkView {
        action: c.action.as_str().into(),
        state: st.into(),
        message,
        approval: a.approval,
        status: a.status,
    })
}

/// `GET /links/:token` → [`LinkView`]. Changes nothing.
pub(crate) async fn get(
    State(state): State<AppState>,
    Path(token): Path<String>,
) -> Result<Json<LinkView>, ApiError> {
    Ok(Json(view(&state, &token).await?))
}

/// `POST /links/:token` with `{}` (an approve or reject link) or
/// `{"approved": bool}` (an open link), optionally `"reason"` →
/// `{"conversation": C, "result": R}` like `POST /approvals/:uuid`.
pub(crate) async fn decide(
    State(state): State<AppState>,
    Path(token): Path<String>,
    Caller(ctx): Caller,
    ApiJson(body): ApiJson<Value>,
) -> Result<Json<ConversationResponse>, ApiError> {
    let c = claims(&state, &token)?;
    let Value::Object(m) = &body else {
        return Err(ApiError::BadRequest(
            "the body must be a JSON object: {} to use the link, optionally with \"reason\"".into(),
        ));
    };
    let reason = match m.get("reason") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(ApiError::BadRequest("\"reason\" must be a string".into())),
    };
    if m.contains_key("arguments") {
        return Err(ApiError::BadRequest(
            "a link decides the arguments as they were asked: edit them on the approval card instead"
                .into(),
        ));
    }
    let reply = use_link(&state, &c, m.get("approved"), reason, ctx).await?;
    Ok(Json(ConversationResponse {
        conversation: reply.conversation,
        result: Some(reply.result),
    }))
}

/// Decides with the link `c`, as the caller: an approve or reject link
/// says its own decision (`approved`, if sent, may only agree), an open
/// link needs `approved` (a boolean). Shared by the JSON route and the
/// page's form post.
pub(crate) async fn use_link(
    state: &AppState,
    c: &Claims,
    approved: Option<&Value>,
    reason: Option<String>,
    ctx: crate::domain::tools::CallContext,
) -> Result<crate::engine::Reply, ApiError> {
    let approve = match (c.action, approved) {
        (Action::Approve, None | Some(Value::Bool(true))) => true,
        (Action::Reject, None | Some(Value::Bool(false))) => false,
        (Action::Open, Some(Value::Bool(b))) => *b,
        (Action::Open, _) => {
            return Err(ApiError::BadRequest(
                "this link opens the approval: send {\"approved\": true} or {\"approved\": false}"
                    .into(),
            ));
        }
        (a, _) => {
            return Err(ApiError::BadRequest(format!(
                "this link can only {}: send {{}}",
                a.as_str()
            )));
        }
    };
    // Said first: a used link is "used", whatever became of its approval
    // (the decision's transaction records the use, so two racing posts
    // cannot both decide).
    if state.store.link_used(&c.link).await? {
        return Err(crate::engine::EngineError::LinkUsed.into());
    }
    Ok(state
        .engine
        .decide_by_link(
            &c.approval,
            DecisionRequest {
                approve,
                reason,
                arguments: None,
                grant: None,
                upstream_receipt: None,
            },
            ctx,
            c.link.clone(),
        )
        .await?)
}
