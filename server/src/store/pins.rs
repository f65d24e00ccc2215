//! Tool pinning (POLICY.md §4): every MCP tool's definition (description,
//! input schema, annotations) as first seen, by digest, per server. A
//! server that later presents a different definition does not silently
//! change what was trusted: the new one is recorded beside the pin as a
//! change waiting for an admin (`tool.changed`), and accepting it moves
//! the pin (`tool.accepted`); each step is one transaction with its audit
//! row. Reverting to the pinned definition clears the change.

/// One pin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PinRow {
    pub(crate) server: String,
    pub(crate) tool: String,
    pub(crate) digest: String,
    /// The pinned definition, as JSON.
    pub(crate) definition: String,
    pub(crate) pinned_at: String,
    /// A different definition the server presented: (digest, JSON, when).
    pub(crate) changed: Option<(String, String, String)>,
}

/// What seeing a tool's current definition did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Observed {
    /// First seen: pinned now.
    Pinned,
    /// The pinned definition.
    Same,
    /// A different definition, recorded as a change (`first`: just now).
    Changed { first: bool },
    /// Back to the pinned definition: the recorded change was cleared.
    Reverted,
}

/// What an admin's acceptance did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Acceptance {
    Accepted,
    /// Nothing waits for an admin.
    Nothing,
    /// What waits is not what the admin looked at: its digest now.
    Moved(String),
}

pub(super) const PIN_COLUMNS: &str =
    "server, tool, digest, definition, pinned_at, changed_digest, changed_definition, changed_at";
