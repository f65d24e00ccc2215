//! Why a remote agent gave no answer ([`A2aError`]), shared by the client,
//! discovery and the gRPC binding, and the short reason of a failed
//! request.

use super::read_card::ReadCard;

/// Why a remote agent gave no answer.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum A2aError {
    #[error("cannot reach {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("{0}")]
    BadCard(String),
    #[error("the agent answered with error {code}: {message}")]
    Remote { code: i64, message: String },
    /// HTTP 401/403: this agent's credential for it is missing or not
    /// enough (AUTH.md §6: `headers:` on the `a2a` entry or node).
    #[error("the agent refused the request (HTTP {status}): {message}")]
    Refused { status: u16, message: String },
    #[error("the task ended as {state}: {text}")]
    Failed { state: String, text: String },
    #[error("unexpected answer: {0}")]
    Protocol(String),
    /// Its card is not signed by the key pinned for it (`a2a[].trust`):
    /// delegation is held until the card verifies again or an admin
    /// accepts the card.
    #[error("held: its agent card cannot be trusted: {reason}")]
    Untrusted {
        reason: String,
        /// The first time this reason is seen for the agent (to audit once).
        new: bool,
        /// The card held (none when no card could be read to judge).
        card: Option<Box<ReadCard>>,
    },
}

/// A short reason for a failed request (the URL is said once, by the caller).
pub(super) fn short(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        "connection refused or unreachable".into()
    } else {
        let mut s = e.to_string();
        if let Some(url) = e.url() {
            s = s
                .replace(&format!(" ({url})"), "")
                .replace(url.as_str(), "the agent");
        }
        s
    }
}
