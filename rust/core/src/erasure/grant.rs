//! Opening and closing the append-only triggers for one transaction.
//!
//! SQLite: every delete trigger passes only while `erasure_grants` holds a row;
//! the erasure writes it first and deletes it before its commit, so no other
//! connection ever sees it. PostgreSQL: the trigger function lets a row delete
//! through while `lossless.erasing` is on, which `SET LOCAL` keeps to this
//! transaction.

use crate::db::backend::{args, Conn};
use crate::error::Result;

/// Opens the triggers to the deletes of the caller's transaction.
pub(super) fn open(tx: &Conn) -> Result<()> {
    if tx.is_postgres() {
        return tx.batch("SET LOCAL lossless.erasing = 'on'");
    }
    tx.execute("INSERT INTO erasure_grants (granted) VALUES (1)", args![])?;
    Ok(())
}

/// Closes them again before the commit.
pub(super) fn close(tx: &Conn) -> Result<()> {
    if tx.is_postgres() {
        return tx.batch("SET LOCAL lossless.erasing = 'off'");
    }
    tx.execute("DELETE FROM erasure_grants", args![])?;
    Ok(())
}

/// Runs `work` with SQLite's foreign-key checks off. An erasure deletes children
/// before their parents, and a check of each deleted message would scan the parts
/// table (no index leads with `message_id`: every append would pay for one).
/// The pragma is a no-op inside a transaction, so it is set around it.
pub(super) fn without_foreign_keys<T>(conn: &Conn, work: impl FnOnce() -> Result<T>) -> Result<T> {
    if conn.is_postgres() {
        return work();
    }
    conn.batch("PRAGMA foreign_keys = OFF")?;
    let result = work();
    conn.batch("PRAGMA foreign_keys = ON")?;
    result
}
