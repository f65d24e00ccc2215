//! `mcp-filesystem`: the built-in sandboxed filesystem MCP server
//! (`../shared/MCP-FILESYSTEM.md`). It shares nothing with the agent's
//! engine: it is a separate binary the agent reaches over MCP like any
//! third-party server.
//!
//! - [`config`]: `config/mcp-filesystem.yaml` and its validation (§2),
//!   overlapping roots refused.
//! - [`path`]: how a caller's path is read before anything touches the
//!   disk (§4.1): NUL, length limits, `..` above the root.
//! - [`patch`]: unified diffs read and applied in memory (§5.6).
//! - [`sandbox`]: a root as a directory handle and the one symlink rule
//!   (§4.2); every operation then acts on the resolved, symlink-free path
//!   relative to the handle, where the kernel keeps it inside (§4.3).
//! - [`tools`]: the table of tools and their handlers (§3, §5).
//! - [`server`]: the MCP server over them (§1, §3.2).

pub mod config;
pub mod patch;
pub mod path;
pub mod sandbox;
pub mod server;
pub mod tools;
