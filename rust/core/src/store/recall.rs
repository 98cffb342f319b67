//! Finding what compaction moved out of the view: grep, the summary DAG, expand.

use std::collections::{HashMap, HashSet};

use regex::RegexBuilder;
use rusqlite::{params, OptionalExtension};

use super::compaction::SummaryRow;
use super::Store;
use crate::error::{Error, Result};
use crate::query;
use crate::render::{transcript_entry, StoredPart, MESSAGE_OVERHEAD};

/// How [`Store::grep`] matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrepMode {
    /// Full-text words, ranked by bm25 (see [`crate::query`] for the syntax).
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

/// Words whose counts a store keeps at most, a few hundred KB.
const WORD_COUNTS_KEPT: usize = 10_000;

/// How many index rows searched words matched, while the index held about `rows`
/// rows: what decides which words are too common to search for (see
/// [`query::Query::without_common`]) without reading their matches on every search.
#[derive(Debug, Default)]
pub(super) struct WordCounts {
    rows: i64,
    counts: HashMap<String, i64>,
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
    /// For a message hit, the leaf summary whose sources name the message (live or
    /// condensed since), if one does.
    pub leaf_summary_id: Option<String>,
}

/// One node of a session's summary DAG.
#[derive(Clone, Debug)]
pub struct DagNode {
    pub summary: SummaryRow,
    pub live: bool,
    pub source_kind: String,
    pub sources: Vec<String>,
}

/// A summary expanded back into its source messages.
#[derive(Clone, Debug, Default)]
pub struct Expansion {
    pub summary_id: String,
    pub messages: Vec<ExpandedMessage>,
    pub tokens: i64,
    pub total_messages: i64,
    pub omitted_messages: i64,
    pub note: String,
}

/// One source message in an [`Expansion`].
#[derive(Clone, Debug)]
pub struct ExpandedMessage {
    pub id: String,
    pub seq: i64,
    pub role: String,
    pub text: String,
    pub tokens: i64,
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
        self.flush_search_index()?;
        let mut hits = match mode {
            GrepMode::Text => self.grep_text(query, session_id, limit)?,
            GrepMode::Regex => self.grep_regex(query, session_id, limit)?,
        };
        self.attach_covering_summaries(&mut hits)?;
        Ok(hits)
    }

    fn grep_text(
        &mut self,
        query: &str,
        session_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<GrepHit>> {
        let parsed = query::parse(query)?;
        let (matches, rows) = self.word_matches(&parsed.optional)?;
        let lean = parsed.without_common(&matches, rows);
        let rare: Vec<bool> = parsed
            .optional
            .iter()
            .zip(&matches)
            .filter(|(word, _)| lean.optional.contains(word))
            .map(|(_, count)| *count <= query::RARE_MATCHES)
            .collect();
        let parsed = lean;
        let match_expr = parsed.to_fts();
        let candidates = query::candidates(&parsed);
        // Parts and summaries are ranked apart (rowids above and below zero), so the
        // page can cap summaries; bm25 reads the same index-wide statistics for both,
        // so their scores compare.
        let mut parts = self.rank(&match_expr, session_id, limit, candidates, true)?;
        if let Some(rare_expr) = parsed.rare_fts(&rare) {
            let all = query::RARE_MATCHES as usize;
            let old = self.rank(&rare_expr, session_id, limit, all, true)?;
            parts = query::union_ranked(&parts, &old);
            parts.truncate(limit);
        }
        let summaries = self.rank(&match_expr, session_id, limit, candidates, false)?;
        let ranked = query::merge_ranked(&parts, &summaries, limit);
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

    /// How many index rows each word matches, from the counts kept since the index
    /// was last this size (within a quarter), counting the others.
    fn word_matches(&mut self, words: &[String]) -> Result<(Vec<i64>, i64)> {
        let rows: i64 = self
            .conn
            .prepare_cached(
                "SELECT COALESCE((SELECT max(pk) FROM parts), 0)
                      + COALESCE((SELECT max(pk) FROM summaries), 0)",
            )?
            .query_row([], |row| row.get(0))?;
        let stale = self.word_counts.rows * 5 < rows * 4 || self.word_counts.rows > rows;
        if stale || self.word_counts.counts.len() > WORD_COUNTS_KEPT {
            self.word_counts = WordCounts {
                rows,
                counts: HashMap::new(),
            };
        }
        let mut count = self
            .conn
            .prepare_cached("SELECT count(*) FROM fts WHERE fts MATCH ?1")?;
        let mut matches = Vec::with_capacity(words.len());
        for word in words {
            if let Some(known) = self.word_counts.counts.get(word) {
                matches.push(*known);
                continue;
            }
            let found: i64 = count.query_row([format!("\"{word}\"")], |row| row.get(0))?;
            self.word_counts.counts.insert(word.clone(), found);
            matches.push(found);
        }
        Ok((matches, rows))
    }

    /// The best `limit` index rows of parts (or of summaries) by bm25, without
    /// snippets: SQLite computes every selected column of every match before
    /// sorting, and a snippet costs far more than a score. A query matching more
    /// than `candidates` rows is ranked among its newest ones, so common words
    /// cannot make a search cost the whole store.
    fn rank(
        &self,
        match_expr: &str,
        session_id: Option<&str>,
        limit: usize,
        candidates: usize,
        parts: bool,
    ) -> Result<Vec<(i64, f64)>> {
        // A summary's index rowid is minus its rowid: its newest rows are the lowest.
        // One bound on rowid only: given a second (`rowid > 0`), SQLite hands FTS5 the
        // constant one and reads the session of every match (20x slower at 100,000).
        let sql = if parts {
            "SELECT rowid, bm25(fts) FROM fts
             WHERE fts MATCH ?1 AND (?2 IS NULL OR session_id = ?2)
               AND rowid >= max(1, COALESCE((SELECT min(rowid) FROM (
                   SELECT rowid FROM fts WHERE fts MATCH ?1 AND rowid > 0
                     AND (?2 IS NULL OR session_id = ?2)
                   ORDER BY rowid DESC LIMIT ?4)), 1))
             ORDER BY bm25(fts) LIMIT ?3"
        } else {
            "SELECT rowid, bm25(fts) FROM fts
             WHERE fts MATCH ?1 AND (?2 IS NULL OR session_id = ?2)
               AND rowid <= min(-1, COALESCE((SELECT max(rowid) FROM (
                   SELECT rowid FROM fts WHERE fts MATCH ?1 AND rowid < 0
                     AND (?2 IS NULL OR session_id = ?2)
                   ORDER BY rowid ASC LIMIT ?4)), -1))
             ORDER BY bm25(fts) LIMIT ?3"
        };
        Ok(self
            .conn
            .prepare_cached(sql)?
            .query_map(
                params![match_expr, session_id, limit as i64, candidates as i64],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )?
            .collect::<rusqlite::Result<_>>()?)
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

    /// For each hit outside the view, the leaf summary that holds it and the live
    /// summary that covers it now.
    fn attach_covering_summaries(&self, hits: &mut [GrepHit]) -> Result<()> {
        type Found = (Option<String>, Option<String>);
        let mut memo: HashMap<String, Found> = HashMap::new();
        for hit in hits.iter_mut() {
            if !memo.contains_key(&hit.owner_id) {
                let leaf = if hit.owner_kind == "summary" {
                    None
                } else {
                    self.leaf_summary_of(&hit.owner_id)?
                };
                let start = leaf.as_deref().unwrap_or(&hit.owner_id);
                let covering = self.live_summary_above(start)?;
                let covering = covering.or_else(|| leaf.clone());
                memo.insert(hit.owner_id.clone(), (leaf, covering));
            }
            let (leaf, covering) = &memo[&hit.owner_id];
            hit.leaf_summary_id.clone_from(leaf);
            hit.covering_summary_id.clone_from(covering);
        }
        Ok(())
    }

    /// The live summary above a summary: `superseded_by` up to one that is not
    /// superseded; `None` for a message or a summary that is live itself.
    fn live_summary_above(&self, id: &str) -> Result<Option<String>> {
        if !id.starts_with("sum_") {
            return Ok(None);
        }
        let mut current = id.to_string();
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

    /// The source messages of a summary (through condensed summaries, oldest
    /// first), as many as fit `max_tokens`, with a note of what was left out.
    pub fn expand(&mut self, summary_id: &str, max_tokens: i64) -> Result<Expansion> {
        self.summary(summary_id)?;
        let message_ids = self.leaf_messages(summary_id)?;
        let mut expansion = Expansion {
            summary_id: summary_id.to_string(),
            total_messages: message_ids.len() as i64,
            ..Expansion::default()
        };
        for id in &message_ids {
            let record = self.get_message(id)?;
            // Expanding restores what pruning took out of the view: originals, not markers.
            let originals: Vec<StoredPart> = record
                .parts
                .into_iter()
                .map(|part| StoredPart {
                    tombstone: None,
                    ..part
                })
                .collect();
            let text = transcript_entry(record.seq, &record.role, &originals, None);
            // The counts stored at write time, as everywhere else: expanding never
            // re-tokenises what it shows.
            let tokens = self.stored_tokens(id)?;
            if expansion.tokens + tokens > max_tokens {
                break;
            }
            expansion.tokens += tokens;
            expansion.messages.push(ExpandedMessage {
                id: record.id,
                seq: record.seq,
                role: record.role,
                text,
                tokens,
            });
        }
        expansion.omitted_messages = expansion.total_messages - expansion.messages.len() as i64;
        expansion.note = if expansion.omitted_messages == 0 {
            format!("all {} source messages shown", expansion.total_messages)
        } else {
            let next = &message_ids[expansion.messages.len()];
            format!(
                "{} of {} source messages shown within {max_tokens} tokens; {} left out, starting at {next}",
                expansion.messages.len(),
                expansion.total_messages,
                expansion.omitted_messages
            )
        };
        Ok(expansion)
    }

    /// Message ids under a summary, oldest first, walking condensed summaries down.
    fn leaf_messages(&self, summary_id: &str) -> Result<Vec<String>> {
        // One query per summary reads its source messages with their sequence
        // numbers, instead of one lookup per message.
        let mut children = self.conn.prepare_cached(
            "SELECT s.source_kind, s.source_id, COALESCE(m.seq, 0) FROM summary_sources s
             LEFT JOIN messages m ON s.source_kind = 'message' AND m.id = s.source_id
             WHERE s.summary_id = ?1 ORDER BY s.ord",
        )?;
        let mut messages: Vec<(i64, String)> = Vec::new();
        let mut stack = vec![summary_id.to_string()];
        let mut seen = HashSet::new();
        while let Some(id) = stack.pop() {
            if !seen.insert(id.clone()) {
                continue;
            }
            let mut rows = children.query([&id])?;
            while let Some(row) = rows.next()? {
                let source: String = row.get(1)?;
                if row.get_ref(0)?.as_str()? == "summary" {
                    stack.push(source);
                } else {
                    messages.push((row.get(2)?, source));
                }
            }
        }
        messages.sort_unstable();
        Ok(messages.into_iter().map(|(_, id)| id).collect())
    }

    /// A message's tokens as written: its parts with their full outputs, plus framing.
    fn stored_tokens(&self, message_id: &str) -> Result<i64> {
        let parts: i64 = self
            .conn
            .prepare_cached(
                "SELECT COALESCE(SUM(p.token_count), 0) FROM messages m JOIN parts p
                   ON p.session_id = m.session_id AND p.msg_seq = m.seq WHERE m.id = ?1",
            )?
            .query_row([message_id], |row| row.get(0))?;
        Ok(parts + MESSAGE_OVERHEAD as i64)
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
        leaf_summary_id: None,
    })
}

fn snippet_around(body: &str, start: usize, end: usize) -> String {
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
