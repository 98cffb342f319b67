//! The sessions that share a session's history: its forks, and the sessions its
//! operators ran, each with their own.

use crate::db::backend::{args, Conn};
use crate::error::Result;

/// Whether a session `id` is stored.
pub(super) fn exists(conn: &Conn, id: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM sessions WHERE id = ?1")?
        .query_opt(args![id], |_| Ok(()))?
        .is_some())
}

/// `roots` and every session below them, each once, children before their
/// parents (the order deletes must follow).
pub(super) fn descendants_first(conn: &Conn, roots: &[String]) -> Result<Vec<String>> {
    let mut ordered: Vec<String> = Vec::new();
    let mut queue: Vec<String> = roots.to_vec();
    while let Some(id) = queue.pop() {
        if ordered.contains(&id) {
            continue;
        }
        queue.extend(children(conn, &id)?);
        ordered.push(id);
    }
    ordered.reverse();
    Ok(ordered)
}

/// The sessions forked from `id` or run under it.
pub(super) fn children(conn: &Conn, id: &str) -> Result<Vec<String>> {
    conn.prepare_cached(
        "SELECT session_id FROM session_forks WHERE parent_id = ?1
         UNION SELECT session_id FROM session_parents WHERE parent_id = ?1",
    )?
    .query_map(args![id], |row| row.get(0))
}
