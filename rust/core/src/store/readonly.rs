//! Opening a database only to read it: nothing is created, migrated or written.
//!
//! Recall (grep, describe, expand, read) and the command line read files that a
//! running agent may be writing, or that belong to someone else. Opening such a
//! file with [`Store::open`] would create a missing one, switch it to WAL and
//! migrate an older schema; [`Store::open_read_only`] does none of that, so a
//! typo in a path is an error naming it, and a file is left as it was found.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::schema::SCHEMA_VERSION;
use super::{check, cipher, open_error, OpenOptions, Store};
use crate::error::{Error, Result};

/// The oldest schema version read without migrating it: version 2 laid out the
/// tables every read uses as they are now (versions 3 and 4 added an index and
/// the stream tables, which reads do not need). A version 1 file must be opened
/// for writing once, which upgrades it.
pub const OLDEST_READABLE_SCHEMA: i64 = 2;

impl Store {
    /// Opens the existing database at `path` read-only (`SQLITE_OPEN_READ_ONLY`).
    /// A missing path is [`Error::DatabaseNotFound`]; a schema older than
    /// [`OLDEST_READABLE_SCHEMA`] is [`Error::SchemaTooOld`]. Writes through the
    /// store fail; reads see what other connections committed.
    ///
    /// On a `postgresql://` URL (a replica's, say) the store only reads; its
    /// searches find what the writers have moved into the index.
    pub fn open_read_only(path: &str, options: &OpenOptions) -> Result<Self> {
        options.check(path)?;
        if crate::pg::is_postgres_url(path) {
            return Self::open_postgres(path, options, true);
        }
        Self::open_read_only_checked(path, options).map_err(|err| err.with_path(path))
    }

    fn open_read_only_checked(path: &str, options: &OpenOptions) -> Result<Self> {
        if path.contains('\0') {
            return Err(Error::invalid("path", "contains a NUL byte"));
        }
        if path == ":memory:" || path.is_empty() {
            return Err(Error::invalid(
                "path",
                "a private in-memory database has nothing to read: pass the open store",
            ));
        }
        let file = Path::new(path);
        if file.is_dir() {
            return Err(Error::CannotOpen {
                path: path.into(),
                reason: "it is a directory".into(),
            });
        }
        if !file.exists() {
            return Err(Error::DatabaseNotFound { path: path.into() });
        }
        // No URI flag: the path is a file name, whatever characters it holds.
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|err| open_error(path, err))?;
        cipher::apply(&conn, options.key.as_ref())?;
        conn.busy_timeout(options.busy_timeout)
            .map_err(|err| open_error(path, err))?;
        let version = check::inspect(&conn, path)
            .map_err(|err| cipher::explain(err, path, options.key.is_some()))?;
        check_readable(path, version)?;
        conn.execute_batch(
            // Not `query_only`: grep indexes the rows still queued for the index in
            // a temporary table (see `pending.rs`); the file itself is opened read-only.
            "PRAGMA temp_store = MEMORY;
             PRAGMA cache_size = -65536;
             PRAGMA mmap_size = 268435456;",
        )?;
        conn.set_prepared_statement_cache_capacity(64);
        let indexed_languages = super::tokenizer::register(&conn)?;
        Ok(Self::on(
            super::backend::Conn::Sqlite(conn),
            path,
            true,
            indexed_languages,
            options,
        ))
    }

    /// Whether this store was opened read-only.
    #[must_use]
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }
}

/// Refuses a schema a read-only store cannot read as it is.
fn check_readable(path: &str, version: i64) -> Result<()> {
    if version > SCHEMA_VERSION {
        return Err(Error::SchemaTooNew {
            path: path.into(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    if version == 0 {
        return Err(Error::NotADatabase {
            path: path.into(),
            reason: "it holds no lossless schema (an empty file?)".into(),
        });
    }
    if version < OLDEST_READABLE_SCHEMA {
        return Err(Error::SchemaTooOld {
            path: path.into(),
            found: version,
            oldest: OLDEST_READABLE_SCHEMA,
        });
    }
    Ok(())
}
