//! The shared state every handler gets.

use crate::config::Config;
use crate::store::Store;
use axum::extract::FromRef;
use leptos::config::LeptosOptions;
use std::sync::Arc;

/// Cheap to clone: every field is a handle.
#[derive(Clone)]
pub struct AppState {
    /// Durable state. Shared because every request reads or writes it; the
    /// store serialises its own writes.
    pub store: Store,
    /// The validated config, read-only after startup.
    pub config: Arc<Config>,
    /// Where the UI's assets are and what they are called; Leptos reads it
    /// from the state when it renders a page or serves a file.
    pub leptos: LeptosOptions,
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos.clone()
    }
}
