//! The shared state every handler gets.

use crate::config::Config;
use crate::engine::Engine;
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
    /// Turns, approvals and tools. Shared because every request that changes
    /// a conversation goes through it (it owns the per-conversation locks).
    pub(crate) engine: Engine,
    /// Notification delivery and the key of their signed links.
    pub(crate) notify: Arc<crate::notify::Notifier>,
    /// The A2A tasks: the engine and what runs A2A messages (the engine,
    /// or the TCK's conformance executor, `agent --a2a-conformance`).
    pub(crate) a2a: crate::engine::a2a_tasks::service::A2aTasks,
    /// `/mcp`'s protocol side, a router of its own (`None`:
    /// `mcp_endpoint.enabled: false`).
    pub(crate) mcp: Option<axum::Router>,
    /// Who may do what: credentials, sessions' settings, failure limits.
    /// Shared because every request is checked against it.
    pub(crate) auth: Arc<crate::http::auth::Auth>,
    /// The validated config, read-only after startup.
    pub(crate) config: Arc<Config>,
    /// The key our agent card is signed with (`a2a_card_signing`).
    pub(crate) card_signer: Option<Arc<crate::a2a::signing::CardSigner>>,
    /// The key decided calls' receipts are signed with (`receipts`).
    pub(crate) receipt_signer: Option<Arc<receipts::Signer>>,
    /// When each agent card body (by its ETag) was first served: its
    /// `Last-Modified`.
    pub(crate) card_served: Arc<std::sync::Mutex<std::collections::HashMap<String, String>>>,
    /// Where the UI's assets are and what they are called; Leptos reads it
    /// from the state when it renders a page or serves a file.
    pub(crate) leptos: LeptosOptions,
    /// The owner of every task the agent spawns (the same one the store,
    /// the engine and the collaborators were given): `run` stops and drains
    /// it on shutdown. Public so a test can see that nothing is left.
    pub tasks: crate::domain::tasks::Tasks,
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos.clone()
    }
}
