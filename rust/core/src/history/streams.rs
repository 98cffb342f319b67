//! Replies while they stream: the owner checkpoints what has arrived, and a reply
//! whose owner is gone is closed as incomplete with its last checkpoint as text.
//!
//! Whether an owner is gone is the caller's judgement (a process on this host can
//! be asked; one elsewhere is judged by how long ago it last wrote): the store
//! reports each stream's owner and last write, and closes the ones it is told to.

use crate::db::backend::{args, Conn};

use crate::db::gate::transact;
use crate::error::{Error, Result};
use crate::history::messages::{close_message, prepare_parts, record_redaction, Closing, Usage};
use crate::history::redaction::{redact_parts, redact_text};
use crate::ids::now_ms;
use crate::parts::{check_content, Part};
use crate::store::Store;

/// Why a reply closed by [`Store::flag_interrupted`] ended, in its finish reason.
pub const INTERRUPTED: &str = "interrupted";

/// A reply of a session still marked streaming.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamRow {
    pub message_id: String,
    /// Who streams it; None for a reply begun before checkpoints existed.
    pub owner: Option<String>,
    /// When its owner last wrote a checkpoint (ms since the epoch).
    pub beat_at: Option<i64>,
    /// Characters of text checkpointed so far.
    pub chars: i64,
}

impl Store {
    /// Records the text a streaming reply received since its last checkpoint
    /// (`appended`), in one transaction with its owner's heartbeat; with `None`, only
    /// that its owner is alive. Fails with a conflict when the reply is no longer
    /// streamed by `owner` (finished, or flagged interrupted).
    pub fn checkpoint_message(
        &mut self,
        message_id: &str,
        owner: &str,
        appended: Option<&str>,
    ) -> Result<()> {
        let appended = appended.filter(|text| !text.is_empty());
        if let Some(text) = appended {
            check_content("text", text)?;
        }
        let chars = appended.map_or(0, |text| text.chars().count() as i64);
        // The checkpointed text goes through the session's redactor like the reply
        // it becomes; a secret split across two checkpoints is caught when the
        // reply is finished (and the checkpoints deleted).
        let session: Option<String> = self
            .conn
            .prepare_cached("SELECT session_id FROM stream_checkpoints WHERE message_id = ?1")?
            .query_opt(args![message_id], |row| row.get(0))?;
        let redactor = match &session {
            Some(session) => self.redactor_for(session)?,
            None => None,
        };
        let clean = appended.map(|text| redact_text(text, redactor.as_deref(), &mut Vec::new()));
        let appended = clean.as_deref();
        transact(&self.conn, &self.writer, None, |tx| {
            let changed = tx
                .prepare_cached(
                    "UPDATE stream_checkpoints SET chars = chars + ?3, beat_at = ?4
                     WHERE message_id = ?1 AND owner = ?2",
                )?
                .execute(args![message_id, owner, chars, now_ms()])?;
            if changed == 0 {
                return Err(Error::Conflict(format!(
                    "message {message_id} is not streamed by {owner} (finished, or flagged interrupted)"
                )));
            }
            if let Some(text) = appended {
                tx.prepare_cached(
                    "INSERT INTO stream_chunks (message_id, ord, text)
                     SELECT ?1, coalesce(max(ord) + 1, 0), ?2 FROM stream_chunks WHERE message_id = ?1",
                )?
                .execute(args![message_id, text])?;
            }
            Ok(())
        })
    }

    /// The session's replies still marked streaming, with who streams them.
    pub fn streams(&mut self, session_id: &str) -> Result<Vec<StreamRow>> {
        self.session(session_id)?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT m.id, c.owner, c.beat_at, coalesce(c.chars, 0)
             FROM messages m LEFT JOIN stream_checkpoints c ON c.message_id = m.id
             WHERE m.session_id = ?1 AND m.status = 'streaming' ORDER BY m.seq",
        )?;
        let rows = stmt.query_map(args![session_id], |row| {
            Ok(StreamRow {
                message_id: row.get(0)?,
                owner: row.get(1)?,
                beat_at: row.get(2)?,
                chars: row.get(3)?,
            })
        })?;
        Ok(rows.into_iter().collect::<_>())
    }

    /// Closes the named streaming replies of a session whose owners are gone, in
    /// one transaction: each keeps its last checkpoint as its text, is flagged
    /// incomplete with the finish reason [`INTERRUPTED`], and stays out of the
    /// view. Replies that are no longer streaming are skipped. Returns how many
    /// were closed.
    pub fn flag_interrupted(&mut self, session_id: &str, message_ids: &[String]) -> Result<usize> {
        let counter = self.counter(session_id)?;
        let redactor = self.redactor_for(session_id)?;
        let usage = Usage {
            finish_reason: Some(INTERRUPTED.to_string()),
            ..Usage::default()
        };
        transact(&self.conn, &self.writer, Some(session_id), |tx| {
            let mut closed = 0;
            for message_id in message_ids {
                let Some((seq, text)) = streaming_head(tx, session_id, message_id)? else {
                    continue;
                };
                let parts: Vec<Part> = if text.trim().is_empty() {
                    Vec::new()
                } else {
                    vec![Part::Text(text)]
                };
                let mut redacted = Vec::new();
                let parts = redact_parts(&parts, redactor.as_deref(), &mut redacted);
                let prepared = prepare_parts(&counter, &parts)?;
                let closing = Closing {
                    session_id,
                    message_id,
                    seq,
                    complete: false,
                    usage: &usage,
                };
                close_message(tx, &closing, &prepared)?;
                record_redaction(tx, session_id, message_id, &redacted)?;
                closed += 1;
            }
            Ok(closed)
        })
    }
}

/// The sequence number and checkpointed text of a reply of `session_id` that is
/// still streaming; None when it is not (finished meanwhile, or another session's).
fn streaming_head(tx: &Conn, session_id: &str, message_id: &str) -> Result<Option<(i64, String)>> {
    let seq: Option<i64> = tx
        .prepare_cached(
            "SELECT seq FROM messages WHERE id = ?1 AND session_id = ?2 AND status = 'streaming'",
        )?
        .query_opt(args![message_id, session_id], |row| row.get(0))?;
    let Some(seq) = seq else {
        return Ok(None);
    };
    let mut text = String::new();
    let mut chunks =
        tx.prepare_cached("SELECT text FROM stream_chunks WHERE message_id = ?1 ORDER BY ord")?;
    let mut rows = chunks.query(args![message_id])?;
    while let Some(ref row) = rows.next()? {
        text.push_str(row.get::<&str>(0)?);
    }
    Ok(Some((seq, text)))
}
