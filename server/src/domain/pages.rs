//! Where the web UI's pages are, for the layers below `http/` that must
//! point a person at one (a notification's Open link, the page an MCP or
//! AG-UI caller passes on). Key decision: the paths belong to the HTTP
//! edge, which declares the routes; this trait is how it hands them down,
//! so nothing below `http/` writes a path as text.

use std::sync::Arc;

/// Absolute links to the UI's pages, built by the HTTP edge.
pub(crate) trait Pages: Send + Sync {
    /// A conversation's page (its transcript, its approvals and questions).
    fn conversation(&self, id: &str) -> String;
    /// The tools page (a changed tool is accepted there).
    fn tools(&self) -> String;
    /// A signed one-click link's page, for its token.
    fn signed_link(&self, token: &str) -> String;
}

/// Shared links, as the layers below `http/` hold them.
pub(crate) type SharedPages = Arc<dyn Pages>;
