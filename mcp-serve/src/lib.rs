//! What the built-in MCP servers (`mcp-filesystem`, `mcp-resources`) share
//! with each other and, for [`listen`] alone, with the agent.
//!
//! - [`listen`]: a listening socket with a backlog sized for bursts (the
//!   agent, the MCP servers and the tests' fakes all bind through it).
//! - `http` (feature `mcp`, the default): Streamable HTTP serving with the
//!   same DNS-rebinding protection for both servers.
//! - `logging` (feature `mcp`): logs to stderr, whose stdout is the
//!   protocol channel in stdio mode.
//! - `guard` (feature `mcp`): receipts and idempotency keys checked before
//!   a destructive call runs (RECEIPTS.md §2-§3), with the server's ledger.
//!
//! The agent depends on this crate without its default feature, so it
//! compiles nothing of an MCP server.

mod listen;

pub use listen::{BACKLOG, listen};

#[cfg(feature = "mcp")]
pub mod guard;
#[cfg(feature = "mcp")]
pub mod http;
#[cfg(feature = "mcp")]
pub mod logging;
