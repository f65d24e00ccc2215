//! The HTTP API: REST routes, the session/logging middleware, JSON errors.
//!
//! - `conversations`, `approvals`, `tools`, `pipeline`, `health`: the handlers.
//! - `events`: the SSE streams; `docs`: `/openapi.json` and `/docs`.
//! - `error`: [`ApiError`], the one error type at the edge.
//! - `extract`: JSON and query extractors that reject in the API's format.
//! - `session`: `X-Session-ID` and the per-request log span.
//! - `forms`: the pages' form posts under `/ui/` (decisions without
//!   JavaScript), each checked for this browser's form token.
//!
//! [`router`] assembles API and UI on one axum router; `main` and every test
//! use it, so tests exercise exactly what users run.

pub mod approvals;
pub mod audit;
pub mod conversations;
pub mod docs;
pub mod error;
pub mod events;
pub mod extract;
pub mod forms;
pub mod health;
pub mod links;
pub mod notifications;
pub mod pipeline;
pub mod session;
pub mod tools;

pub use error::ApiError;

use crate::auth::signin;
use crate::state::AppState;
use crate::ui;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{Method, Uri};
use axum::routing::{get, post};

/// The whole application: REST API, web UI and static assets.
pub fn router(state: AppState) -> Router {
    let api = Router::new()
        .route("/health", get(health::health))
        .route("/agent", get(health::agent))
        .route(
            "/conversations",
            post(conversations::create).get(conversations::list),
        )
        .route("/conversations/{id}", get(conversations::get))
        .route(
            "/conversations/{id}/messages",
            post(conversations::send_message),
        )
        .route("/conversations/{id}/events", get(events::one))
        .route("/events", get(events::all))
        .route("/approvals", get(approvals::list))
        .route("/approvals/{uuid}", post(approvals::decide))
        .route("/tools", get(tools::list))
        .route("/tools/{name}/accept", axum::routing::post(tools::accept))
        .route("/pipeline", get(pipeline::get))
        .route("/notifications", get(notifications::list))
        .route("/notifications/{id}/retry", post(notifications::retry))
        .route("/links/{token}", get(links::get).post(links::decide))
        .route("/.well-known/agent-card.json", get(crate::a2a::card::get))
        .route("/.well-known/agent.json", get(crate::a2a::card::get))
        .route("/a2a", post(crate::a2a::server::handle))
        .route("/a2a/", post(crate::a2a::server::handle))
        .route("/a2a/message:send", post(crate::a2a::rest::send))
        .route("/a2a/message:stream", post(crate::a2a::rest::stream))
        .route("/a2a/tasks", get(crate::a2a::rest::list_tasks))
        .route(
            "/a2a/tasks/{id}",
            get(crate::a2a::rest::get_task).post(crate::a2a::rest::task_action),
        )
        .route(
            "/a2a/tasks/{id}/pushNotificationConfigs",
            post(crate::a2a::rest::create_push).get(crate::a2a::rest::list_push),
        )
        .route(
            "/a2a/tasks/{id}/pushNotificationConfigs/{config}",
            get(crate::a2a::rest::get_push).delete(crate::a2a::rest::delete_push),
        )
        .route(
            "/a2a/extendedAgentCard",
            get(crate::a2a::rest::extended_card),
        )
        .route("/openapi.json", get(docs::openapi_json))
        .route("/docs", get(docs::page))
        .route("/docs.js", get(docs::script))
        .route("/audit", get(audit::export))
        .route("/metrics", get(crate::metrics::scrape))
        .route("/auth/me", get(signin::whoami))
        .route("/ui/sign-in", get(signin::page).post(signin::with_token))
        .route("/ui/sign-out", post(signin::sign_out))
        .route("/ui/auth/oidc", get(signin::oidc_start))
        .route("/ui/auth/callback", get(signin::oidc_callback))
        .route("/ui/audit", get(audit::page))
        .route("/ui/approvals/{uuid}/decide", post(forms::decide))
        .route("/ui/link/{token}", post(forms::link))
        .route("/ui/notifications/{id}/retry", post(forms::retry))
        .route("/ui/refused", get(forms::refused_page))
        .method_not_allowed_fallback(method_not_allowed);
    // Outermost first: session id and log span, cross-site refusal and
    // security headers, then who is calling and whether they may, then
    // the browser's form cookie (which the pages' forms are bound to).
    let origins = state.auth.origins.clone();
    ui::routes(&state)
        .merge(api)
        .fallback(ui::fallback)
        .layer(DefaultBodyLimit::max(state.config.max_body_bytes))
        .layer(axum::middleware::from_fn_with_state(
            state.auth.secure_cookies,
            crate::auth::forms::layer,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::auth::guard::layer,
        ))
        .layer(axum::middleware::from_fn_with_state(
            origins,
            crate::auth::origin::layer,
        ))
        .layer(axum::middleware::from_fn(crate::assets::cache_control))
        .layer(crate::assets::compression())
        .layer(axum::middleware::from_fn(session::layer))
        .layer(axum::middleware::from_fn(crate::metrics::http))
        .with_state(state)
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::MethodNotAllowed(format!("{method} is not supported on {}", uri.path()))
}
