//! The one mapping from core errors to the classes of `lossless.errors`.

use lossless_core::Error;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyType;

fn class_name(err: &Error) -> &'static str {
    match err {
        Error::InvalidInput { .. } => "InvalidInputError",
        Error::SessionNotFound(_) => "SessionNotFoundError",
        Error::NotFound {
            kind: "summary", ..
        } => "SummaryNotFoundError",
        Error::NotFound { .. } => "NotFoundError",
        Error::NotADatabase { .. } => "NotADatabaseError",
        Error::EncryptionKey { .. } => "EncryptionKeyError",
        Error::Corrupt { .. } => "CorruptDatabaseError",
        Error::SchemaTooNew { .. } | Error::SchemaTooOld { .. } => "SchemaVersionError",
        Error::DatabaseNotFound { .. } => "DatabaseNotFoundError",
        Error::Busy(_) | Error::Contention(_) => "StoreBusyError",
        Error::Immutable(_) => "ImmutableRowError",
        Error::Conflict(_) => "CompactionBusyError",
        Error::AlreadySucceeded(_) => "MapConflictError",
        Error::AccessDenied { .. } => "AccessDeniedError",
        Error::Tls { .. } => "TlsError",
        // A panic in the core is a bug, but its call ran in a transaction that was
        // rolled back: to the caller it is a store call that failed and left nothing.
        Error::CannotOpen { .. }
        | Error::Io { .. }
        | Error::Sqlite(_)
        | Error::Postgres(_)
        | Error::Internal(_) => "StoreError",
    }
}

/// Converts a core error into the matching `lossless.errors` exception.
pub fn to_py_err(err: Error) -> PyErr {
    Python::attach(|py| {
        let class = py
            .import("lossless.errors")
            .and_then(|module| module.getattr(class_name(&err)))
            .and_then(|class| class.cast_into::<PyType>().map_err(PyErr::from));
        match class {
            Ok(class) => PyErr::from_type(class, err.to_string()),
            Err(_) => PyRuntimeError::new_err(err.to_string()),
        }
    })
}

/// An `InvalidInputError` naming `field`, raised by the binding's own argument checks.
pub fn invalid(field: &str, reason: &str) -> PyErr {
    to_py_err(Error::invalid(field, reason))
}
