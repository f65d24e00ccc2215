//! Stop & Go's agent server, in layers, each importing only those below it
//! (docs/architecture.md; `make lint` checks it):
//!
//! - [`http`]: the one place that speaks HTTP: the routes (declared once),
//!   REST, inbound A2A, the pages, sign-in; startup and serving.
//! - [`engine`]: turns, the tool-call lifecycle, the orchestration tree,
//!   the commands (send, decide, cancel).
//! - the engine's collaborators, none of which imports it: [`llm`] (model
//!   providers), [`mcp`] (the MCP client), [`a2a`] (wire types, client,
//!   discovery), [`notify`], [`events`], [`policy`] (approval rules),
//!   [`config`] (agent.yaml), [`telemetry`] (logs, traces, metrics);
//! - [`store`]: durable state behind one set of intents, on SQLite or
//!   PostgreSQL;
//! - [`domain`]: what every layer shares (principals, the tool router,
//!   ids, digests).
//!
//! [`run`] serves the router on a bound listener until `shutdown`
//! resolves; the `agent` binary and the tests both call it, so tests bind
//! `127.0.0.1:0` and exercise exactly what users run.

pub(crate) mod a2a;
pub mod config;
pub mod domain;
pub(crate) mod engine;
pub(crate) mod events;
pub(crate) mod http;
pub mod llm;
pub(crate) mod mcp;
pub(crate) mod notify;
pub mod policy;
pub mod store;
pub mod telemetry;

pub use http::serve::run;
pub use http::startup::{SITE_NAME, StartError, Startup, build_state, leptos_options, live_grants};
pub use http::state::AppState;
