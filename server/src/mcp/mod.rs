//! The MCP client: every configured server, stdio or Streamable HTTP,
//! behind one tool router.
//!
//! - `server`: one server's connection (via the `rmcp` crate), its tools
//!   and annotations, calls with timeouts, restart after a crash.
//! - `pipe`: a stdio server's streams: its child process (in the unit
//!   tests, an in-process `rmcp` server over a duplex: `in_process_tests`)
//!   and the pipe its answers are read through.
//! - `composite`: all servers together: startup, duplicate tool names,
//!   background re-listing and reconnection.
//! - `hints`: seed-style top-level tool hints lifted into `annotations`
//!   (stdio, on the pipe); `http_hints`: the same for HTTP servers.
//! - `questions`: elicitation, on a live session and as MRTR rounds;
//! - `frames`: the size limit of a tool's result, the same over both
//!   transports, and the stdio pipe's bounded line reading; `skim`: the
//!   id and size of a line too long to hold; `sse_limit`: the same for an
//!   SSE event over the transport's cap; `keyed`: a call's idempotency
//!   key as an HTTP header.
//!
//! `rmcp` is the official SDK: it does the handshake, both transports,
//! pagination and notifications, so this module only decides policy.

pub(crate) mod composite;
pub(crate) mod frames;
mod hints;
mod http_hints;
#[cfg(test)]
mod in_process_tests;
mod keyed;
mod oauth;
mod oauth_issuer;
mod pipe;
mod questions;
pub(crate) mod server;
mod skim;
mod sse_limit;

pub(crate) use composite::{CompositeClient, McpStartError};
