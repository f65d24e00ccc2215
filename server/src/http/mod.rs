//! The one place that speaks HTTP: everything a request meets before the
//! engine, and everything it leaves on the way out.
//!
//! - [`routes`]: every route declared once (method, path, role, doc);
//!   [`router`] is made from it, as are the authorization table and
//!   `/openapi.json`; [`state`]: the handles every request shares.
//! - [`rest`]: the REST handlers; [`a2a`]: inbound A2A (JSON-RPC and
//!   HTTP+JSON), the card, pushes; [`ui`]: the pages (server rendering,
//!   their form posts) and [`assets`].
//! - [`mcp`]: `POST /mcp`, the agent as an MCP server (the protocol
//!   around the engine's MCP endpoint) and its RFC 9728 metadata.
//! - [`auth`]: who is calling (tokens, OpenID, proxy, the sign-in session),
//!   the guard, cross-site protection, the sign-in pages.
//! - [`caller`]: the caller and the request log span; [`error`]: the one
//!   `ApiError`, which keeps internal text out of answers (REST and
//!   JSON-RPC alike); [`extract`]: bodies and queries read in the API's
//!   error format; [`metrics`]: `/metrics` and the request counters.
//! - [`startup`] and [`serve`]: from a config to a served router.

pub(crate) mod a2a;
pub(crate) mod ag_ui;
pub(crate) mod assets;
pub(crate) mod auth;
pub(crate) mod caller;
pub(crate) mod error;
pub(crate) mod extract;
pub(crate) mod guard;
pub(crate) mod html;
pub(crate) mod mcp;
pub(crate) mod metrics;
pub(crate) mod pages;
pub(crate) mod paths;
pub(crate) mod rest;
pub(crate) mod route;
pub(crate) mod router;
pub(crate) mod routes;
pub mod serve;
pub mod startup;
pub mod state;
pub(crate) mod ui;

#[cfg(test)]
mod tests;
