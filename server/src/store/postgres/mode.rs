//! How a closure's statements are grouped on a connection (a write, a
//! read-only snapshot, or one statement on its own): the pool picks the
//! mode, the transaction ([`PgTx`](super::tx::PgTx)) obeys it.

/// How a closure's statements are grouped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A read-write transaction (READ COMMITTED).
    Write,
    /// A read-only snapshot (REPEATABLE READ READ ONLY).
    Read,
    /// One read statement on its own, no transaction around it; a second
    /// statement is refused (it would not share the first one's snapshot).
    Single,
}

impl Mode {
    /// What opens the transaction (`None`: there is none).
    pub(super) fn begin(self) -> Option<&'static str> {
        match self {
            Mode::Write => Some("BEGIN"),
            Mode::Read => Some("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"),
            Mode::Single => None,
        }
    }
}
