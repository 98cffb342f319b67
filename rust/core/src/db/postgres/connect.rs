//! Connecting to a server, and the one mapping from the client's errors to the
//! core's: each names the server by its URL without the password.

use std::time::Duration;

use postgres::error::SqlState;
use postgres::{Client, NoTls};

use super::url::redact;
use crate::error::{Error, IMMUTABLE_MARKER};

/// How long a connection attempt may take when the URL sets no `connect_timeout`:
/// an address that drops packets must not hang a worker.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens a connection to the database at `url` (plain TCP or a Unix socket: TLS is
/// for a later version). Refusals come back typed: an unreachable server or a
/// missing database as [`Error::CannotOpen`], refused credentials as
/// [`Error::AccessDenied`].
pub fn connect(url: &str) -> Result<Client, Error> {
    let shown = redact(url);
    let mut config: postgres::Config = url.parse().map_err(|err: postgres::Error| {
        Error::invalid("db", format!("{shown}: not a PostgreSQL URL: {err}"))
    })?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    if config.get_application_name().is_none() {
        config.application_name("lossless");
    }
    config
        .connect(NoTls)
        .map_err(|err| connect_error(&err, &shown))
}

/// A failed connection attempt: the server's own refusals keep their type; anything
/// else (refused, timed out, no such host or socket) is a server that cannot be
/// reached.
fn connect_error(err: &postgres::Error, shown: &str) -> Error {
    match from_postgres(err) {
        Error::Io { reason, .. } | Error::Postgres(reason) => Error::CannotOpen {
            path: shown.to_string(),
            reason,
        },
        other => other.with_path(shown),
    }
}

/// Maps a client error to the core's error; the caller adds the URL with
/// [`Error::with_path`].
#[must_use]
pub fn from_postgres(err: &postgres::Error) -> Error {
    let path = String::new();
    let text = describe(err);
    let Some(db) = err.as_db_error() else {
        if text.contains("password missing") {
            return Error::AccessDenied { path, reason: text };
        }
        if err.is_closed() || io_source(err) {
            // The connection failed or was lost: the server rolls back whatever
            // transaction it had open.
            return Error::Io { path, reason: text };
        }
        // The client's own refusal, such as a value of the wrong type.
        return Error::Postgres(text);
    };
    let code = db.code();
    if *code == SqlState::RAISE_EXCEPTION && db.message().starts_with(IMMUTABLE_MARKER) {
        return Error::Immutable(db.message().to_string());
    }
    if *code == SqlState::UNIQUE_VIOLATION && db.table().is_some_and(super::schema::is_append_only)
    {
        return Error::Immutable(format!(
            "{IMMUTABLE_MARKER}: a stored row of {} cannot be replaced ({})",
            db.table().unwrap_or_default(),
            db.message()
        ));
    }
    match code {
        c if *c == SqlState::INVALID_PASSWORD
            || *c == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
            || *c == SqlState::INSUFFICIENT_PRIVILEGE =>
        {
            Error::AccessDenied { path, reason: text }
        }
        c if *c == SqlState::INVALID_CATALOG_NAME
            || *c == SqlState::TOO_MANY_CONNECTIONS
            || *c == SqlState::CANNOT_CONNECT_NOW =>
        {
            Error::CannotOpen { path, reason: text }
        }
        // The server rolled the transaction back to break a cycle of waits, or
        // because it read what a concurrent one changed: running it again is safe.
        c if *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED => {
            Error::Contention(text)
        }
        // A lock waited for past `lock_timeout` (the busy timeout), or a statement
        // cancelled: the wait the caller allowed is over.
        c if *c == SqlState::LOCK_NOT_AVAILABLE || *c == SqlState::QUERY_CANCELED => {
            Error::Busy(text)
        }
        c if *c == SqlState::ADMIN_SHUTDOWN
            || *c == SqlState::CRASH_SHUTDOWN
            || *c == SqlState::DISK_FULL
            || *c == SqlState::IO_ERROR =>
        {
            Error::Io { path, reason: text }
        }
        _ => Error::Postgres(text),
    }
}

/// [`from_postgres`] naming the database: `shown` is its URL without the password.
#[must_use]
pub fn error_at(err: &postgres::Error, shown: &str) -> Error {
    named(from_postgres(err), shown)
}

/// `err` naming the database at `shown` (a URL without its password), in the
/// errors that carry a path and in those that carry only the server's message.
#[must_use]
pub fn named(err: Error, shown: &str) -> Error {
    let prefixed = |text: String| {
        if text.starts_with(shown) {
            text
        } else {
            format!("{shown}: {text}")
        }
    };
    match err.with_path(shown) {
        Error::Postgres(text) => Error::Postgres(prefixed(text)),
        Error::Busy(text) => Error::Busy(prefixed(text)),
        Error::Contention(text) => Error::Contention(prefixed(text)),
        other => other,
    }
}

/// The server's message with its SQLSTATE, or the client's own description with
/// its causes ("invalid configuration: password missing").
fn describe(err: &postgres::Error) -> String {
    if let Some(db) = err.as_db_error() {
        return format!("{} ({})", db.message(), db.code().code());
    }
    let mut text = err.to_string();
    let mut cause = std::error::Error::source(err);
    while let Some(inner) = cause {
        let said = inner.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = inner.source();
    }
    text
}

/// Whether the client failed reading or writing its socket.
fn io_source(err: &postgres::Error) -> bool {
    let mut cause = std::error::Error::source(err);
    while let Some(inner) = cause {
        if inner.is::<std::io::Error>() {
            return true;
        }
        cause = inner.source();
    }
    false
}
