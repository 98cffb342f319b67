//! Rows of the full-text index, deleted one rowid at a time: a rowid lookup in
//! the index, where a delete by a subquery would scan all of it.

use crate::db::backend::{args, Conn};
use crate::error::Result;

/// Deletes the index rows `fts_rowids` (a part's pk, minus a summary's).
pub(super) fn forget(tx: &Conn, fts_rowids: &[i64]) -> Result<()> {
    let sql = tx.dialect(
        "DELETE FROM fts WHERE rowid = ?1",
        "DELETE FROM search_index WHERE fts_rowid = ?1",
    );
    for rowid in fts_rowids {
        tx.execute(sql, args![rowid])?;
    }
    Ok(())
}
