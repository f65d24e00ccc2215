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
    Postgres(#[from] postgres::Error),
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
