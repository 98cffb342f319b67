//! Erasing one message: its parts and what they left in the index and the
//! blobs, its place in every view that reads it, and the summaries built on it.

use crate::db::backend::{args, Conn};
use crate::error::{Error, Result};

use super::{blobs, family, index, marked, Erased};

/// The rows of a run of messages' parts (`?1` the session, `?2` to `?3` the
/// seqs): the index's backlog, outputs, streams. The index itself is deleted
/// from by rowid (see [`super::index`]).
const PART_ROWS: [(&str, &str); 4] = [
    (
        "DELETE FROM search_backlog WHERE fts_rowid IN (SELECT pk FROM parts WHERE session_id = ?1 AND msg_seq BETWEEN ?2 AND ?3)",
        "DELETE FROM search_backlog WHERE fts_rowid IN (SELECT pk FROM parts WHERE session_id = ?1 AND msg_seq BETWEEN ?2 AND ?3)",
    ),
    (
        "DELETE FROM tool_outputs WHERE part_pk IN (SELECT pk FROM parts WHERE session_id = ?1 AND msg_seq BETWEEN ?2 AND ?3)",
        "DELETE FROM tool_outputs WHERE part_pk IN (SELECT pk FROM parts WHERE session_id = ?1 AND msg_seq BETWEEN ?2 AND ?3)",
    ),
    (
        "DELETE FROM stream_chunks WHERE message_id IN (SELECT id FROM messages WHERE session_id = ?1 AND seq BETWEEN ?2 AND ?3)",
        "DELETE FROM stream_chunks WHERE message_id IN (SELECT id FROM messages WHERE session_id = ?1 AND seq BETWEEN ?2 AND ?3)",
    ),
    (
        "DELETE FROM stream_checkpoints WHERE message_id IN (SELECT id FROM messages WHERE session_id = ?1 AND seq BETWEEN ?2 AND ?3)",
        "DELETE FROM stream_checkpoints WHERE message_id IN (SELECT id FROM messages WHERE session_id = ?1 AND seq BETWEEN ?2 AND ?3)",
    ),
];

/// Erases message `message_id`; an unknown id is an error.
pub(super) fn erase(tx: &Conn, message_id: &str, erased: &mut Erased) -> Result<()> {
    let (session, seq): (String, i64) = tx
        .prepare_cached("SELECT session_id, seq FROM messages WHERE id = ?1")?
        .query_opt(args![message_id], |row| Ok((row.get(0)?, row.get(1)?)))?
        .ok_or_else(|| Error::NotFound {
            kind: "message",
            id: message_id.to_string(),
        })?;
    erase_run(tx, &session, (seq, seq), erased)
}

/// Erases the messages of `session` with seqs `low` to `high`, wherever they
/// are read: the session's view and the views of the forks that share them.
pub(super) fn erase_run(
    tx: &Conn,
    session: &str,
    (low, high): (i64, i64),
    erased: &mut Erased,
) -> Result<()> {
    let ids: Vec<String> = tx
        .prepare_cached("SELECT id FROM messages WHERE session_id = ?1 AND seq BETWEEN ?2 AND ?3")?
        .query_map(args![session, low, high], |row| row.get(0))?;
    let mut blobs = blobs::Blobs::default();
    for id in &ids {
        blobs.extend(blobs::of_message(tx, id)?);
    }
    let part_pks: Vec<i64> = tx
        .prepare_cached("SELECT pk FROM parts WHERE session_id = ?1 AND msg_seq BETWEEN ?2 AND ?3")?
        .query_map(args![session, low, high], |row| row.get(0))?;
    index::forget(tx, &part_pks)?;
    for (sqlite, postgres) in PART_ROWS {
        tx.execute(tx.dialect(sqlite, postgres), args![session, low, high])?;
    }
    erased.parts += tx.execute(
        "DELETE FROM parts WHERE session_id = ?1 AND msg_seq BETWEEN ?2 AND ?3",
        args![session, low, high],
    )? as i64;
    marked::mark_summaries_above(tx, (session, low, high), erased)?;
    let readers = family::descendants_first(tx, &[session.to_string()])?;
    for reader in &readers {
        // One pass over the reader's view for the whole run.
        tx.execute(
            "DELETE FROM context_items WHERE session_id = ?1 AND kind = 'message' AND item_id IN
               (SELECT id FROM messages WHERE session_id = ?2 AND seq BETWEEN ?3 AND ?4)",
            args![reader, session, low, high],
        )?;
        erased.arena_entries += forget_untrusted_entries(tx, reader)?;
        erased.arena_entries +=
            crate::ledger::store::forget_erased(tx, reader, (session, low, high))?;
        tx.execute(
            "UPDATE sessions SET view_version = view_version + 1 WHERE id = ?1",
            args![reader],
        )?;
    }
    erased.messages += tx.execute(
        "DELETE FROM messages WHERE session_id = ?1 AND seq BETWEEN ?2 AND ?3",
        args![session, low, high],
    )? as i64;
    blobs::erase_unreferenced(tx, &blobs, erased)?;
    for reader in readers {
        if !erased.touched_sessions.contains(&reader) {
            erased.touched_sessions.push(reader);
        }
    }
    Ok(())
}
/// Deletes what the library itself wrote into a session's arena from tool output
/// and recall (failures, recalled and retrieved text): it may quote the erased
/// message, and the next turn writes what still holds again. The caller's own
/// entries stay.
fn forget_untrusted_entries(tx: &Conn, session: &str) -> Result<i64> {
    let removed = tx.execute(
        "DELETE FROM arena_entries WHERE session_id = ?1 AND source <> 'user'
           AND zone IN ('tool_failures', 'memory_recall', 'rag_external')",
        args![session],
    )?;
    Ok(removed as i64)
}
