//! Stop & Go's agent server.
//!
//! - [`config`]: agent.yaml, validated at startup.
//! - [`store`]: conversations and messages in SQLite.
//! - [`api`]: the REST API and the router that also serves the web UI.
//! - `ui`: the Leptos page routes and server-side page data.
//! - [`state`]: the handles every request shares.
//!
//! [`run`] serves a router on a bound listener until `shutdown` resolves;
//! the `agent` binary and the tests both call it, so tests bind
//! `127.0.0.1:0` and exercise exactly what users run.

pub mod api;
pub mod config;
pub mod state;
pub mod store;
mod ui;

use crate::config::Config;
use crate::state::AppState;
use crate::store::Store;
use leptos::config::LeptosOptions;
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpListener;

/// The site's output name (`/pkg/stopgo.js`, `.wasm`, `.css`), as in Cargo.toml.
pub const SITE_NAME: &str = "stopgo";

/// Leptos options for serving the UI from `site_root`.
pub fn leptos_options(site_root: &str) -> LeptosOptions {
    LeptosOptions::builder()
        .output_name(SITE_NAME)
        .site_root(site_root)
        .site_pkg_dir("pkg")
        .build()
}

/// Opens the store for `config` and builds the shared state.
pub fn build_state(config: Config, site_root: &str) -> Result<AppState, store::StoreError> {
    let store = Store::open(&config.data_dir)?;
    Ok(AppState {
        store,
        config: Arc::new(config),
        leptos: leptos_options(site_root),
    })
}

/// Serves the app on `listener` until `shutdown` completes; in-flight
/// requests finish first.
pub async fn run(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = api::router(state);
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}
