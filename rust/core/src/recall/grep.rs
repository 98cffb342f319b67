//! `grep`: full-text (bm25) and regex search over every stored part and summary,
//! and the summaries that hold each hit.

use std::collections::{HashMap, HashSet};

use crate::db::backend::{args, Row};
use regex::RegexBuilder;

use crate::error::{Error, Result};
use crate::lineage::Lineage;
use crate::query;
use crate::store::Store;

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
pub(crate) struct WordCounts {
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
        if limit == 0 {
            return Err(Error::invalid("limit", "must be at least 1"));
        }
        if let Some(id) = session_id {
            self.session(id)?;
        }
        let limit = limit.min(10_000);
        self.index_backlog_before_search()?;
        if let Some(id) = session_id {
            let lineage = self.lineage(id)?;
            if lineage.is_fork() {
                return self.grep_lineage(query, &lineage, mode, limit);
            }
        }
        self.grep_sessions(query, session_id, mode, limit)
    }

    /// Searches a fork's history: each session of its lineage for the part of it the
    /// fork shares (a parent's later messages are not the fork's), best first.
    fn grep_lineage(
        &mut self,
        query: &str,
        lineage: &Lineage,
        mode: GrepMode,
        limit: usize,
    ) -> Result<Vec<GrepHit>> {
        let mut hits = Vec::new();
        for segment in lineage.segments.iter().rev() {
            // A parent's hits past the fork point are dropped: ask for all it has.
            let wanted = if segment.last_seq == i64::MAX {
                limit
            } else {
                10_000
            };
            let found = self.grep_sessions(query, Some(&segment.session_id), mode, wanted)?;
            for hit in found {
                if segment.last_seq == i64::MAX || self.hit_before(&hit, segment.last_seq)? {
                    hits.push(hit);
                }
            }
        }
        hits.sort_by(|a, b| a.rank.total_cmp(&b.rank));
        hits.truncate(limit);
        Ok(hits)
    }

    /// Whether `hit` lies at or before message `last` of its session (a summary:
    /// its whole span).
    fn hit_before(&self, hit: &GrepHit, last: i64) -> Result<bool> {
        let span: Option<(i64, i64)> = if hit.owner_kind == "message" {
            self.conn
                .prepare_cached("SELECT seq, seq FROM messages WHERE id = ?1")?
                .query_opt(args![hit.owner_id], |row| Ok((row.get(0)?, row.get(1)?)))?
        } else {
            self.conn
                .prepare_cached("SELECT span_start_seq, span_end_seq FROM summaries WHERE id = ?1")?
                .query_opt(args![hit.owner_id], |row| Ok((row.get(0)?, row.get(1)?)))?
        };
        Ok(span.is_some_and(|(_, end)| end <= last))
    }

    /// Searches the sessions' own parts and summaries (of one session, or all).
    fn grep_sessions(
        &mut self,
        query: &str,
        session_id: Option<&str>,
        mode: GrepMode,
        limit: usize,
    ) -> Result<Vec<GrepHit>> {
        let mut hits = match mode {
            GrepMode::Text if self.conn.is_postgres() => {
                self.grep_text_postgres(query, session_id, limit)?
            }
            GrepMode::Text => self.grep_text(query, session_id, limit)?,
            GrepMode::Regex => self.grep_regex(query, session_id, limit)?,
        };
        if self.read_only && !self.conn.is_postgres() {
            self.merge_pending(&mut hits, query, session_id, mode, limit)?;
        }
        self.attach_covering_summaries(&mut hits)?;
        Ok(hits)
    }

    /// Moves the search backlog into the index before a search reads it. A
    /// read-only store on SQLite cannot: it searches what was indexed, and ranks
    /// the queued rows apart (see `pending.rs`). A reader on PostgreSQL moves it as
    /// a writer would (the index is the store's bookkeeping, not what it stores);
    /// on a replica, which refuses the write, it searches what the primary indexed.
    pub(crate) fn index_backlog_before_search(&mut self) -> Result<()> {
        if !self.read_only {
            self.flush_search_index()?;
        } else if self.conn.is_postgres() {
            match self.flush_search_index() {
                Ok(_) | Err(Error::Postgres(_)) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }

    fn grep_text(
        &mut self,
        query: &str,
        session_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<GrepHit>> {
        let terms = self.search_terms()?;
        let parsed = query::parse(query, &terms)?;
        let (matches, rows) = self.word_matches(&parsed.optional, &terms)?;
        let lean = parsed.without_common(&matches, rows);
        let rare: Vec<bool> = parsed
            .optional
            .iter()
            .zip(&matches)
            .filter(|(word, _)| lean.optional.contains(word))
            .map(|(_, count)| *count <= query::RARE_MATCHES)
            .collect();
        // The rare words decide how much of a question a row holds: a common word is
        // in nearly every ranked row, and reading its matches costs the most.
        let (rare_words, weights): (Vec<String>, Vec<f64>) = parsed
            .optional
            .iter()
            .zip(&matches)
            .filter(|(word, count)| lean.optional.contains(word) && **count <= query::RARE_MATCHES)
            .map(|(word, count)| (word.clone(), query::idf(*count, rows)))
            .unzip();
        let parsed = lean;
        let match_expr = parsed.to_fts(&terms);
        let candidates = query::candidates(&parsed);
        // Parts and summaries are ranked apart (rowids above and below zero), so the
        // page can cap summaries; bm25 reads the same index-wide statistics for both,
        // so their scores compare.
        let pool = limit.max(query::COVERAGE_POOL);
        let mut parts = self.rank(&match_expr, session_id, pool, candidates, true)?;
        if let Some(rare_expr) = parsed.rare_fts(&rare, &terms) {
            let all = query::RARE_MATCHES as usize;
            let old = self.rank(&rare_expr, session_id, pool, all, true)?;
            parts = query::union_ranked(&parts, &old);
        }
        if parsed.optional.len() > 1 && !rare_words.is_empty() {
            let holders = self.rows_matching(&rare_words, &terms)?;
            parts = query::by_coverage(&parts, &holders, &weights);
        }
        parts.truncate(limit);
        let summaries = self.rank(&match_expr, session_id, limit, candidates, false)?;
        let ranked = query::merge_ranked(&parts, &summaries, limit);
        let mut detail = self.conn.prepare_cached(
            "SELECT session_id, owner_id, part_id, snippet(fts, 0, '[', ']', ' ... ', 24)
             FROM fts WHERE fts MATCH ?1 AND rowid = ?2",
        )?;
        let mut hits = Vec::with_capacity(ranked.len());
        for (rowid, rank) in ranked {
            let hit = detail.query_row(args![match_expr, rowid], |row| {
                hit_from_row(row, row.get(3)?, rank)
            })?;
            hits.push(hit);
        }
        Ok(hits)
    }

    /// For each word, the index rows it matches (words of at most
    /// [`query::RARE_MATCHES`] rows: reading them is cheap).
    pub(crate) fn rows_matching(
        &self,
        words: &[String],
        terms: &query::Terms,
    ) -> Result<Vec<HashSet<i64>>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT rowid FROM fts WHERE fts MATCH ?1")?;
        words
            .iter()
            .map(|word| {
                Ok(stmt
                    .query_map(args![terms.word(word)], |row| row.get::<i64>(0))?
                    .into_iter()
                    .collect::<HashSet<i64>>())
            })
            .collect()
    }

    /// How many index rows each word matches, from the counts kept since the index
    /// was last this size (within a quarter), counting the others.
    pub(crate) fn word_matches(
        &mut self,
        words: &[String],
        terms: &query::Terms,
    ) -> Result<(Vec<i64>, i64)> {
        let rows: i64 = self
            .conn
            .prepare_cached(
                "SELECT COALESCE((SELECT max(pk) FROM parts), 0)
                      + COALESCE((SELECT max(pk) FROM summaries), 0)",
            )?
            .query_row(args![], |row| row.get(0))?;
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
            // Keyed on the word's expression: the languages it is stemmed in may grow.
            let expr = terms.word(word);
            if let Some(known) = self.word_counts.counts.get(&expr) {
                matches.push(*known);
                continue;
            }
            let found: i64 = count.query_row(args![&expr], |row| row.get(0))?;
            self.word_counts.counts.insert(expr, found);
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
                args![match_expr, session_id, limit as i64, candidates as i64],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )?
            .into_iter()
            .collect::<_>())
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
        let mut stmt = self.conn.prepare_cached(self.conn.dialect(
            "SELECT session_id, owner_id, part_id, body FROM fts WHERE (?1 IS NULL OR session_id = ?1)
             ORDER BY rowid DESC",
            "SELECT session_id, owner_id, part_id, body FROM search_index
             WHERE (CAST(?1 AS TEXT) IS NULL OR session_id = ?1)
             ORDER BY fts_rowid DESC",
        ))?;
        let mut rows = stmt.query(args![session_id])?;
        let mut hits = Vec::new();
        while let Some(ref row) = rows.next()? {
            let body = row.get::<&str>(3)?;
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
                .query_opt(args![&current], |row| row.get(0))?
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
        self.conn
            .prepare_cached(
                "SELECT s.id FROM messages m JOIN summaries s
                   ON s.session_id = m.session_id AND s.kind = 'leaf'
                  AND m.seq BETWEEN s.span_start_seq AND s.span_end_seq
                 WHERE m.id = ?1 AND EXISTS (
                     SELECT 1 FROM summary_sources e WHERE e.summary_id = s.id AND e.source_id = ?1)
                 LIMIT 1",
            )?
            .query_opt(args![message_id], |row| row.get(0))
    }
}

/// A hit from an `fts` row whose first three columns are session, owner and part ids.
fn hit_from_row(row: &Row<'_>, snippet: String, rank: f64) -> Result<GrepHit> {
    Ok(GrepHit::new(
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        snippet,
        rank,
    ))
}

impl GrepHit {
    /// A hit on the index row of `owner_id` (a summary, or a message's part
    /// `part_id`; empty for a summary), without the summaries that hold it yet.
    pub(crate) fn new(
        session_id: String,
        owner_id: String,
        part_id: String,
        snippet: String,
        rank: f64,
    ) -> Self {
        GrepHit {
            session_id,
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
        }
    }
}

pub(crate) fn snippet_around(body: &str, start: usize, end: usize) -> String {
    snippet_as_stored(body, start, end).replace('\n', " ")
}

/// [`snippet_around`] with the text's line breaks kept, as the full-text index's
/// own snippets keep them.
fn snippet_as_stored(body: &str, start: usize, end: usize) -> String {
    snippet_marking(body, (start, end), &[(start, end)])
}

/// A snippet of `body` around `anchor` (byte range), each of `marks` inside it
/// bracketed (sorted and apart), line breaks kept.
pub(crate) fn snippet_marking(
    body: &str,
    anchor: (usize, usize),
    marks: &[(usize, usize)],
) -> String {
    let (start, end) = anchor;
    let from = floor_boundary(body, start.saturating_sub(SNIPPET_CHARS / 2));
    let to = floor_boundary(body, (end + SNIPPET_CHARS / 2).min(body.len())).max(end);
    let mut snippet = String::new();
    if from > 0 {
        snippet.push_str("... ");
    }
    let mut at = from;
    for &(mark_start, mark_end) in marks {
        if mark_start < at || mark_end > to {
            continue;
        }
        snippet.push_str(&body[at..mark_start]);
        snippet.push('[');
        snippet.push_str(&body[mark_start..mark_end]);
        snippet.push(']');
        at = mark_end;
    }
    snippet.push_str(&body[at..to]);
    if to < body.len() {
        snippet.push_str(" ...");
    }
    snippet
}

fn floor_boundary(text: &str, mut index: usize) -> usize {
    while index > 0 && !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}
