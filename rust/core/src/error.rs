//! The one error type of the core. The Python binding maps each variant to one
//! class of `lossless.errors`.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

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
    /// The file is a lossless database, or was one, but is damaged: cut short, or
    /// with pages or tables that do not read back.
    #[error("{path}: the database file is damaged ({reason})")]
    Corrupt { path: String, reason: String },
    /// The database was written by a newer schema than this build knows.
    #[error("{path}: schema version {found} is newer than the {supported} this build of lossless supports; upgrade lossless")]
    SchemaTooNew {
        path: String,
        found: i64,
        supported: i64,
    },
    /// A database was to be read at a path where there is no file.
    #[error("{path}: no such database file")]
    DatabaseNotFound { path: String },
    /// The database has a schema too old to read without upgrading it, which only
    /// a store opened for writing does.
    #[error("{path}: schema version {found} is older than {oldest}, the oldest read without upgrading; open it for writing once (lossless.Store(path)) to upgrade it")]
    SchemaTooOld {
        path: String,
        found: i64,
        oldest: i64,
    },
    /// The database is encrypted and the key given (or none) does not open it, or
    /// a key was given for a database that is not encrypted. Nothing was written.
    #[error("{path}: {reason}")]
    EncryptionKey { path: String, reason: String },
    /// The database file could not be opened or created.
    #[error("{path}: cannot open database: {reason}")]
    CannotOpen { path: String, reason: String },
    /// Reading or writing the open database file failed: it is read-only, the disk
    /// is full, or the system reported an I/O error. The transaction was rolled back.
    #[error("{path}: {reason}")]
    Io { path: String, reason: String },
    /// Another writer held the lock past the busy timeout.
    #[error("database is busy: {0}")]
    Busy(String),
    /// The database server rolled a transaction back as it lost a conflict with
    /// another (a deadlock, a serialization failure). Nothing of it stayed, so the
    /// store runs it again (see `gate::transact`); this reaches a caller only once
    /// the retries are spent or outside a write path.
    #[error("database is busy: {0}")]
    Contention(String),
    /// A statement tried to delete or rewrite stored content.
    #[error("{0}")]
    Immutable(String),
    /// The view changed under a compaction, or another holder has its lease.
    #[error("compaction conflict: {0}")]
    Conflict(String),
    /// An item of a map run that already succeeded was to be recorded again.
    #[error("{0}")]
    AlreadySucceeded(String),
    /// The database server refused the credentials, or the role may not use the
    /// database. `path` is the server's URL without its password.
    #[error("{path}: access denied: {reason}")]
    AccessDenied { path: String, reason: String },
    /// The connection to the database server could not be secured as its URL's
    /// `sslmode` asks: the server offers no TLS, or its certificate does not verify
    /// (an unknown issuer, another host name). `path` is the URL without its password.
    #[error("{path}: TLS: {reason}")]
    Tls { path: String, reason: String },
    /// Any other SQLite failure.
    #[error("sqlite: {0}")]
    Sqlite(String),
    /// Any other PostgreSQL failure, with its SQLSTATE code when the server sent one.
    #[error("postgresql: {0}")]
    Postgres(String),
    /// A bug: the core panicked (see [`catch_panic`]).
    #[error("internal error: {0}")]
    Internal(String),
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

    /// This error with `path` filled in where it concerns the database file and does
    /// not name one yet: SQLite's own errors do not know which file they come from.
    #[must_use]
    pub fn with_path(self, path: &str) -> Self {
        let named = |current: String| {
            if current.is_empty() {
                path.to_string()
            } else {
                current
            }
        };
        match self {
            Error::NotADatabase { path: at, reason } => Error::NotADatabase {
                path: named(at),
                reason,
            },
            Error::Corrupt { path: at, reason } => Error::Corrupt {
                path: named(at),
                reason,
            },
            Error::CannotOpen { path: at, reason } => Error::CannotOpen {
                path: named(at),
                reason,
            },
            Error::Io { path: at, reason } => Error::Io {
                path: named(at),
                reason,
            },
            Error::EncryptionKey { path: at, reason } => Error::EncryptionKey {
                path: named(at),
                reason,
            },
            Error::DatabaseNotFound { path: at } => Error::DatabaseNotFound { path: named(at) },
            Error::AccessDenied { path: at, reason } => Error::AccessDenied {
                path: named(at),
                reason,
            },
            Error::Tls { path: at, reason } => Error::Tls {
                path: named(at),
                reason,
            },
            other => other,
        }
    }
}

/// Runs `work`, turning a panic into [`Error::Internal`], so that a caller in another
/// language gets an error it can handle rather than an unwinding it cannot.
///
/// Asserting unwind safety holds for the store: a transaction open when the panic
/// unwinds is rolled back as it drops, and the caches compare their version with
/// the database's on every use, so a cache left behind by the panic is reloaded.
pub fn catch_panic<T>(work: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(work))
        .unwrap_or_else(|payload| Err(Error::Internal(panic_message(payload.as_ref()))))
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_string()
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
        // The path is not known here: `Error::with_path` adds it.
        let path = String::new();
        match err.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => Error::Busy(text),
            Some(ErrorCode::NotADatabase) => Error::NotADatabase { path, reason: text },
            Some(ErrorCode::DatabaseCorrupt) => Error::Corrupt { path, reason: text },
            Some(ErrorCode::CannotOpen) => Error::CannotOpen { path, reason: text },
            Some(ErrorCode::ReadOnly | ErrorCode::DiskFull | ErrorCode::SystemIoFailure) => {
                Error::Io { path, reason: text }
            }
            _ => Error::Sqlite(text),
        }
    }
}

impl From<rusqlite::types::FromSqlError> for Error {
    fn from(err: rusqlite::types::FromSqlError) -> Self {
        Error::Sqlite(format!("unexpected column value: {err}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_internal_error_with_its_message() {
        let formatted = catch_panic::<()>(|| panic!("index {} out of range", 7));
        assert!(matches!(formatted, Err(Error::Internal(text)) if text == "index 7 out of range"));
        let literal = catch_panic::<()>(|| panic!("too big"));
        assert!(matches!(literal, Err(Error::Internal(text)) if text == "too big"));
        assert!(matches!(catch_panic(|| Ok(3)), Ok(3)));
    }

    #[test]
    fn a_path_is_added_only_where_none_is_named() {
        let unnamed = Error::Corrupt {
            path: String::new(),
            reason: "database disk image is malformed".into(),
        };
        assert_eq!(
            unnamed.with_path("/x/a.db").to_string(),
            "/x/a.db: the database file is damaged (database disk image is malformed)"
        );
        let named = Error::Io {
            path: "/y/b.db".into(),
            reason: "disk I/O error".into(),
        };
        assert_eq!(
            named.with_path("/x/a.db").to_string(),
            "/y/b.db: disk I/O error"
        );
        let other = Error::invalid("role", "unknown").with_path("/x/a.db");
        assert_eq!(other.to_string(), "role: unknown");
    }
}
