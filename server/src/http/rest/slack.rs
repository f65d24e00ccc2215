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
use crate::engine::{DecisionRequest, EngineError};
use crate::http::error::ApiError;
use crate::http::state::AppState;
use crate::notify::slack::{self, SlackApp};
use crate::store::Decided;
use app::models::ApprovalStatus;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use std::net::IpAddr;
use std::time::Duration;

/// The route's path (the cross-site check lets its urlencoded body in).
const PATH: &str = crate::http::paths::SLACK_INTERACTIONS;

/// How long after a request arrives it is answered at the latest (Slack
/// allows 3 s); a decision not recorded by then is told on the
/// `response_url` when it is.
const ANSWER_BY: Duration = Duration::from_millis(2200);

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
/// body that is not a Slack payload, 404 when no target is interactive.
pub(crate) async fn interactions(State(state): State<AppState>, req: Request) -> Response {
    // Slack gives up after 3 s: the answer goes by this deadline at the
    // latest, the outcome following on the `response_url`.
    let deadline = tokio::time::Instant::now() + ANSWER_BY;
    if state.notify.slack_apps().is_empty() {
        return ApiError::NotFound(
            "Slack interactivity is not configured here: add `interactive` to a Slack notification target"
                .into(),
        )
        .into_response();
    }
    let ip = crate::http::auth::identity::peer(&req);
    let headers = req.headers().clone();
    // The raw bytes, as signed (within the agent's body limit).
    let body = match <axum::body::Bytes as axum::extract::FromRequest<AppState>>::from_request(
        req, &state,
    )
    .await
    {
        Ok(b) => b,
        Err(r) if r.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return ApiError::PayloadTooLarge(
                "the body is larger than the agent accepts (max_body_bytes), far more than a Slack payload"
                    .into(),
            )
            .into_response();
        }
        Err(_) => {
            return ApiError::BadRequest("the body could not be read".into()).into_response();
        }
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
            crate::http::auth::denied::deny(&state.auth, &state.store, ip, "-", PATH, &why).await;
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
    let c = std::sync::Arc::new(c);
    let told = decide(&state, &app, &c, ip, deadline).await;
    let (state2, app2, c2) = (state.clone(), app.clone(), c.clone());
    state.tasks.spawn_background("slack answer", async move {
        // A decision slower than Slack's limit is told when it is recorded.
        let (outcome, pending) = match told {
            Told::Now(outcome, pending) => (outcome, pending),
            Told::Later(committed) => {
                let r = joined(committed.await);
                describe(&state2, &app2, &c2, ip, r).await
            }
        };
        if let Some(url) = &c2.response_url {
            let message = slack::outcome_message(&c2.message, &outcome, pending);
            state2.notify.respond_to_slack(&app2, url, &message).await;
        }
    });
    StatusCode::OK.into_response()
}

/// What to tell the channel: now, or once the decision is recorded.
enum Told {
    /// The outcome, and whether the approval still waits (its buttons
    /// stay).
    Now(String, bool),
    /// The decision had not committed by Slack's deadline.
    Later(tokio::task::JoinHandle<Option<Result<Decided, EngineError>>>),
}

/// What a task of the agent's owner answered: its result, or why it has
/// none (it panicked, or shutdown stopped it).
fn joined<T>(
    r: Result<Option<Result<T, EngineError>>, tokio::task::JoinError>,
) -> Result<T, EngineError> {
    match r {
        Ok(Some(r)) => r,
        Ok(None) => Err(EngineError::Task("the agent is shutting down".into())),
        Err(e) => Err(EngineError::Task(e.to_string())),
    }
}

/// Decides the click as its mapped principal, waiting for the decision to
/// commit until `deadline`.
async fn decide(
    state: &AppState,
    app: &SlackApp,
    c: &std::sync::Arc<Click>,
    ip: IpAddr,
    deadline: tokio::time::Instant,
) -> Told {
    let Some(name) = app.principal_of(&c.user) else {
        let why = format!("You ({}) are not mapped to an approver", c.user);
        return Told::Now(refuse(state, c, ip, why).await, true);
    };
    let principal = match state.auth.principal_named(&state.store, name).await {
        Ok(Some(p)) => p,
        Ok(None) => {
            let why = format!(
                "You ({}) act as {name}, whose roles are unknown here: {name} must sign in to the web UI once",
                c.user
            );
            return Told::Now(refuse(state, c, ip, why).await, true);
        }
        Err(e) => {
            tracing::error!(error = %e, "could not read a Slack user's roles");
            return Told::Now("Could not decide now: try again shortly".into(), true);
        }
    };
    if !principal.allow(Role::Approver) {
        let why = format!("{name} (you, {}) does not have the approver role", c.user);
        return Told::Now(refuse(state, c, ip, why).await, true);
    }
    let ctx = CallContext {
        // One Slack user is one voter, whatever request carries the click
        // (in auth mode `none` votes are counted by session).
        session_id: format!("slack:{}", c.user),
        principal,
        via: crate::domain::channel::Channel::Slack,
        ..CallContext::default()
    };
    let decision = DecisionRequest {
        approve: c.approve,
        reason: (!c.approve).then(|| REJECT_REASON.to_string()),
        arguments: None,
        grant: None,
        upstream_receipt: None,
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    let engine = state.engine.clone();
    let uuid = c.uuid.clone();
    let task = state.tasks.spawn("slack decision", async move {
        engine.decide_reporting(&uuid, decision, ctx, tx).await
    });
    // What the decision recorded, or why it recorded nothing.
    let mut committed = state.tasks.spawn("slack decision", async move {
        match rx.await {
            Ok(c) => Ok(c),
            Err(_) => match joined(task.await) {
                Err(e) => Err(e),
                Ok(_) => Err(EngineError::Task("the decision recorded nothing".into())),
            },
        }
    });
    match tokio::time::timeout_at(deadline, &mut committed).await {
        Ok(r) => {
            let r = joined(r);
            let (outcome, pending) = describe(state, app, c, ip, r).await;
            Told::Now(outcome, pending)
        }
        Err(_) => Told::Later(committed),
    }
}

/// Refuses a click: audited `auth.denied` (as `slack:<user id>`), and the
/// text the channel is told.
async fn refuse(state: &AppState, c: &Click, ip: IpAddr, why: String) -> String {
    crate::http::auth::denied::deny(
        &state.auth,
        &state.store,
        ip,
        &format!("slack:{}", c.user),
        PATH,
        &why,
    )
    .await;
    why
}

/// What a decision (or its refusal) means for the channel, and whether
/// the approval still waits.
async fn describe(
    state: &AppState,
    app: &SlackApp,
    c: &Click,
    ip: IpAddr,
    r: Result<Decided, EngineError>,
) -> (String, bool) {
    let me = app.principal_of(&c.user).unwrap_or(&c.user);
    match r {
        Ok(Decided::Done) if c.approve => (format!("Approved by {me}"), false),
        Ok(Decided::Done) => (format!("Rejected by {me}: {REJECT_REASON}"), false),
        Ok(Decided::Voted { approvals, quorum }) => {
            let more = quorum.saturating_sub(approvals);
            let s = if more == 1 { "" } else { "s" };
            (
                format!("Needs {more} more approval{s} ({approvals} of {quorum})"),
                true,
            )
        }
        // The engine answers a refusal as an error, never as what it
        // recorded; were one told, it would read the same.
        Ok(Decided::Lost(status)) | Err(EngineError::AlreadyDecided { status, .. }) => {
            (already(state, &c.uuid, status).await, false)
        }
        Ok(Decided::AlreadyVoted) | Err(EngineError::AlreadyVoted { .. }) => {
            (format!("{me} has voted on this already"), true)
        }
        Err(EngineError::NotFound(_)) => ("This approval no longer exists".into(), false),
        Err(EngineError::Forbidden(why)) => {
            (refuse(state, c, ip, format!("Refused: {why}")).await, true)
        }
        Ok(Decided::LinkUsed) => ("Could not decide now: try again shortly".into(), true),
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
