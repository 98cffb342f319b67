//! What a read-only store finds in rows still waiting for the full-text index.
//!
//! Writers queue new text in `search_backlog` and move it into the index in
//! batches (see `search.rs`); a search by a writer moves the queue first. A
//! read-only store cannot, so it reads the queued rows (fewer than
//! `BACKLOG_LIMIT`) itself and matches them as the index would: every word of
//! the query, in any case, or the regex. They are the newest rows and have no
//! bm25 score, so they come after the ranked hits.

use regex::Regex;
use rusqlite::params;

use super::recall::{GrepHit, GrepMode};
use super::Store;
use crate::error::Result;

/// The text a queued row will be indexed with: the same expressions as the
/// backlog's move into `fts` (`search::move_backlog`), which this must follow.
const QUEUED_TEXT: &str = "
    SELECT CASE p.kind
               WHEN 'tool' THEN p.tool_name || ' ' || p.body
                   || COALESCE(char(10) || o.output, '')
                   || COALESCE(char(10) || p.tool_error, '')
               WHEN 'file_ref' THEN concat_ws(' ', p.body ->> '$.file_id',
                   p.body ->> '$.path', p.body ->> '$.summary')
               ELSE p.body END,
           p.session_id, p.message_id, p.id
    FROM search_backlog b JOIN parts p ON p.pk = b.fts_rowid
    LEFT JOIN tool_outputs o ON o.part_pk = p.pk
    WHERE b.fts_rowid > 0 AND (?1 IS NULL OR p.session_id = ?1)
    UNION ALL
    SELECT s.text, s.session_id, s.id, ''
    FROM search_backlog b JOIN summaries s ON s.pk = -b.fts_rowid
    WHERE b.fts_rowid < 0 AND (?1 IS NULL OR s.session_id = ?1)";

impl Store {
    /// Hits among the rows waiting for the index, newest first (text mode: rows
    /// holding every word of `query`).
    pub(super) fn grep_pending(
        &self,
        query: &str,
        session_id: Option<&str>,
        mode: GrepMode,
        limit: usize,
    ) -> Result<Vec<GrepHit>> {
        let matcher = match mode {
            GrepMode::Regex => Regex::new(query).ok(),
            GrepMode::Text => words_regex(query),
        };
        let Some(matcher) = matcher else {
            return Ok(Vec::new());
        };
        let mut stmt = self.conn.prepare_cached(QUEUED_TEXT)?;
        let mut rows = stmt.query(params![session_id])?;
        let mut hits = Vec::new();
        while let Some(row) = rows.next()? {
            let body: String = row.get(0)?;
            let Some(found) = matcher.find(&body) else {
                continue;
            };
            if mode == GrepMode::Text && !has_every_word(query, &body) {
                continue;
            }
            let owner_id: String = row.get(2)?;
            let part_id: String = row.get(3)?;
            hits.push(GrepHit {
                session_id: row.get(1)?,
                owner_kind: if owner_id.starts_with("sum_") {
                    "summary"
                } else {
                    "message"
                },
                owner_id,
                part_id: (!part_id.is_empty()).then_some(part_id),
                snippet: super::recall::snippet_around(&body, found.start(), found.end()),
                rank: 0.0,
                covering_summary_id: None,
            });
        }
        hits.reverse();
        hits.truncate(limit);
        Ok(hits)
    }
}

fn query_words(query: &str) -> Vec<String> {
    query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// A case-insensitive regex finding any word of `query` as a whole word.
fn words_regex(query: &str) -> Option<Regex> {
    let words = query_words(query);
    if words.is_empty() {
        return None;
    }
    let alternatives: Vec<String> = words.iter().map(|word| regex::escape(word)).collect();
    Regex::new(&format!(r"(?i)\b(?:{})\b", alternatives.join("|"))).ok()
}

/// Whether `body` holds every word of `query` as a whole word, in any case.
fn has_every_word(query: &str, body: &str) -> bool {
    let found: std::collections::HashSet<String> = query_words(body).into_iter().collect();
    query_words(query).iter().all(|word| found.contains(word))
}
