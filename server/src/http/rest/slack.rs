//! `POST /integrations/slack/interactions`: a click on an interactive
//! Slack button (REACH.md §2).
//!
//! The request's Slack signature is its authentication (no cookie, no
//! form token): checked over the raw body before anything is parsed, a
//! bad or stale one is a 401 that decides nothing (audited `auth.denied`).
//! The clicker's Slack id is mapped to a principal through the target's
//! `users`, and the decision is the engine's, with every check a browser
//! decision gets (`decided_via: "slack"`). Slack wants its answer within
//! three seconds: the handler waits only until the decision's transaction
//! commits (the turn then runs on by itself), answers 200, and tells the
//! channel the outcome through the click's `response_url`.

use crate::domain::principal::Role;
use crate::domain::tools::CallContext;
use crate::engine::{Committed, Decision, EngineError};
use crate::http::caller::SessionId;
use crate::http::error::ApiError;
use crate::http::state::AppState;
use crate::notify::slack::{self, SlackApp};
use app::models::ApprovalStatus;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use std::net::IpAddr;
use std::time::Duration;

/// The largest body read.
const MAX_BODY: usize = 256 * 1024;

/// The route's path (the cross-site check lets its urlencoded body in).
pub(crate) const PATH: &str = "/integrations/slack/interactions";

/// How long the handler waits for the decision to commit before it
/// answers Slack anyway (the outcome still reaches the `response_url`).
const COMMIT_WAIT: Duration = Duration::from_millis(2500);

/// The reason recorded for a rejection from Slack (buttons carry none).
const REJECT_REASON: &str = "rejected from Slack";

/// The click, as far as we read it.
struct Click {
    approve: bool,
    uuid: String,
    user: String,
    response_url: Option<String>,
    message: Value,
}

/// Reads a `block_actions` payload; `Ok(None)`: nothing of ours was
/// clicked (a link button, another app's action).
fn click(body: &[u8]) -> Result<Option<Click>, ApiError> {
    let fields: Vec<(String, String)> = serde_urlencoded::from_bytes(body).map_err(|_| {
        ApiError::BadRequest("the body must be urlencoded with a `payload` field".into())
    })?;
    let payload = fields
        .into_iter()
        .find(|(k, _)| k == "payload")
        .map(|(_, v)| v)
        .ok_or_else(|| ApiError::BadRequest("the body has no `payload` field".into()))?;
    let p: Value = serde_json::from_str(&payload)
        .map_err(|_| ApiError::BadRequest("`payload` is not JSON".into()))?;
    if p["type"] != "block_actions" {
        return Ok(None);
    }
    let Some((approve, uuid)) = p["actions"].as_array().into_iter().flatten().find_map(|a| {
        let approve = match a["action_id"].as_str()? {
            "stopgo_approve" => true,
            "stopgo_reject" => false,
            _ => return None,
        };
        Some((approve, a["value"].as_str()?.to_string()))
    }) else {
        return Ok(None);
    };
    let user = p["user"]["id"]
        .as_str()
        .filter(|u| !u.is_empty())
        .ok_or_else(|| ApiError::BadRequest("`payload.user.id` is missing".into()))?
        .to_string();
    Ok(Some(Click {
        approve,
        uuid,
        user,
        response_url: p["response_url"].as_str().map(str::to_string),
        message: p["message"].clone(),
    }))
}

/// `POST /integrations/slack/interactions` → 200 (the outcome follows on
/// the `response_url`), 401 for a request Slack did not sign, 400 for a
/// body that is not a Slack payload.
pub(crate) async fn interactions(State(state): State<AppState>, req: Request) -> Response {
    let ip = crate::http::auth::guard::peer(&req);
    let sid = req.extensions().get::<SessionId>().cloned();
    let (parts, body) = req.into_parts();
    let headers = parts.headers;
    // Slack's payloads are a few kilobytes; a message's blocks at most ~50.
    let Ok(body) = axum::body::to_bytes(body, MAX_BODY).await else {
        return ApiError::BadRequest(format!(
            "the body is larger than {} KiB, more than a Slack payload",
            MAX_BODY / 1024
        ))
        .into_response();
    };
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let now = chrono::Utc::now().timestamp();
    let app = match slack::verify(
        state.notify.slack_apps(),
        header("x-slack-request-timestamp"),
        header("x-slack-signature"),
        &body,
        now,
    ) {
        Ok(app) => app.clone(),
        Err(why) => {
            let why = why.to_string();
            tracing::info!(reason = %why, "refused a Slack interaction");
            crate::http::auth::guard::deny(&state, ip, "-", PATH, &why).await;
            return (
                StatusCode::UNAUTHORIZED,
                axum::Json(serde_json::json!({"error": why})),
            )
                .into_response();
        }
    };
    let c = match click(&body) {
        Ok(Some(c)) => c,
        Ok(None) => return StatusCode::OK.into_response(),
        Err(e) => return e.into_response(),
    };
    let session_id = sid
        .map(|s| s.0)
        .unwrap_or_else(crate::http::caller::generate);
    let (outcome, pending) = decide(&state, &app, &c, session_id, ip).await;
    if let Some(url) = c.response_url.clone() {
        let message = slack::outcome_message(&c.message, &outcome, pending);
        let notify = state.notify.clone();
        tokio::spawn(async move { notify.respond_to_slack(&app, &url, &message).await });
    }
    StatusCode::OK.into_response()
}

/// Decides the click as its mapped principal; returns what to tell the
/// channel and whether the approval still waits (its buttons stay).
async fn decide(
    state: &AppState,
    app: &SlackApp,
    c: &Click,
    session_id: String,
    ip: IpAddr,
) -> (String, bool) {
    let refuse = |why: String| async move {
        crate::http::auth::guard::deny(state, ip, &format!("slack:{}", c.user), PATH, &why).await;
        (why, true)
    };
    let Some(name) = app.principal_of(&c.user) else {
        return refuse(format!("You ({}) are not mapped to an approver", c.user)).await;
    };
    let principal = match state.auth.principal_named(&state.store, name).await {
        Ok(Some(p)) => p,
        Ok(None) => {
            return refuse(format!(
                "You ({}) act as {name}, whose roles are unknown here: {name} must sign in to the web UI once",
                c.user
            ))
            .await;
        }
        Err(e) => {
            tracing::error!(error = %e, "could not read a Slack user's roles");
            return ("Could not decide now: try again shortly".into(), true);
        }
    };
    if !principal.allow(Role::Approver) {
        return refuse(format!(
            "{name} (you, {}) does not have the approver role",
            c.user
        ))
        .await;
    }
    let ctx = CallContext {
        session_id,
        principal,
        via: "slack",
        ..CallContext::default()
    };
    let decision = Decision {
        approve: c.approve,
        reason: (!c.approve).then(|| REJECT_REASON.to_string()),
        arguments: None,
        grant: None,
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    let engine = state.engine.clone();
    let uuid = c.uuid.clone();
    let mut task =
        tokio::spawn(async move { engine.decide_reporting(&uuid, decision, ctx, tx).await });
    let committed = tokio::select! {
        told = rx => told.ok(),
        _ = tokio::time::sleep(COMMIT_WAIT) => None,
    };
    let committed = match committed {
        Some(c) => Ok(c),
        // Refused before it committed (or it is slow: the turn goes on).
        None => match tokio::time::timeout(Duration::from_millis(100), &mut task).await {
            Ok(Ok(Err(e))) => Err(e),
            _ => {
                return (
                    "Your decision was received; the channel is told when it is recorded".into(),
                    true,
                );
            }
        },
    };
    match committed {
        Ok(Committed::Decided(true)) => (format!("Approved by {name}"), false),
        Ok(Committed::Decided(false)) => (format!("Rejected by {name}: {REJECT_REASON}"), false),
        Ok(Committed::Voted { approvals, quorum }) => {
            let more = quorum.saturating_sub(approvals);
            let s = if more == 1 { "" } else { "s" };
            (
                format!("Needs {more} more approval{s} ({approvals} of {quorum})"),
                true,
            )
        }
        Err(EngineError::AlreadyDecided { status, .. }) => {
            (already(state, &c.uuid, status).await, false)
        }
        Err(EngineError::AlreadyVoted { .. }) => {
            (format!("{name} has voted on this already"), true)
        }
        Err(EngineError::NotFound(_)) => ("This approval no longer exists".into(), false),
        Err(EngineError::Forbidden(why)) => refuse(format!("Refused: {why}")).await,
        Err(e) => {
            tracing::warn!(error = %e, approval = %c.uuid, "a decision from Slack failed");
            ("Could not decide now: try again shortly".into(), true)
        }
    }
}

/// "Already decided by …", with who and how when the approval says.
async fn already(state: &AppState, uuid: &str, status: ApprovalStatus) -> String {
    let found = state.store.approval(uuid).await.ok().flatten();
    match (status, found.and_then(|a| a.decided_by)) {
        (ApprovalStatus::Expired, _) => "Already expired: nobody decided in time".into(),
        (ApprovalStatus::Cancelled, _) => "Already cancelled".into(),
        (s, Some(by)) => format!("Already decided by {by} ({})", word(s)),
        (s, None) => format!("Already decided ({})", word(s)),
    }
}

fn word(s: ApprovalStatus) -> &'static str {
    match s {
        ApprovalStatus::Rejected => "rejected",
        _ => "approved",
    }
}
