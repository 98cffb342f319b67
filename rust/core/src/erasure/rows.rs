//! Removing a whole session's rows, table by table, children before parents.

use crate::db::backend::{args, Conn};
use crate::error::Result;

use super::Erased;
use super::{blobs, index};

/// The rows that hang off a session's parts and summaries: the search index's
/// backlog, tool outputs, edges (the index itself goes by rowid, see
/// [`super::index`]).
const DEPENDENT_ROWS: [(&str, &str); 6] = [
    (
        "DELETE FROM search_backlog WHERE fts_rowid IN (SELECT pk FROM parts WHERE session_id = ?1)
            OR fts_rowid IN (SELECT -pk FROM summaries WHERE session_id = ?1)",
        "DELETE FROM search_backlog WHERE fts_rowid IN (SELECT pk FROM parts WHERE session_id = ?1)
            OR fts_rowid IN (SELECT -pk FROM summaries WHERE session_id = ?1)",
    ),
    (
        "DELETE FROM tool_outputs WHERE part_pk IN (SELECT pk FROM parts WHERE session_id = ?1)",
        "DELETE FROM tool_outputs WHERE part_pk IN (SELECT pk FROM parts WHERE session_id = ?1)",
    ),
    (
        "DELETE FROM summary_sources WHERE summary_id IN (SELECT id FROM summaries WHERE session_id = ?1)",
        "DELETE FROM summary_sources WHERE summary_id IN (SELECT id FROM summaries WHERE session_id = ?1)",
    ),
    (
        "DELETE FROM stream_chunks WHERE message_id IN (SELECT id FROM messages WHERE session_id = ?1)",
        "DELETE FROM stream_chunks WHERE message_id IN (SELECT id FROM messages WHERE session_id = ?1)",
    ),
    (
        "DELETE FROM map_inputs WHERE map_id IN (SELECT map_id FROM map_runs WHERE parent_id = ?1)",
        "DELETE FROM map_inputs WHERE map_id IN (SELECT map_id FROM map_runs WHERE parent_id = ?1)",
    ),
    (
        "DELETE FROM map_outcomes WHERE map_id IN (SELECT map_id FROM map_runs WHERE parent_id = ?1)",
        "DELETE FROM map_outcomes WHERE map_id IN (SELECT map_id FROM map_runs WHERE parent_id = ?1)",
    ),
];

/// The tables keyed by session, in an order the foreign keys allow; the session
/// row goes last.
const SESSION_TABLES: [&str; 18] = [
    "stream_checkpoints",
    "ledger_items",
    "ledger_marks",
    "map_runs WHERE parent_id",
    "context_items",
    "events",
    "compaction_leases",
    "arena_entries",
    "arena_state",
    "session_keys",
    "sync_inputs",
    "session_forks",
    "session_parents",
    "session_subjects",
    "summaries",
    "parts",
    "messages",
    "sessions WHERE id",
];

/// Deletes every row of `session`, the files and media only it referenced, and
/// the retention rule naming it, adding the counts to `erased`.
pub(super) fn erase_session(tx: &Conn, session: &str, erased: &mut Erased) -> Result<()> {
    let blobs = blobs::of_session(tx, session)?;
    let indexed: Vec<i64> = tx
        .prepare_cached(
            "SELECT pk FROM parts WHERE session_id = ?1
             UNION ALL SELECT -pk FROM summaries WHERE session_id = ?1",
        )?
        .query_map(args![session], |row| row.get(0))?;
    index::forget(tx, &indexed)?;
    for (sqlite, postgres) in DEPENDENT_ROWS {
        tx.execute(tx.dialect(sqlite, postgres), args![session])?;
    }
    erased.messages += count(
        tx,
        "SELECT count(*) FROM messages WHERE session_id = ?1",
        session,
    )?;
    erased.parts += count(
        tx,
        "SELECT count(*) FROM parts WHERE session_id = ?1",
        session,
    )?;
    erased.summaries += count(
        tx,
        "SELECT count(*) FROM summaries WHERE session_id = ?1",
        session,
    )?;
    erased.arena_entries += count(
        tx,
        "SELECT count(*) FROM arena_entries WHERE session_id = ?1",
        session,
    )?;
    for table in SESSION_TABLES {
        let sql = if table.contains(" WHERE ") {
            format!("DELETE FROM {table} = ?1")
        } else {
            format!("DELETE FROM {table} WHERE session_id = ?1")
        };
        tx.execute(&sql, args![session])?;
    }
    tx.execute(
        "DELETE FROM retention_rules WHERE target_kind = 'session' AND target = ?1",
        args![session],
    )?;
    blobs::erase_unreferenced(tx, &blobs, erased)?;
    erased.sessions.push(session.to_string());
    Ok(())
}

fn count(tx: &Conn, sql: &str, session: &str) -> Result<i64> {
    tx.query_row(sql, args![session], |row| row.get(0))
}
