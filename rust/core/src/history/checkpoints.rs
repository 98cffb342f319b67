//! The rows a streaming reply keeps while it streams: its checkpoint (owner and
//! heartbeat) and the chunks of text received since it began. A reply's start
//! writes the first, its end removes both.

use crate::db::backend::{args, Conn};
use crate::error::Result;
use crate::ids::now_ms;

/// Registers `message_id` as streamed by `owner`.
pub(crate) fn start_checkpoint(
    tx: &Conn,
    message_id: &str,
    session_id: &str,
    owner: &str,
) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO stream_checkpoints (message_id, session_id, owner, beat_at)
         VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(args![message_id, session_id, owner, now_ms()])?;
    Ok(())
}

/// Removes what a finished reply kept while it streamed.
pub(crate) fn end_checkpoint(tx: &Conn, message_id: &str) -> Result<()> {
    tx.prepare_cached("DELETE FROM stream_chunks WHERE message_id = ?1")?
        .execute(args![message_id])?;
    tx.prepare_cached("DELETE FROM stream_checkpoints WHERE message_id = ?1")?
        .execute(args![message_id])?;
    Ok(())
}
