//! Summary rows and deterministic summaries: the transcript a summariser reads,
//! truncation to a budget and the live summaries.

use crate::db::backend::{args, Row};

use crate::context::view::ItemKind;
use crate::db::id_list::{split_ids, IdList};
use crate::error::{Error, Result};
use crate::render::transcript_entry;
use crate::store::Store;

/// Characters of one message a deterministic truncation keeps at most, so a single
/// huge tool output cannot crowd out every other recent message.
const TRUNCATION_ENTRY_CHARS: usize = 4000;

/// A rendered text with its token count and the messages it drew on.
#[derive(Clone, Debug, Default)]
pub struct TextResult {
    pub text: String,
    pub token_count: i64,
    pub message_ids: Vec<String>,
    pub file_ids: Vec<String>,
}

/// A stored summary.
#[derive(Clone, Debug)]
pub struct SummaryRow {
    pub id: String,
    pub session_id: String,
    pub kind: String,
    pub level: i64,
    pub text: String,
    pub token_count: i64,
    pub span_start_seq: i64,
    pub span_end_seq: i64,
    pub message_count: i64,
    pub depth: i64,
    pub file_ids: Vec<String>,
    pub created_at: i64,
    pub superseded_by: Option<String>,
}

const SUMMARY_COLUMNS: &str =
    "id, session_id, kind, level, text, token_count, span_start_seq, span_end_seq,
     message_count, depth, file_ids, created_at, superseded_by";

fn row_to_summary(row: &Row<'_>) -> Result<SummaryRow> {
    let file_ids: Option<String> = row.get(10)?;
    Ok(SummaryRow {
        id: row.get(0)?,
        session_id: row.get(1)?,
        kind: row.get(2)?,
        level: row.get(3)?,
        text: row.get(4)?,
        token_count: row.get(5)?,
        span_start_seq: row.get(6)?,
        span_end_seq: row.get(7)?,
        message_count: row.get(8)?,
        depth: row.get(9)?,
        file_ids: split_ids(file_ids.as_deref()),
        created_at: row.get(11)?,
        superseded_by: row.get(12)?,
    })
}

impl Store {
    /// A transcript of view messages, oldest first, for an LLM summariser. With
    /// `max_tokens`, messages are taken from the oldest until the next would not
    /// fit (at least three, when there are three).
    pub fn transcript(
        &mut self,
        message_ids: &[String],
        max_chars_per_message: Option<usize>,
        max_tokens: Option<i64>,
    ) -> Result<TextResult> {
        let (session_id, members) = self.named_messages(message_ids)?;
        let counter = self.counter(&session_id)?;
        let at_least = 3.min(message_ids.len());
        let mut result = TextResult::default();
        let mut file_ids = IdList::default();
        self.walk_messages(&session_id, &members, false, |seq, parts, ids| {
            let entry = transcript_entry(
                seq,
                members.role(seq).as_str(),
                parts,
                max_chars_per_message,
            );
            let tokens = counter.count(&entry) as i64 + 1;
            if let Some(limit) = max_tokens {
                if result.message_ids.len() >= at_least && result.token_count + tokens > limit {
                    return Ok(false);
                }
            }
            if !result.text.is_empty() {
                result.text.push('\n');
            }
            result.text.push_str(&entry);
            result.token_count += tokens;
            result
                .message_ids
                .push(message_ids[members.slot(seq).expect("walked members only")].clone());
            file_ids.extend(ids);
            Ok(true)
        })?;
        result.file_ids = file_ids.ids;
        Ok(result)
    }

    /// Level-3 summary: a truncation notice, then the newest messages that fit
    /// `target_tokens`, then a footer with the file ids of every input message (kept
    /// even when that footer alone exceeds the target).
    pub fn truncate_summary(
        &mut self,
        message_ids: &[String],
        target_tokens: i64,
    ) -> Result<TextResult> {
        let (session_id, members) = self.named_messages(message_ids)?;
        let file_ids = self.members_file_ids(&session_id, &members)?;
        let counter = self.counter(&session_id)?;
        let total = message_ids.len();
        // Short, since in a small window it is most of the summary: the header the
        // summary renders with already says it can be expanded.
        let notice_for = |cut: usize| {
            format!(
                "[deterministic truncation: the {cut} oldest of {total} messages were cut; all stay stored]"
            )
        };
        let footer = crate::parts::merge_reference_footer("", &file_ids);
        let reserve = counter.count(&notice_for(total)) as i64 + counter.count(&footer) as i64 + 2;
        // Newest first, until the next would not fit.
        let mut kept: Vec<String> = Vec::new();
        let mut used = reserve;
        self.walk_messages(&session_id, &members, true, |seq, parts, _| {
            let entry = transcript_entry(
                seq,
                members.role(seq).as_str(),
                parts,
                Some(TRUNCATION_ENTRY_CHARS),
            );
            let tokens = counter.count(&entry) as i64 + 1;
            if used + tokens > target_tokens {
                return Ok(false);
            }
            used += tokens;
            kept.push(entry);
            Ok(true)
        })?;
        loop {
            let mut body = notice_for(total - kept.len());
            for entry in kept.iter().rev() {
                body.push('\n');
                body.push_str(entry);
            }
            let text = crate::parts::merge_reference_footer(&body, &file_ids);
            let token_count = counter.count(&text) as i64;
            // Counts of joined pieces can differ from their sum by a token or two:
            // drop the oldest kept message until the whole fits.
            if token_count <= target_tokens || kept.is_empty() {
                return Ok(TextResult {
                    token_count,
                    text,
                    message_ids: message_ids.to_vec(),
                    file_ids,
                });
            }
            kept.pop();
        }
    }

    /// The summaries currently in a session's view, in view order.
    pub fn live_summaries(&mut self, session_id: &str) -> Result<Vec<SummaryRow>> {
        let ids: Vec<String> = self
            .fresh_view(session_id)?
            .items
            .iter()
            .filter(|item| item.kind == ItemKind::Summary)
            .map(|item| item.id.clone())
            .collect();
        ids.iter().map(|id| self.summary(id)).collect()
    }

    /// One summary by id.
    pub fn summary(&self, summary_id: &str) -> Result<SummaryRow> {
        self.conn
            .prepare_cached(&format!(
                "SELECT {SUMMARY_COLUMNS} FROM summaries WHERE id = ?1"
            ))?
            .query_opt(args![summary_id], row_to_summary)?
            .ok_or_else(|| Error::NotFound {
                kind: "summary",
                id: summary_id.to_string(),
            })
    }

    /// Every file id that ever entered the session: in parts or summaries (a
    /// fork's include those of the history it shares).
    pub fn session_file_ids(&mut self, session_id: &str) -> Result<Vec<String>> {
        self.session(session_id)?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT file_ids FROM parts
             WHERE session_id = ?1 AND msg_seq <= ?2 AND file_ids IS NOT NULL
             UNION ALL SELECT file_ids FROM summaries
             WHERE session_id = ?1 AND span_end_seq <= ?2 AND file_ids IS NOT NULL",
        )?;
        let mut ids = IdList::default();
        for segment in &self.lineage(session_id)?.segments {
            let mut rows = stmt.query(args![segment.session_id, segment.last_seq])?;
            while let Some(ref row) = rows.next()? {
                ids.extend(split_ids(row.get::<Option<&str>>(0)?));
            }
        }
        Ok(ids.ids)
    }
}
