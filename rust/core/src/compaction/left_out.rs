//! The file ids of what an assembly leaves out, for the marker that stands in its
//! place: a file id that entered a session never leaves its context, even when
//! compaction is behind and assembly has to drop raw messages or summaries.
//!
//! Messages are left out oldest first (all but the instruction, which is always
//! sent), so those left out are the view's first messages; their ids are gathered
//! once and extended as more are left out, never read again for the same items
//! while the view is unchanged.

use crate::db::backend::args;

use crate::db::id_list::{split_ids, IdList};
use crate::error::{Error, Result};
use crate::model::{ItemKind, ViewItem};
use crate::store::Store;

/// File ids of a view's first `through` items that are messages.
#[derive(Default)]
pub(crate) struct LeftOutIds {
    pub(crate) through: usize,
    ids: IdList,
}

impl Store {
    /// The file ids of the view items that are not `chosen` (ascending indices of
    /// `items`): the messages before `tail_start` (the chosen run of newest
    /// messages; the instruction among them is chosen, and its ids are in the
    /// context anyway), then any summaries not chosen, each id once.
    pub(crate) fn left_out_file_ids(
        &mut self,
        session_id: &str,
        chosen: &[usize],
        tail_start: usize,
    ) -> Result<Vec<String>> {
        let view = self.cached(session_id);
        let first_message = tail_start.min(view.items.len());
        let (through, pending) = if view.left_out.through <= first_message {
            let through = view.left_out.through;
            (through, message_seqs(&view.items[through..first_message]))
        } else {
            view.left_out = LeftOutIds::default();
            (0, message_seqs(&view.items[..first_message]))
        };
        let dropped_summaries: Vec<String> = view
            .summaries
            .iter()
            .filter(|index| chosen.binary_search(index).is_err())
            .map(|&index| view.items[index].id.clone())
            .collect();
        let gathered = self.message_file_ids(session_id, &pending)?;
        let summary_ids = self.summary_file_ids(&dropped_summaries)?;
        let view = self.cached(session_id);
        debug_assert_eq!(view.left_out.through, through);
        view.left_out.ids.extend(gathered);
        view.left_out.through = first_message;
        let mut all = IdList::default();
        all.extend(view.left_out.ids.ids.iter().cloned());
        all.extend(summary_ids);
        Ok(all.ids)
    }

    /// The file ids of the parts of the session's messages `seqs`, in one statement.
    fn message_file_ids(&self, session_id: &str, seqs: &[i64]) -> Result<Vec<String>> {
        if seqs.is_empty() {
            return Ok(Vec::new());
        }
        let seqs =
            serde_json::to_string(seqs).map_err(|err| Error::invalid("seqs", err.to_string()))?;
        let mut stmt = self.conn.prepare_cached(self.conn.dialect(
            "SELECT msg_seq, file_ids FROM parts
             WHERE session_id = ?1 AND msg_seq IN (SELECT value FROM json_each(?2))
               AND file_ids IS NOT NULL
             ORDER BY msg_seq, ord",
            "SELECT msg_seq, file_ids FROM parts
             WHERE session_id = ?1
               AND msg_seq IN (SELECT CAST(value AS BIGINT)
                               FROM jsonb_array_elements_text(CAST(?2 AS jsonb)))
               AND file_ids IS NOT NULL
             ORDER BY msg_seq, ord",
        ))?;
        let mut ids = Vec::new();
        // A fork's messages before its fork point are its parent's rows.
        for segment in &self.lineage(session_id)?.segments {
            let rows = stmt.query_map(args![segment.session_id, seqs], |row| {
                Ok((row.get::<i64>(0)?, row.get::<String>(1)?))
            })?;
            for (seq, joined) in rows {
                if (segment.first_seq..=segment.last_seq).contains(&seq) {
                    ids.extend(split_ids(Some(&joined)));
                }
            }
        }
        Ok(ids)
    }

    /// The file ids of the summaries `summary_ids`, in one statement.
    fn summary_file_ids(&self, summary_ids: &[String]) -> Result<Vec<String>> {
        if summary_ids.is_empty() {
            return Ok(Vec::new());
        }
        let wanted = serde_json::to_string(summary_ids)
            .map_err(|err| Error::invalid("summary_ids", err.to_string()))?;
        let mut stmt = self.conn.prepare_cached(self.conn.dialect(
            "SELECT s.file_ids FROM json_each(?1) AS w JOIN summaries s ON s.id = w.value
             ORDER BY w.key",
            "SELECT s.file_ids
             FROM jsonb_array_elements_text(CAST(?1 AS jsonb)) WITH ORDINALITY AS w(value, ord)
             JOIN summaries s ON s.id = w.value
             ORDER BY w.ord",
        ))?;
        let rows = stmt.query_map(args![wanted], |row| row.get::<Option<String>>(0))?;
        let mut ids = Vec::new();
        for joined in rows {
            ids.extend(split_ids(joined.as_deref()));
        }
        Ok(ids)
    }
}

/// The sequence numbers of the messages among `items`.
fn message_seqs(items: &[ViewItem]) -> Vec<i64> {
    items
        .iter()
        .filter(|item| item.kind == ItemKind::Message)
        .map(|item| item.seq)
        .collect()
}
