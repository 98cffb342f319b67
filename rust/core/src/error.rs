//! The one error type of the core. The Python binding maps each variant to one
//! class of `lossless.errors`.

use rusqlite::ErrorCode;

/// Everything the core can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An argument was rejected; `field` names it (for example `parts[1].call_id`).
    #[error("{field}: {reason}")]
    InvalidInput { field: String, reason: String },
    /// No session has this id.
    #[error("no session with id {0:?}")]
    SessionNotFound(String),
    /// No row of `kind` has this id.
    #[error("no {kind} with id {id:?}")]
    NotFound { kind: &'static str, id: String },
    /// The file exists but is not a SQLite database.
    #[error("{path}: not a lossless database ({reason})")]
    NotADatabase { path: String, reason: String },
    /// The database was written by a newer schema than this build knows.
    #[error("{path}: schema version {found} is newer than the {supported} this build of lossless supports; upgrade lossless")]
    SchemaTooNew {
        path: String,
        found: i64,
        supported: i64,
    },
    /// The database file could not be opened or created.
    #[error("{path}: cannot open database: {reason}")]
    CannotOpen { path: String, reason: String },
    /// Another writer held the lock past the busy timeout.
    #[error("database is busy: {0}")]
    Busy(String),
    /// A statement tried to delete or rewrite stored content.
    #[error("{0}")]
    Immutable(String),
    /// The view changed under a compaction, or another holder has its lease.
    #[error("compaction conflict: {0}")]
    Conflict(String),
    /// Any other SQLite failure.
    #[error("sqlite: {0}")]
    Sqlite(String),
}

/// Result alias of the core.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Shorthand for [`Error::InvalidInput`].
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::InvalidInput {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// Prefix of every message raised by the immutability triggers (see schema.rs).
pub const IMMUTABLE_MARKER: &str = "lossless: append-only";

impl From<rusqlite::Error> for Error {
    fn from(err: rusqlite::Error) -> Self {
        let text = err.to_string();
        if text.contains(IMMUTABLE_MARKER) {
            return Error::Immutable(text);
        }
        match err.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => Error::Busy(text),
            Some(ErrorCode::NotADatabase) => Error::NotADatabase {
                path: String::new(),
                reason: text,
            },
            _ => Error::Sqlite(text),
        }
    }
}

impl From<rusqlite::types::FromSqlError> for Error {
    fn from(err: rusqlite::types::FromSqlError) -> Self {
        Error::Sqlite(format!("unexpected column value: {err}"))
    }
}
