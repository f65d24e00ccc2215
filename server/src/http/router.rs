//! The router: REST, inbound A2A, the pages and their assets on one axum
//! router, inside the middleware every request passes (session id and log
//! span, cross-site refusal and security headers, who is calling and
//! whether they may, the form cookie). `main` and every test use it, so
//! tests exercise exactly what users run.

use super::auth::signin;
use super::error::ApiError;
use super::rest::{
    approvals, audit, conversations, docs, events, health, links, notifications, pipeline, tools,
};
use super::state::AppState;
use super::{caller as session, ui};
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
        .route(
            "/.well-known/agent-card.json",
            get(crate::http::a2a::card::get),
        )
        .route("/.well-known/agent.json", get(crate::http::a2a::card::get))
        .route("/a2a", post(crate::http::a2a::jsonrpc::handle))
        .route("/a2a/", post(crate::http::a2a::jsonrpc::handle))
        .route("/a2a/message:send", post(crate::http::a2a::rest::send))
        .route("/a2a/message:stream", post(crate::http::a2a::rest::stream))
        .route("/a2a/tasks", get(crate::http::a2a::rest::list_tasks))
        .route(
            "/a2a/tasks/{id}",
            get(crate::http::a2a::rest::get_task).post(crate::http::a2a::rest::task_action),
        )
        .route(
            "/a2a/tasks/{id}/pushNotificationConfigs",
            post(crate::http::a2a::rest::create_push).get(crate::http::a2a::rest::list_push),
        )
        .route(
            "/a2a/tasks/{id}/pushNotificationConfigs/{config}",
            get(crate::http::a2a::rest::get_push).delete(crate::http::a2a::rest::delete_push),
        )
        .route(
            "/a2a/extendedAgentCard",
            get(crate::http::a2a::rest::extended_card),
        )
        .route("/openapi.json", get(docs::openapi_json))
        .route("/docs", get(docs::page))
        .route("/docs.js", get(docs::script))
        .route("/audit", get(audit::export))
        .route("/metrics", get(crate::http::metrics::scrape))
        .route("/auth/me", get(signin::whoami))
        .route("/ui/sign-in", get(signin::page).post(signin::with_token))
        .route("/ui/sign-out", post(signin::sign_out))
        .route("/ui/auth/oidc", get(signin::oidc_start))
        .route("/ui/auth/callback", get(signin::oidc_callback))
        .route("/ui/audit", get(audit::page))
        .route("/ui/approvals/{uuid}/decide", post(ui::forms::decide))
        .route("/ui/link/{token}", post(ui::forms::link))
        .route("/ui/notifications/{id}/retry", post(ui::forms::retry))
        .route("/ui/refused", get(ui::forms::refused_page))
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
            crate::http::auth::form_token::layer,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::http::auth::guard::layer,
        ))
        .layer(axum::middleware::from_fn_with_state(
            origins,
            crate::http::auth::origin::layer,
        ))
        .layer(axum::middleware::from_fn(
            crate::http::assets::cache_control,
        ))
        .layer(crate::http::assets::compression())
        .layer(axum::middleware::from_fn(session::layer))
        .layer(axum::middleware::from_fn(crate::http::metrics::http))
        .with_state(state)
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::MethodNotAllowed(format!("{method} is not supported on {}", uri.path()))
}
