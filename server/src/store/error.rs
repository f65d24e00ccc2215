//! Storage errors.

/// Why a storage operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create the data directory {path}: {source}")]
    CreateDir {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open the database {path}: {source}")]
    Open {
        path: String,
        #[source]
        source: rusqlite::Error,
    },
    #[error(
        "the database {path} has schema version {found}, newer than this agent understands ({known}): \
         run the newer agent, or restore a backup"
    )]
    TooNew {
        path: String,
        found: i64,
        known: i64,
    },
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("database error: {0}")]
    Postgres(postgres::Error),
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
            _ => StoreError::Postgres(e),
        }
    }
}
