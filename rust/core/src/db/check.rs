//! What a file holds, read before anything is written to it.
//!
//! Opening must not write to a file that is not a lossless database, nor to one
//! that is damaged: switching to WAL rewrites the header, and creating the schema
//! adds tables. So the store first reads what SQLite reads anyway (the header,
//! whose page count a file cut short contradicts, and the schema) and the first
//! page of each table every schema version has. That costs a few page reads
//! whatever the file's size; damage deeper in a file is met when a read reaches it,
//! and raises the same error (see `Error::Corrupt`).

use rusqlite::Connection;

use crate::db::schema::SCHEMA_VERSION;
use crate::error::{Error, Result};

/// Tables of every schema version (1 to [`SCHEMA_VERSION`]).
const TABLES_OF_EVERY_VERSION: [&str; 5] = [
    "sessions",
    "messages",
    "parts",
    "summaries",
    "context_items",
];

/// The schema version the file holds: 0 for an empty file (or a new one). Refuses a
/// database of another application and a damaged one; leaves a newer version to
/// `schema::migrate`, which names it.
pub(crate) fn inspect(conn: &Connection, path: &str) -> Result<i64> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    let mut names = conn.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
    )?;
    let tables = names
        .query_map([], |row| row.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    if version > SCHEMA_VERSION {
        return Ok(version);
    }
    let missing: Vec<&str> = TABLES_OF_EVERY_VERSION
        .into_iter()
        .filter(|table| !tables.iter().any(|name| name == table))
        .collect();
    if missing.len() == TABLES_OF_EVERY_VERSION.len() && !tables.is_empty() {
        return Err(Error::NotADatabase {
            path: path.to_string(),
            reason: "it is a SQLite database of another application".into(),
        });
    }
    if version == 0 {
        return Ok(0);
    }
    if !missing.is_empty() {
        return Err(Error::Corrupt {
            path: path.to_string(),
            reason: format!(
                "it says schema version {version} but tables are missing: {}",
                missing.join(", ")
            ),
        });
    }
    for table in TABLES_OF_EVERY_VERSION {
        // NOT INDEXED: the table's own b-tree, not a smaller index that covers `1`.
        conn.query_row(
            &format!("SELECT count(*) FROM (SELECT 1 FROM {table} NOT INDEXED LIMIT 1)"),
            [],
            |_| Ok(()),
        )?;
    }
    Ok(version)
}
