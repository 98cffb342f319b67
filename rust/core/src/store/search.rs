//! The full-text index and its backlog.
//!
//! Writers queue the text they store in `search_backlog`, inside their own
//! transaction, so stored content and its searchable text can never disagree.
//! FTS5 costs about 100 µs per transaction to index a few KB (it flushes a new
//! segment on every commit), several times an append's whole budget, while
//! indexing a batch costs a fraction of that per row. So the backlog moves into
//! `fts` in batches: before every search (a search never misses a stored row),
//! when it grows past [`BACKLOG_LIMIT`] rows, and whenever a caller asks
//! ([`Store::flush_search_index`]).

use rusqlite::{params, Transaction, TransactionBehavior};

use super::Store;
use crate::error::Result;

/// Rows the backlog may hold before the write that crosses it moves them all
/// into the index: bounds the work a search may have to do first.
pub const BACKLOG_LIMIT: i64 = 128;

/// Queues `body` for the index, inside the caller's transaction; moves the
/// whole backlog into the index when it has grown past [`BACKLOG_LIMIT`].
pub(super) fn queue_for_index(
    tx: &Transaction<'_>,
    body: &str,
    session_id: &str,
    owner_id: &str,
    part_id: &str,
) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO search_backlog (body, session_id, owner_id, part_id) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![body, session_id, owner_id, part_id])?;
    // The backlog is emptied all at once, so its rowids restart at 1: the newest
    // rowid is the number of rows waiting.
    if tx.last_insert_rowid() >= BACKLOG_LIMIT {
        move_backlog(tx)?;
    }
    Ok(())
}

/// Moves every queued row into `fts`, in the order it was written.
fn move_backlog(tx: &Transaction<'_>) -> Result<usize> {
    let moved = tx
        .prepare_cached(
            "INSERT INTO fts (body, session_id, owner_id, part_id)
             SELECT body, session_id, owner_id, part_id FROM search_backlog ORDER BY id",
        )?
        .execute([])?;
    tx.prepare_cached("DELETE FROM search_backlog")?
        .execute([])?;
    Ok(moved)
}

impl Store {
    /// Moves the text still waiting for the full-text index into it, in one
    /// transaction, and returns how many rows moved. Searches do this first on
    /// their own; calling it in idle time keeps them from paying for it.
    pub fn flush_search_index(&mut self) -> Result<usize> {
        if self.search_backlog()? == 0 {
            return Ok(0);
        }
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let moved = move_backlog(&tx)?;
        tx.commit()?;
        Ok(moved)
    }

    /// Rows waiting for the full-text index.
    pub fn search_backlog(&self) -> Result<i64> {
        Ok(self
            .conn
            .prepare_cached("SELECT count(*) FROM search_backlog")?
            .query_row([], |row| row.get(0))?)
    }
}
