//! Finding what compaction moved out of the view: grep and the summary DAG.

use std::collections::{HashMap, HashSet};

use regex::RegexBuilder;
use rusqlite::{params, OptionalExtension};

use super::compaction::SummaryRow;
use super::Store;
use crate::error::{Error, Result};

/// How [`Store::grep`] matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrepMode {
    /// Full-text words, ranked by bm25.
    Text,
    /// A regular expression over the stored text, newest first.
    Regex,
}

impl GrepMode {
    pub fn parse(value: &str) -> Result<Self> {
        match value {
            "text" => Ok(GrepMode::Text),
            "regex" => Ok(GrepMode::Regex),
            other => Err(Error::invalid(
                "mode",
                format!("expected 'text' or 'regex', got {other:?}"),
            )),
        }
    }
}

/// One search hit.
#[derive(Clone, Debug)]
pub struct GrepHit {
    pub session_id: String,
    /// `message` or `summary`.
    pub owner_kind: &'static str,
    pub owner_id: String,
    pub part_id: Option<String>,
    pub snippet: String,
    pub rank: f64,
    /// The live summary whose span now holds the hit, if it left the raw view.
    pub covering_summary_id: Option<String>,
}

/// One node of a session's summary DAG.
#[derive(Clone, Debug)]
pub struct DagNode {
    pub summary: SummaryRow,
    pub live: bool,
    pub source_kind: String,
    pub sources: Vec<String>,
}

/// Counts over the whole database.
#[derive(Clone, Debug, Default)]
pub struct StoreStats {
    pub sessions: i64,
    pub messages: i64,
    pub parts: i64,
    pub summaries: i64,
    pub live_summaries: i64,
    pub compactions: i64,
    pub tokens_stored: i64,
    pub tokens_in_view: i64,
    pub tombstones: i64,
    pub events: i64,
}

const SNIPPET_CHARS: usize = 160;
/// Matches of one full-text query that bm25 ranks at most: the newest ones.
const RANKED_CANDIDATES: i64 = 2_000;

impl Store {
    /// Searches every stored part and summary (of one session, or all).
    pub fn grep(
        &mut self,
        query: &str,
        session_id: Option<&str>,
        mode: GrepMode,
        limit: usize,
    ) -> Result<Vec<GrepHit>> {
        if let Some(id) = session_id {
            self.session(id)?;
        }
        let limit = limit.clamp(1, 10_000);
        if !self.read_only {
            // A read-only store cannot move the backlog: it searches what was indexed.
            self.flush_search_index()?;
        }
        let mut hits = match mode {
            GrepMode::Text => self.grep_text(query, session_id, limit)?,
            GrepMode::Regex => self.grep_regex(query, session_id, limit)?,
        };
        if self.read_only {
            self.merge_pending(&mut hits, query, session_id, mode, limit)?;
        }
        self.attach_covering_summaries(&mut hits)?;
        Ok(hits)
    }

    fn grep_text(
        &self,
        query: &str,
        session_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<GrepHit>> {
        let match_expr = fts_query(query)?;
        // Rank first, without snippets: SQLite computes every selected column of every
        // match before sorting, and a snippet costs far more than a bm25 score. A word
        // found in more than RANKED_CANDIDATES parts is ranked among its newest ones,
        // so one common word cannot make a search cost the whole store.
        let ranked: Vec<(i64, f64)> = self
            .conn
            .prepare_cached(
                "SELECT rowid, bm25(fts) FROM fts
                 WHERE fts MATCH ?1 AND (?2 IS NULL OR session_id = ?2)
                   AND rowid >= COALESCE((SELECT min(rowid) FROM (
                       SELECT rowid FROM fts WHERE fts MATCH ?1 AND (?2 IS NULL OR session_id = ?2)
                       ORDER BY rowid DESC LIMIT ?4)), 0)
                 ORDER BY bm25(fts) LIMIT ?3",
            )?
            .query_map(
                params![match_expr, session_id, limit as i64, RANKED_CANDIDATES],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )?
            .collect::<rusqlite::Result<_>>()?;
        let mut detail = self.conn.prepare_cached(
            "SELECT session_id, owner_id, part_id, snippet(fts, 0, '[', ']', ' ... ', 24)
             FROM fts WHERE fts MATCH ?1 AND rowid = ?2",
        )?;
        let mut hits = Vec::with_capacity(ranked.len());
        for (rowid, rank) in ranked {
            let hit = detail.query_row(params![match_expr, rowid], |row| {
                hit_from_row(row, row.get(3)?, rank)
            })?;
            hits.push(hit);
        }
        Ok(hits)
    }

    fn grep_regex(
        &self,
        pattern: &str,
        session_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<GrepHit>> {
        let regex = RegexBuilder::new(pattern)
            .size_limit(1 << 22)
            .build()
            .map_err(|err| Error::invalid("query", format!("invalid regular expression: {err}")))?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT session_id, owner_id, part_id, body FROM fts WHERE (?1 IS NULL OR session_id = ?1)
             ORDER BY rowid DESC",
        )?;
        let mut rows = stmt.query(params![session_id])?;
        let mut hits = Vec::new();
        while let Some(row) = rows.next()? {
            let body = row.get_ref(3)?.as_str()?;
            let Some(found) = regex.find(body) else {
                continue;
            };
            let snippet = snippet_around(body, found.start(), found.end());
            hits.push(hit_from_row(row, snippet, 0.0)?);
            if hits.len() >= limit {
                break;
            }
        }
        Ok(hits)
    }

    /// For each hit outside the view, the live summary that covers it now.
    fn attach_covering_summaries(&self, hits: &mut [GrepHit]) -> Result<()> {
        let mut memo: HashMap<String, Option<String>> = HashMap::new();
        for hit in hits.iter_mut() {
            if let Some(known) = memo.get(&hit.owner_id) {
                hit.covering_summary_id.clone_from(known);
                continue;
            }
            let covering = self.covering_summary(&hit.owner_id)?;
            memo.insert(hit.owner_id.clone(), covering.clone());
            hit.covering_summary_id = covering;
        }
        Ok(())
    }

    /// The summary now in the view above a message or summary: the leaf summary
    /// whose edges name the message, then `superseded_by` up to a live summary.
    fn covering_summary(&self, id: &str) -> Result<Option<String>> {
        let mut current = if id.starts_with("sum_") {
            id.to_string()
        } else {
            match self.leaf_summary_of(id)? {
                Some(leaf) => leaf,
                None => return Ok(None),
            }
        };
        let mut parent = self
            .conn
            .prepare_cached("SELECT superseded_by FROM summaries WHERE id = ?1")?;
        let mut seen = HashSet::new();
        while seen.insert(current.clone()) {
            let next: Option<String> = parent
                .query_row([&current], |row| row.get(0))
                .optional()?
                .flatten();
            match next {
                Some(next) => current = next,
                None => break,
            }
        }
        Ok((current != id).then_some(current))
    }

    /// The leaf summary that covers a message, if one does: among the session's
    /// leaf summaries whose seq span holds the message, the one with an edge to it.
    fn leaf_summary_of(&self, message_id: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT s.id FROM messages m JOIN summaries s
                   ON s.session_id = m.session_id AND s.kind = 'leaf'
                  AND m.seq BETWEEN s.span_start_seq AND s.span_end_seq
                 WHERE m.id = ?1 AND EXISTS (
                     SELECT 1 FROM summary_sources e WHERE e.summary_id = s.id AND e.source_id = ?1)
                 LIMIT 1",
            )?
            .query_row([message_id], |row| row.get(0))
            .optional()?)
    }

    /// The session's summary DAG (or one summary's subtree), newest first.
    pub fn describe(
        &mut self,
        session_id: Option<&str>,
        summary_id: Option<&str>,
    ) -> Result<Vec<DagNode>> {
        let roots: Vec<SummaryRow> = match (session_id, summary_id) {
            (_, Some(id)) => vec![self.summary(id)?],
            (Some(session), None) => {
                self.session(session)?;
                let mut stmt = self.conn.prepare_cached(
                    "SELECT id FROM summaries WHERE session_id = ?1 ORDER BY created_at DESC, id DESC",
                )?;
                let ids = stmt
                    .query_map([session], |row| row.get::<_, String>(0))?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                drop(stmt);
                return ids.iter().map(|id| self.dag_node(id)).collect();
            }
            (None, None) => {
                return Err(Error::invalid(
                    "session_or_summary",
                    "name a session or a summary",
                ))
            }
        };
        let mut nodes = Vec::new();
        let mut queue: Vec<String> = roots.into_iter().map(|row| row.id).collect();
        while let Some(id) = queue.pop() {
            let node = self.dag_node(&id)?;
            if node.source_kind == "summary" {
                queue.extend(node.sources.iter().cloned());
            }
            nodes.push(node);
        }
        Ok(nodes)
    }

    fn dag_node(&self, summary_id: &str) -> Result<DagNode> {
        let summary = self.summary(summary_id)?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT source_kind, source_id FROM summary_sources WHERE summary_id = ?1 ORDER BY ord",
        )?;
        let mut source_kind = String::from("message");
        let mut sources = Vec::new();
        let mut rows = stmt.query([summary_id])?;
        while let Some(row) = rows.next()? {
            source_kind = row.get(0)?;
            sources.push(row.get(1)?);
        }
        Ok(DagNode {
            live: summary.superseded_by.is_none(),
            summary,
            source_kind,
            sources,
        })
    }

    /// Counts over the whole database.
    pub fn stats(&self) -> Result<StoreStats> {
        let count =
            |sql: &str| -> Result<i64> { Ok(self.conn.query_row(sql, [], |row| row.get(0))?) };
        Ok(StoreStats {
            sessions: count("SELECT count(*) FROM sessions")?,
            messages: count("SELECT count(*) FROM messages")?,
            parts: count("SELECT count(*) FROM parts")?,
            summaries: count("SELECT count(*) FROM summaries")?,
            live_summaries: count("SELECT count(*) FROM summaries WHERE superseded_by IS NULL")?,
            compactions: count("SELECT count(*) FROM events WHERE name = 'compaction_completed'")?,
            tokens_stored: count("SELECT COALESCE(SUM(token_count), 0) FROM messages")?,
            tokens_in_view: count("SELECT COALESCE(SUM(token_count), 0) FROM context_items")?,
            tombstones: count("SELECT count(*) FROM parts WHERE compacted_at IS NOT NULL")?,
            events: count("SELECT count(*) FROM events")?,
        })
    }
}

/// A hit from an `fts` row whose first three columns are session, owner and part ids.
fn hit_from_row(row: &rusqlite::Row<'_>, snippet: String, rank: f64) -> rusqlite::Result<GrepHit> {
    let owner_id: String = row.get(1)?;
    let part_id: String = row.get(2)?;
    Ok(GrepHit {
        session_id: row.get(0)?,
        owner_kind: if owner_id.starts_with("sum_") {
            "summary"
        } else {
            "message"
        },
        owner_id,
        part_id: (!part_id.is_empty()).then_some(part_id),
        snippet,
        rank,
        covering_summary_id: None,
    })
}

/// Turns a user's words into an FTS5 query: each word quoted, all required.
pub(super) fn fts_query(query: &str) -> Result<String> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|word| !word.is_empty())
        .map(|word| format!("\"{word}\""))
        .collect();
    if words.is_empty() {
        return Err(Error::invalid(
            "query",
            "has no words to search for (only punctuation or spaces)",
        ));
    }
    Ok(words.join(" AND "))
}

pub(super) fn snippet_around(body: &str, start: usize, end: usize) -> String {
    let from = floor_boundary(body, start.saturating_sub(SNIPPET_CHARS / 2));
    let to = floor_boundary(body, (end + SNIPPET_CHARS / 2).min(body.len()));
    let mut snippet = String::new();
    if from > 0 {
        snippet.push_str("... ");
    }
    snippet.push_str(&body[from..start]);
    snippet.push('[');
    snippet.push_str(&body[start..end]);
    snippet.push(']');
    snippet.push_str(&body[end..to.max(end)]);
    if to < body.len() {
        snippet.push_str(" ...");
    }
    snippet.replace('\n', " ")
}

fn floor_boundary(text: &str, mut index: usize) -> usize {
    while index > 0 && !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}
