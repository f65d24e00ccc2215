//! `mcp-resources`: the built-in MCP server of named integer resources.
//!
//! - `db`: the SQLite table and its operations.
//! - `server`: the three MCP tools and their annotations.

pub mod db;
pub mod server;
