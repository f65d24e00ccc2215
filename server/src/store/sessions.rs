//! Browser sessions (AUTH.md §3): one row per signed-in browser.
//!
//! The cookie carries 32 random bytes; the table keeps only their SHA-256
//! (`id_hash`), so a copy of the database holds no usable session. A row is
//! the session: signing out deletes it and expiry is checked on every
//! lookup, so both take effect at once.

/// A signed-in browser.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Session {
    pub(crate) name: String,
    /// Role names.
    pub(crate) roles: Vec<String>,
    pub(crate) expires_at: String,
}

impl Session {
    /// From its columns (`roles` comma-separated).
    pub(super) fn decode(name: String, roles: String, expires_at: String) -> Session {
        Session {
            name,
            roles: roles
                .split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
            expires_at,
        }
    }
}
