//! Connecting to a server, and the one mapping from the client's errors to the
//! core's: each names the server by its URL without the password.

use std::time::Duration;

use postgres::config::Host;
use postgres::error::SqlState;
use postgres::Client;

use super::tls::{self, SslMode};
use super::url::redact;
use crate::error::{Error, IMMUTABLE_MARKER};

/// How long a connection attempt may take when the URL sets no `connect_timeout`:
/// an address that drops packets must not hang a worker.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens a connection to the database at `url`, over TCP (with TLS as its
/// `sslmode` asks: see `tls.rs`) or a Unix socket. Refusals come back typed: an
/// unreachable server or a missing database as [`Error::CannotOpen`], refused
/// credentials as [`Error::AccessDenied`], a TLS handshake or certificate that
/// fails as [`Error::Tls`].
pub fn connect(url: &str) -> Result<Client, Error> {
    let shown = redact(url);
    let (plain_url, mut settings) = tls::split(url, &shown)?;
    let mut config: postgres::Config = plain_url.parse().map_err(|err: postgres::Error| {
        Error::invalid("db", format!("{shown}: not a PostgreSQL URL: {err}"))
    })?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    if config.get_application_name().is_none() {
        config.application_name("lossless");
    }
    // As libpq: a Unix socket is local, and the server never speaks TLS on it.
    let hosts = config.get_hosts();
    if !hosts.is_empty() && hosts.iter().all(|host| matches!(host, Host::Unix(_))) {
        settings.mode = SslMode::Disable;
    }
    let connector = settings.connector(&shown)?;
    config.ssl_mode(settings.mode.client_mode());
    match config.connect(connector.clone()) {
        // `allow`: plain first, TLS only once the server has refused plain.
        Err(err) if settings.mode == SslMode::Allow && refused_plain(&err) => config
            .ssl_mode(postgres::config::SslMode::Require)
            .connect(connector),
        done => done,
    }
    .map_err(|err| connect_error(&err, &shown, settings.mode))
}

/// Whether the server refused a connection because it came without TLS: its
/// `pg_hba.conf` has no line for it (`hostssl` lines only).
fn refused_plain(err: &postgres::Error) -> bool {
    err.as_db_error().is_some_and(|db| {
        *db.code() == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
            && db.message().contains("no encryption")
    })
}

/// A failed connection attempt: the server's own refusals keep their type, a
/// failed TLS handshake is [`Error::Tls`]; anything else (refused, timed out, no
/// such host or socket) is a server that cannot be reached.
fn connect_error(err: &postgres::Error, shown: &str, mode: SslMode) -> Error {
    if tls_source(err) {
        return Error::Tls {
            path: shown.to_string(),
            reason: tls_reason(&describe(err)),
        };
    }
    match from_postgres(err) {
        Error::Io { reason, .. } | Error::Postgres(reason) => Error::CannotOpen {
            path: shown.to_string(),
            reason,
        },
        Error::AccessDenied { reason, .. } if mode == SslMode::Disable && refused_plain(err) => {
            Error::AccessDenied {
                path: shown.to_string(),
                reason: format!(
                    "{reason}; the server takes this connection over TLS only: \
                     set sslmode=verify-full (or require)"
                ),
            }
        }
        other => other.with_path(shown),
    }
}

/// A failed handshake said plainly: OpenSSL's verdict on the server's certificate
/// (the last part of its message) and what it means, or the message as it is.
fn tls_reason(text: &str) -> String {
    if !text.contains("certificate verify failed") {
        return text.to_string();
    }
    let verdict = text.rsplit(": ").next().unwrap_or(text).trim();
    let meaning = if verdict.contains("mismatch") {
        " (it does not name the URL's host, which sslmode=verify-full checks)"
    } else if verdict.contains("issuer") || verdict.contains("self-signed") {
        " (its issuer is not a root of sslrootcert)"
    } else {
        ""
    };
    format!("the server's certificate does not verify: {verdict}{meaning}")
}

/// Whether the client failed while setting up TLS: the handshake, the server's
/// certificate, or a server that offers no TLS where it was required.
fn tls_source(err: &postgres::Error) -> bool {
    if err
        .to_string()
        .starts_with("error performing TLS handshake")
    {
        return true;
    }
    let mut cause = std::error::Error::source(err);
    while let Some(inner) = cause {
        if inner.is::<openssl::ssl::Error>() || inner.is::<openssl::error::ErrorStack>() {
            return true;
        }
        cause = inner.source();
    }
    false
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
