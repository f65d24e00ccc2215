//! Storage errors. No driver type leaves `store/`: the SQLite and
//! PostgreSQL errors become text here (logged by the caller, never shown to
//! a client), and the few that mean something to a caller (NUL in a text,
//! a lost lease) are variants of their own.

/// Why a storage operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create the data directory {path}: {source}")]
    CreateDir {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open the database {path}: {reason}")]
    Open { path: String, reason: String },
    #[error(
        "the database {path} has schema version {found}, newer than this agent understands ({known}): \
         run the newer agent, or restore a backup"
    )]
    TooNew {
        path: String,
        found: i64,
        known: i64,
    },
    /// What the database driver said (SQLite or PostgreSQL).
    #[error("database error: {0}")]
    Database(String),
    /// A value the database cannot hold (PostgreSQL's text has no NUL):
    /// the client's input, answered with a 4xx that names it.
    #[error("{0}")]
    Unstorable(String),
    /// The PostgreSQL backend cannot be used (a bad URL, unreachable).
    #[error("{0}")]
    Backend(String),
    /// Another replica took over the conversation's turn (its lease expired
    /// here): this replica stops writing it.
    #[error("the turn of conversation {0} was taken over by another replica")]
    LeaseLost(String),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    #[error("the storage worker stopped: {0}")]
    Worker(String),
}

/// PostgreSQL's errors, with the ones about the data itself told apart:
/// a text with NUL (U+0000) fails with SQLSTATE 22021 (or 22P05 when it
/// cannot be converted), which is the sender's input, not the server's
/// fault.
impl From<postgres::Error> for StoreError {
    fn from(e: postgres::Error) -> Self {
        match e.code().map(|c| c.code()) {
            Some("22021" | "22P05") => {
                StoreError::Unstorable("text cannot contain the NUL character (U+0000)".into())
            }
            _ => StoreError::Database(e.to_string()),
        }
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Database(e.to_string())
    }
}
