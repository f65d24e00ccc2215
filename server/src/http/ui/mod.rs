//! The web UI inside the server: Leptos page routes, server-side data for
//! rendering, static assets, and the 404 split between pages and API.
//!
//! Pages render on the server with data read in-process from the store
//! ([`StoreBackend`], provided as Leptos context); the browser then hydrates
//! them and talks to the public REST API. UI paths are `/` and `/ui/...`,
//! assets are under `/pkg/` or are files in the site root; every other
//! unknown path answers as the JSON API does, so an API client never gets an
//! HTML page.

pub(crate) mod forms;
pub(crate) mod signin;

use crate::http::error::ApiError;
use crate::http::rest::conversations;
use crate::http::state::AppState;
use app::api::{BoxFuture, SharedBackend, UiBackend};
use app::models::{
    AgentInfo, ApprovalList, ApprovalQuery, Conversation, ConversationList, ListQuery, ToolList,
};
use axum::Router;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use leptos::prelude::provide_context;
use leptos_axum::{LeptosRoutes, generate_route_list};
use std::path::Path;
use std::sync::Arc;

/// Page data for server-side rendering, straight from the store.
struct StoreBackend {
    state: AppState,
}

impl UiBackend for StoreBackend {
    fn list_conversations(
        &self,
        q: ListQuery,
    ) -> BoxFuture<Result<ConversationList, app::api::ApiError>> {
        let store = self.state.store.clone();
        Box::pin(async move {
            conversations::list_page(&store, q)
                .await
                .map_err(Into::into)
        })
    }

    fn get_conversation(&self, id: String) -> BoxFuture<Result<Conversation, app::api::ApiError>> {
        let store = self.state.store.clone();
        Box::pin(async move { conversations::load(&store, id).await.map_err(Into::into) })
    }

    fn agent_info(&self) -> BoxFuture<Result<AgentInfo, app::api::ApiError>> {
        let info = crate::http::rest::health::agent_info(&self.state);
        Box::pin(async move { Ok(info) })
    }

    fn list_approvals(
        &self,
        q: ApprovalQuery,
    ) -> BoxFuture<Result<ApprovalList, app::api::ApiError>> {
        let store = self.state.store.clone();
        Box::pin(async move {
            crate::http::rest::approvals::pending(&store, q)
                .await
                .map_err(Into::into)
        })
    }

    fn list_questions(
        &self,
        q: ApprovalQuery,
    ) -> BoxFuture<Result<app::models::QuestionPage, app::api::ApiError>> {
        let store = self.state.store.clone();
        Box::pin(async move {
            crate::http::rest::questions::pending(&store, q)
                .await
                .map_err(Into::into)
        })
    }

    fn list_tools(&self) -> BoxFuture<Result<ToolList, app::api::ApiError>> {
        let list = crate::http::rest::tools::tool_list(&self.state);
        Box::pin(async move { Ok(list) })
    }

    fn list_grants(&self) -> BoxFuture<Result<app::models::GrantList, app::api::ApiError>> {
        let engine = self.state.engine.clone();
        Box::pin(async move {
            Ok(app::models::GrantList {
                grants: engine
                    .grants()
                    .await
                    .map_err(|e| app::api::ApiError::from(crate::http::error::ApiError::from(e)))?,
            })
        })
    }

    fn pipeline(&self) -> BoxFuture<Result<app::pipeline::PipelineView, app::api::ApiError>> {
        let view = crate::http::rest::pipeline::view(&self.state);
        Box::pin(async move { Ok(view) })
    }

    fn notifications(&self) -> BoxFuture<Result<app::models::DeliveryList, app::api::ApiError>> {
        let state = self.state.clone();
        Box::pin(async move {
            let q = crate::http::rest::notifications::NotificationQuery {
                status: None,
                limit: None,
            };
            crate::http::rest::notifications::page(&state, q)
                .await
                .map_err(Into::into)
        })
    }

    fn link(&self, token: String) -> BoxFuture<Result<app::models::LinkView, app::api::ApiError>> {
        let state = self.state.clone();
        Box::pin(async move {
            crate::http::rest::links::view(&state, &token)
                .await
                .map_err(Into::into)
        })
    }
}

/// The page routes of the app, rendered by Leptos.
pub(crate) fn routes(state: &AppState) -> Router<AppState> {
    let backend: SharedBackend = Arc::new(StoreBackend {
        state: state.clone(),
    });
    let options = state.leptos.clone();
    Router::new().leptos_routes_with_context(
        state,
        generate_route_list(app::App),
        {
            let state = state.clone();
            move || {
                provide_context(backend.clone());
                provide_viewer(&state);
                page_csp();
            }
        },
        move || app::shell(options.clone()),
    )
}

/// Tells the renderer who is looking: the guard put their [`Identity`] in
/// the request's extensions, which leptos_axum hands over as `Parts`.
///
/// [`Identity`]: crate::http::auth::identity::Identity
fn provide_viewer(state: &AppState) {
    let viewer = match leptos::prelude::use_context::<axum::http::request::Parts>() {
        Some(p) => signin::me(state, &p.headers, &p.extensions),
        None => signin::me(
            state,
            &axum::http::HeaderMap::new(),
            &axum::http::Extensions::new(),
        ),
    };
    provide_context(viewer);
}

/// Puts this page's CSP on the response: leptos_axum gives each render a
/// fresh nonce, which its inline hydration scripts carry (AUTH.md §4).
fn page_csp() {
    use leptos::prelude::use_context;
    if let (Some(nonce), Some(res)) = (
        leptos::nonce::use_nonce(),
        use_context::<leptos_axum::ResponseOptions>(),
    ) && let Ok(v) =
        axum::http::HeaderValue::from_str(&crate::http::auth::origin::page_csp(&nonce))
    {
        res.insert_header(axum::http::header::CONTENT_SECURITY_POLICY, v);
    }
}

/// Unknown paths: assets and UI paths go to Leptos (a file, or the 404
/// page); everything else is an API 404 in JSON.
pub(crate) async fn fallback(State(state): State<AppState>, req: Request) -> Response {
    let path = req.uri().path().to_string();
    if is_ui_path(&path, &state.leptos.site_root) {
        let backend: SharedBackend = Arc::new(StoreBackend {
            state: state.clone(),
        });
        let handler = leptos_axum::file_and_error_handler_with_context::<AppState, _>(
            {
                let state = state.clone();
                move || {
                    provide_context(backend.clone());
                    provide_viewer(&state);
                    page_csp();
                }
            },
            app::shell,
        );
        return handler(req.uri().clone(), State(state), req).await;
    }
    ApiError::NotFound(format!(
        "no API route for {} {path}; see the README for the API routes",
        req.method()
    ))
    .into_response()
}

fn is_ui_path(path: &str, site_root: &str) -> bool {
    if path == "/" || path.starts_with("/ui/") || path.starts_with("/pkg/") {
        return true;
    }
    is_static_file(path, site_root)
}

/// Whether `path` names a file in the site root (`/robots.txt`).
pub(crate) fn is_static_file(path: &str, site_root: &str) -> bool {
    let rel = path.trim_start_matches('/');
    !rel.is_empty()
        && !rel.split('/').any(|seg| seg == ".." || seg.is_empty())
        && Path::new(site_root).join(rel).is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ui_paths_are_pages_and_assets_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("robots.txt"), "x").unwrap();
        let root = dir.path().to_str().unwrap();
        assert!(is_ui_path("/", root));
        assert!(is_ui_path("/ui/nope", root));
        assert!(is_ui_path("/pkg/stopgo.js", root));
        assert!(is_ui_path("/robots.txt", root));
        assert!(!is_ui_path("/conversations/x/y", root));
        assert!(!is_ui_path("/../etc/passwd", root));
        assert!(!is_ui_path("/nothing-here", root));
    }
}
