//! Where a request starts when a provider's compaction block stands in for the
//! conversation before it.
//!
//! A provider that compacted a conversation itself (Anthropic's server-side
//! compaction) returns a block that it reads back in place of every message before
//! it. Sending those messages again would cost the budget for nothing, so a request
//! starts at the newest view message holding a block of the session's provider:
//! what precedes it is left out as the budget leaves history out (stored, named by
//! the lead marker, searchable), with the instruction still sent.

use serde_json::Value;

use crate::db::backend::args;
use crate::error::Result;
use crate::model::ItemKind;
use crate::store::Store;

impl Store {
    /// The index of the newest message of the view of `session_id` that holds a
    /// compaction block `provider` made: history before it is not sent. 0 when there
    /// is none (or its message is under a summary of lossless's own).
    pub(crate) fn stand_in_floor(&mut self, session_id: &str, provider: &str) -> Result<usize> {
        let Some(message_id) = self.newest_compaction_message(session_id, provider)? else {
            return Ok(0);
        };
        let view = self.cached(session_id);
        Ok(view
            .items
            .iter()
            .rposition(|item| item.kind == ItemKind::Message && item.id == message_id)
            .unwrap_or(0))
    }

    /// The id of the newest message holding a compaction block of `provider`'s.
    /// Reads only the session's compaction parts (a partial index holds them).
    fn newest_compaction_message(
        &self,
        session_id: &str,
        provider: &str,
    ) -> Result<Option<String>> {
        // Newest first: the fork's own, then its parent's up to the fork point.
        for segment in self.lineage(session_id)?.segments.iter().rev() {
            let rows: Vec<(String, String)> = self.conn.query_map(
                "SELECT message_id, body FROM parts
                 WHERE session_id = ?1 AND kind = 'provider_compaction'
                   AND msg_seq BETWEEN ?2 AND ?3
                 ORDER BY msg_seq DESC, ord DESC",
                args![segment.session_id, segment.first_seq, segment.last_seq],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )?;
            let found = rows.into_iter().find_map(|(message_id, body)| {
                let made_by = serde_json::from_str::<Value>(&body).ok()?;
                (made_by["provider"].as_str() == Some(provider)).then_some(message_id)
            });
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }
}
