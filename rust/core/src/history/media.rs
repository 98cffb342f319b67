//! The bytes of images and documents, once per reference id, and which of a
//! session's attachments a request sends inline.

use crate::db::backend::{args, Conn};
use crate::error::Result;
use crate::ids::now_ms;
use crate::parts::{Media, MediaBytes, Part, StoredColumns};
use crate::store::Store;

/// How many of a view's newest attachments a request sends inline, and how many
/// tokens they may take together (the provider's count). Older ones, and any past
/// either limit, go as their reference line alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MediaPolicy {
    pub max_inline: usize,
    pub max_inline_tokens: i64,
}

impl Default for MediaPolicy {
    /// Three, as Anthropic's computer-use reference loop keeps its three newest
    /// screenshots; 12,000 tokens holds three full-size screenshots on any provider.
    fn default() -> Self {
        Self {
            max_inline: 3,
            max_inline_tokens: 12_000,
        }
    }
}

/// Stores `bytes` under their reference id unless stored already: the same
/// content handed over twice is kept once.
pub(crate) fn insert_media(tx: &Conn, bytes: &MediaBytes<'_>) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO media (media_id, media_type, byte_size, data, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
    )?
    .execute(args![
        bytes.media_id,
        bytes.media_type,
        bytes.data.len() as i64,
        bytes.data,
        now_ms()
    ])?;
    Ok(())
}

impl Store {
    /// The MIME type and exact bytes of the image or document `media_id`, `None`
    /// when none is stored under it (an image known by URL has no bytes).
    pub fn read_media(&self, media_id: &str) -> Result<Option<(String, Vec<u8>)>> {
        self.conn
            .prepare_cached("SELECT media_type, data FROM media WHERE media_id = ?1")?
            .query_opt(args![media_id], |row| Ok((row.get(0)?, row.get(1)?)))
    }

    /// The first media part stored as `media_id` (in `session_id`, when given),
    /// with the session it is in. A scan of the media parts alone (their partial
    /// index), for a reader's call, not a request's.
    pub fn media_part(
        &self,
        session_id: Option<&str>,
        media_id: &str,
    ) -> Result<Option<(String, Media)>> {
        if !crate::parts::is_media_id(media_id) {
            return Ok(None);
        }
        // The body is the part's JSON as written (compact, keys sorted): the id
        // is found as its member.
        let member = format!("%\"media_id\":\"{media_id}\"%");
        let row: Option<(String, String, String, Option<String>)> = self
            .conn
            .prepare_cached(
                "SELECT session_id, id, body, call_id FROM parts
                 WHERE kind = 'media' AND (CAST(?2 AS TEXT) IS NULL OR session_id = ?2)
                   AND body LIKE ?1
                 ORDER BY pk LIMIT 1",
            )?
            .query_opt(args![member, session_id], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            })?;
        let Some((session_id, id, body, call_id)) = row else {
            return Ok(None);
        };
        let part = Part::from_columns(
            "media",
            StoredColumns {
                id,
                body,
                call_id,
                ..StoredColumns::default()
            },
        )?;
        match part {
            Part::Media(media) => Ok(Some((session_id, media))),
            _ => Ok(None),
        }
    }

    /// The newest `limit` media parts of `session_id`, newest first, each with the
    /// id of the message that holds it.
    pub(crate) fn newest_media(
        &self,
        session_id: &str,
        limit: usize,
    ) -> Result<Vec<(String, Media)>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT p.message_id, p.id, p.body, p.call_id FROM parts p
             WHERE p.session_id = ?1 AND p.kind = 'media' AND p.msg_seq BETWEEN ?3 AND ?4
             ORDER BY p.msg_seq DESC, p.ord DESC LIMIT ?2",
        )?;
        let mut rows: Vec<(String, String, String, Option<String>)> = Vec::new();
        // Newest first: the fork's own, then its parent's up to the fork point.
        for segment in self.lineage(session_id)?.segments.iter().rev() {
            let wanted = limit.saturating_sub(rows.len()) as i64;
            if wanted == 0 {
                break;
            }
            let first = (segment.first_seq, segment.last_seq);
            rows.extend(
                stmt.query_map(args![segment.session_id, wanted, first.0, first.1], |row| {
                    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
                })?,
            );
        }
        let mut found = Vec::new();
        for (message_id, id, body, call_id) in rows {
            let columns = StoredColumns {
                id,
                body,
                call_id,
                ..StoredColumns::default()
            };
            if let Part::Media(media) = Part::from_columns("media", columns)? {
                found.push((message_id, media));
            }
        }
        Ok(found)
    }

    /// The policy of what requests send inline (see [`MediaPolicy`]).
    pub fn set_media_policy(&mut self, policy: MediaPolicy) {
        if self.media_policy != policy {
            self.media_policy = policy;
            // Inline renderings were decided by the old policy.
            for view in self.views.all_mut() {
                view.replays.clear();
            }
        }
    }
}
