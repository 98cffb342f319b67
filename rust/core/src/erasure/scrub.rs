//! After an erasure commits: the bytes it removed leave the disk where the
//! library can make them.
//!
//! SQLite: every connection runs with `secure_delete`, so the commit zeroed the
//! erased content in the database's pages (and the full-text index deletes terms
//! at once, see the schema); what remains is the write-ahead log, which still
//! holds the pages as they were written before. A `TRUNCATE` checkpoint copies
//! the log into the file and cuts it to zero bytes; another connection reading an
//! older snapshot can keep it from finishing, which the receipt reports.
//! PostgreSQL: a deleted row stays in its page until `VACUUM` reclaims it; the
//! tables an erasure touches are vacuumed where the role may. The server's own
//! write-ahead log and backups are the operator's (docs/GOVERNANCE.md).

use crate::db::backend::Conn;

/// The tables an erasure deletes content from, vacuumed on PostgreSQL.
const CONTENT_TABLES: &str = "messages, parts, tool_outputs, summaries, search_index, \
     arena_entries, stream_chunks, file_chunks, media, map_inputs, map_outcomes, events";

/// Scrubs after an erasure's commit; whether it completed.
pub(super) fn after_erasure(conn: &Conn) -> bool {
    match conn {
        Conn::Sqlite(conn) => {
            // A passive copy first, which writers never wait for: the truncating
            // one, which they do, then has only what was written meanwhile to copy.
            let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
            conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| {
                row.get::<_, i64>(0)
            })
            .is_ok_and(|busy| busy == 0)
        }
        Conn::Postgres(_) => conn.batch(&format!("VACUUM {CONTENT_TABLES}")).is_ok(),
    }
}
