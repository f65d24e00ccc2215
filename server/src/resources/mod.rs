//! `mcp-resources`: the built-in MCP server of named integer resources.
//!
//! - `db`: the SQLite table and its operations.

pub mod db;
