//! The route list, the router, the authorization table and `/openapi.json`
//! agree (issue 41): every declared route is served at its path, has its
//! rule, and is documented; nothing else is, and the pages declared are
//! exactly the app's.

use super::auth::access;
use super::route::Serve;
use super::routes::ROUTES;
use axum::body::Body;
use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use std::collections::BTreeSet;
use tower::ServiceExt;

/// An agent's state on a temp data dir, auth mode none.
async fn state(dir: &std::path::Path) -> super::state::AppState {
    let file = dir.join("agent.yaml");
    let text = format!("name: routes\ndata_dir: {}\n", dir.join("data").display());
    let config = crate::config::parse(&text, &file, &|_| None).unwrap();
    super::startup::build_state(super::startup::Startup {
        config,
        config_dir: dir.to_path_buf(),
        site_root: concat!(env!("CARGO_MANIFEST_DIR"), "/../target/site").into(),
        tools: None,
        a2a_conformance: false,
    })
    .await
    .unwrap()
}

/// A concrete path for a route's template (`{id}` becomes `x`; the A2A
/// task action needs its `:cancel` suffix).
fn concrete(method: &str, path: &str) -> String {
    let p: Vec<String> = path
        .split('/')
        .map(|s| {
            if s.starts_with('{') {
                "x".into()
            } else {
                s.to_string()
            }
        })
        .collect();
    let p = p.join("/");
    if method == "POST" && path == "/a2a/tasks/{id}" {
        format!("{p}:cancel")
    } else {
        p
    }
}

/// Which route template answered, as a response header (what axum matched).
async fn tell_matched(req: Request, next: Next) -> Response {
    let matched = req
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_string());
    let mut res = next.run(req).await;
    if let Some(m) = matched.and_then(|m| m.parse().ok()) {
        res.headers_mut().insert("x-matched", m);
    }
    res
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_route_list_the_router_the_table_and_openapi_agree() {
    let dir = tempfile::tempdir().unwrap();
    let state = state(dir.path()).await;
    let declared: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|r| (r.method.to_string(), r.path.to_string()))
        .collect();
    assert_eq!(declared.len(), ROUTES.len(), "a route is declared twice");

    // The authorization table is the list, and each route gets its rule.
    let table: BTreeSet<(String, String)> = super::routes::table()
        .map(|(m, p, _)| (m.to_string(), p.to_string()))
        .collect();
    assert_eq!(table, declared);
    for r in ROUTES {
        let method: axum::http::Method = r.method.parse().unwrap();
        let got = access::need(
            &method,
            &concrete(r.method, r.path),
            super::routes::table(),
            |_| false,
        );
        assert_eq!(got, r.need, "{} {}", r.method, r.path);
    }

    // /openapi.json documents exactly the declared routes.
    let doc = super::rest::docs::openapi(&state, ROUTES);
    let mut documented = BTreeSet::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for method in ops.as_object().unwrap().keys() {
            documented.insert((method.to_ascii_uppercase(), path.clone()));
        }
    }
    assert_eq!(documented, declared);

    // The pages declared are the app's routes, and no page is missing.
    let app_pages: BTreeSet<String> = leptos_axum::generate_route_list(app::App)
        .iter()
        .map(|r| r.path().to_string())
        .collect();
    let pages: BTreeSet<String> = ROUTES
        .iter()
        .filter(|r| matches!(r.serve, Serve::Page))
        .map(|r| r.path.to_string())
        .collect();
    assert_eq!(pages, app_pages);

    // The router serves each declared route at its template; nothing else
    // matches a route.
    let app = super::router::router(state).layer(axum::middleware::from_fn(tell_matched));
    for r in ROUTES {
        let req = Request::builder()
            .method(r.method)
            .uri(concrete(r.method, r.path))
            .body(Body::empty())
            .unwrap();
        let res = app.clone().oneshot(req).await.unwrap();
        assert_eq!(
            res.headers().get("x-matched").map(|v| v.to_str().unwrap()),
            Some(r.path),
            "{} {} answered {} without matching its route",
            r.method,
            r.path,
            res.status()
        );
    }
    for (method, path) in [
        ("GET", "/nothing"),
        ("GET", "/conversationz"),
        ("PUT", "/a2a/x"),
    ] {
        let req = Request::builder()
            .method(method)
            .uri(path)
            .body(Body::empty())
            .unwrap();
        let res = app.clone().oneshot(req).await.unwrap();
        assert!(
            res.headers().get("x-matched").is_none(),
            "{method} {path} matched"
        );
    }
}
