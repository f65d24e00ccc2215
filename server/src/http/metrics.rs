//! `GET /metrics` and the middleware that counts and times every request
//! by its route template (the series themselves: `telemetry::metrics`).

use crate::telemetry::metrics::get;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::time::Instant;

/// Middleware: counts and times every request by its route template.
pub(crate) async fn http(req: Request, next: Next) -> Response {
    let route = route(&req);
    let started = Instant::now();
    let res = next.run(req).await;
    get().http_request(route.as_str(), res.status().as_str(), started.elapsed());
    res
}

/// The bounded name of a request's route: its template, or a name for
/// what no route matched (also the name of the request's trace span).
pub(crate) fn route(req: &Request) -> RouteName {
    match req.extensions().get::<MatchedPath>() {
        Some(p) => RouteName::Matched(p.clone()),
        None => RouteName::Other(unmatched_route(req.uri().path())),
    }
}

/// A route template (shared, not copied) or a fixed name.
pub(crate) enum RouteName {
    Matched(MatchedPath),
    Other(&'static str),
}

impl RouteName {
    pub(crate) fn as_str(&self) -> &str {
        match self {
            RouteName::Matched(p) => p.as_str(),
            RouteName::Other(s) => s,
        }
    }
}

impl std::fmt::Display for RouteName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The bounded name of a request no route matched (assets, UI pages
/// rendered by the fallback, unknown paths).
fn unmatched_route(path: &str) -> &'static str {
    if path.starts_with("/pkg/") {
        "/pkg/{file}"
    } else if path.starts_with("/ui/") {
        "/ui/{page}"
    } else {
        "unmatched"
    }
}

/// `GET /metrics`.
pub(crate) async fn scrape(State(state): State<crate::http::state::AppState>) -> Response {
    let pending = match state.store.count_pending().await {
        Ok(n) => n,
        Err(e) => {
            tracing::error!(error = %e, "could not count pending approvals");
            return crate::http::error::ApiError::Unavailable(
                "the store cannot be read right now".into(),
            )
            .into_response();
        }
    };
    let servers: Vec<(String, bool)> = state
        .engine
        .tools()
        .servers()
        .into_iter()
        .map(|s| (s.name, s.available))
        .collect();
    if !state.config.notifications.targets.is_empty() {
        match state.store.notification_counts().await {
            Ok(c) => get().notifications_stored(&c),
            Err(e) => tracing::warn!(error = %e, "could not count notifications"),
        }
    }
    let body = get().render(pending, &servers);
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        body,
    )
        .into_response()
}
