//! Files and media blobs: shared by content, so one goes only when nothing that
//! stays references it.

use crate::db::backend::{args, Conn};
use crate::db::id_list::split_ids;
use crate::error::Result;

use super::Erased;

/// The file ids and media ids a set of parts (and summaries) referenced.
#[derive(Debug, Default)]
pub(super) struct Blobs {
    files: Vec<String>,
    media: Vec<String>,
}

/// What the parts and summaries of `session` reference.
pub(super) fn of_session(tx: &Conn, session: &str) -> Result<Blobs> {
    let mut blobs = Blobs::default();
    let rows: Vec<(String, Option<String>, String)> = tx
        .prepare_cached(
            "SELECT kind, file_ids, CASE WHEN kind = 'media' THEN body ELSE '' END
             FROM parts WHERE session_id = ?1 AND (file_ids IS NOT NULL OR kind = 'media')
             UNION ALL
             SELECT 'summary', file_ids, '' FROM summaries
             WHERE session_id = ?1 AND file_ids IS NOT NULL",
        )?
        .query_map(args![session], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })?;
    for (kind, file_ids, body) in rows {
        blobs.add(&kind, file_ids.as_deref(), &body);
    }
    Ok(blobs)
}

/// What the parts of message `message_id` reference.
pub(super) fn of_message(tx: &Conn, message_id: &str) -> Result<Blobs> {
    let mut blobs = Blobs::default();
    let rows: Vec<(String, Option<String>, String)> = tx
        .prepare_cached(
            "SELECT kind, file_ids, CASE WHEN kind = 'media' THEN body ELSE '' END
             FROM parts WHERE message_id = ?1",
        )?
        .query_map(args![message_id], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })?;
    for (kind, file_ids, body) in rows {
        blobs.add(&kind, file_ids.as_deref(), &body);
    }
    Ok(blobs)
}

impl Blobs {
    /// Adds what `other` references.
    pub(super) fn extend(&mut self, other: Blobs) {
        for id in other.files {
            if !self.files.contains(&id) {
                self.files.push(id);
            }
        }
        for id in other.media {
            if !self.media.contains(&id) {
                self.media.push(id);
            }
        }
    }

    fn add(&mut self, kind: &str, file_ids: Option<&str>, body: &str) {
        for id in split_ids(file_ids) {
            if !self.files.contains(&id) {
                self.files.push(id);
            }
        }
        if kind == "media" {
            if let Some(id) = media_id(body) {
                if !self.media.contains(&id) {
                    self.media.push(id);
                }
            }
        }
    }
}

/// The media id a media part's body names.
fn media_id(body: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    value.get("media_id")?.as_str().map(str::to_string)
}

/// Deletes each file and media blob of `blobs` that no remaining part or summary
/// references, once the erased rows are gone.
pub(super) fn erase_unreferenced(tx: &Conn, blobs: &Blobs, erased: &mut Erased) -> Result<()> {
    for id in &blobs.files {
        let pattern = format!("%{id}%");
        let used = tx
            .prepare_cached(
                "SELECT 1 FROM parts WHERE file_ids LIKE ?1
                 UNION ALL SELECT 1 FROM summaries WHERE file_ids LIKE ?1 LIMIT 1",
            )?
            .query_opt(args![pattern], |_| Ok(()))?;
        if used.is_none() {
            for table in ["file_chunks", "file_contents", "file_refs"] {
                tx.execute(
                    &format!("DELETE FROM {table} WHERE file_id = ?1"),
                    args![id],
                )?;
            }
            erased.files += 1;
        }
    }
    for id in &blobs.media {
        let member = format!("%\"media_id\":\"{id}\"%");
        let used = tx
            .prepare_cached("SELECT 1 FROM parts WHERE kind = 'media' AND body LIKE ?1 LIMIT 1")?
            .query_opt(args![member], |_| Ok(()))?;
        if used.is_none() {
            erased.media += tx.execute("DELETE FROM media WHERE media_id = ?1", args![id])? as i64;
        }
    }
    Ok(())
}
