//! The router: REST, inbound A2A, the pages and their assets on one axum
//! router, inside the middleware every request passes (session id and log
//! span, cross-site refusal and security headers, who is calling and
//! whether they may, the form cookie). `main` and every test use it, so
//! tests exercise exactly what users run.

use super::error::ApiError;
use super::route::Serve;
use super::routes::ROUTES;
use super::state::AppState;
use super::{caller as session, ui};
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{Method, Uri};

/// The whole application: every route of [`ROUTES`] (the pages through
/// Leptos), the fallback for assets and unknown paths, and the middleware.
pub(crate) fn router(state: AppState) -> Router {
    let mut api = Router::new();
    for r in ROUTES {
        if let Serve::Handler(method_router) = r.serve {
            // A path declared for several methods merges their handlers.
            api = api.route(r.path, method_router());
        }
    }
    // A2A's gRPC binding: HTTP/2 on the same port, through the same
    // middleware (its methods' roles are checked by the service, as
    // JSON-RPC's are by its handler).
    let grpc_path = format!("{}{{method}}", super::paths::A2A_GRPC_PREFIX);
    let api = api
        .route_service(&grpc_path, super::a2a::grpc::service(state.clone()))
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
            crate::http::guard::layer,
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
