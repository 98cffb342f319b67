//! Full-text grep on PostgreSQL: the query as a `tsquery` of the store's own terms
//! (see `pg::fts`) over the index's `tsvector`s under their GIN index, ranked by
//! `ts_rank_cd`. Snippets are cut here around the first word of the query found.

use std::collections::HashSet;

use crate::db::backend::args;
use crate::error::Result;
use crate::query::{self, Terms};
use crate::recall::grep::{snippet_marking, GrepHit};
use crate::store::Store;

impl Store {
    /// The best `limit` index rows for `text`, best first. A hit's rank is minus
    /// `ts_rank_cd`, so that lower is better on both backends, as bm25 is.
    pub(crate) fn grep_text_postgres(
        &self,
        text: &str,
        session_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<GrepHit>> {
        let terms = self.search_terms()?;
        let parsed = query::parse(text, &terms)?;
        let languages = languages_of(&terms);
        // As on SQLite (see `grep_text`): a word in most of the store is dropped
        // while rarer ones are left, every match of a rare word joins the pool, and
        // the pool is ordered by how much of the question's weight each row holds.
        let (matches, rows) = self.word_matches_postgres(&parsed.optional, &languages)?;
        let lean = parsed.without_common(&matches, rows);
        let (rare, rare_words, weights) = rare_words(&parsed, &lean, &matches, rows);
        let literal = crate::pg::fts::query_literal(&lean, &languages);
        if literal.is_empty() {
            return Ok(Vec::new());
        }
        let required: Vec<String> = lean
            .required
            .iter()
            .flatten()
            .map(|w| w.to_lowercase())
            .collect();
        let optional: Vec<String> = lean.optional.iter().map(|w| w.to_lowercase()).collect();
        let pool = limit.max(query::COVERAGE_POOL);
        let mut parts = self.rank_postgres(&literal, session_id, pool, true)?;
        if let Some(rare_query) = lean.rare_only(&rare) {
            let rare_literal = crate::pg::fts::query_literal(&rare_query, &languages);
            let old = self.rank_postgres(&rare_literal, session_id, pool, true)?;
            parts = query::union_ranked(&parts, &old);
        }
        if lean.optional.len() > 1 && !rare_words.is_empty() {
            let holders = self.rows_matching_postgres(&rare_words, &languages)?;
            parts = query::by_coverage(&parts, &holders, &weights);
        }
        parts.truncate(limit);
        // Parts and summaries are ranked apart (index rowids above and below zero),
        // so that the page caps summaries as it does on SQLite.
        let summaries = self.rank_postgres(&literal, session_id, limit, false)?;
        let mut detail = self.conn.prepare_cached(
            "SELECT session_id, owner_id, part_id, body FROM search_index WHERE fts_rowid = ?1",
        )?;
        let mut hits = Vec::new();
        for (rowid, rank) in query::merge_ranked(&parts, &summaries, limit) {
            let hit = detail.query_row(args![rowid], |row| {
                let body: &str = row.get(3)?;
                Ok(GrepHit::new(
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    snippet_of(body, &required, &optional),
                    rank,
                ))
            })?;
            hits.push(hit);
        }
        Ok(hits)
    }

    /// How many index rows each of `words` matches, and how many rows there are.
    fn word_matches_postgres(
        &self,
        words: &[String],
        languages: &[crate::lang::Language],
    ) -> Result<(Vec<i64>, i64)> {
        let rows: i64 = self.conn.query_row(
            "SELECT COALESCE((SELECT max(pk) FROM parts), 0)
                  + COALESCE((SELECT max(pk) FROM summaries), 0)",
            args![],
            |row| row.get(0),
        )?;
        let mut count = self.conn.prepare_cached(
            "SELECT count(*) FROM search_index WHERE terms @@ CAST(CAST(?1 AS TEXT) AS tsquery)",
        )?;
        let matches = words
            .iter()
            .map(|word| {
                let literal = crate::pg::fts::word_literal(word, languages);
                count.query_row(args![literal], |row| row.get::<i64>(0))
            })
            .collect::<Result<Vec<i64>>>()?;
        Ok((matches, rows))
    }

    /// For each of `words`, the index rows it matches.
    fn rows_matching_postgres(
        &self,
        words: &[String],
        languages: &[crate::lang::Language],
    ) -> Result<Vec<HashSet<i64>>> {
        words
            .iter()
            .map(|word| {
                let rows = self.conn.query_map(
                    "SELECT fts_rowid FROM search_index
                     WHERE terms @@ CAST(CAST(?1 AS TEXT) AS tsquery)",
                    args![crate::pg::fts::word_literal(word, languages)],
                    |row| row.get::<i64>(0),
                )?;
                Ok(rows.into_iter().collect())
            })
            .collect()
    }

    /// The best `limit` parts (or summaries) matching the `tsquery` `literal`, best
    /// first, each with minus its `ts_rank_cd`.
    fn rank_postgres(
        &self,
        literal: &str,
        session_id: Option<&str>,
        limit: usize,
        parts: bool,
    ) -> Result<Vec<(i64, f64)>> {
        let sql = if parts {
            "SELECT fts_rowid, CAST(ts_rank_cd(terms, q) AS DOUBLE PRECISION) AS rank
             FROM search_index, CAST(CAST(?1 AS TEXT) AS tsquery) AS q
             WHERE terms @@ q AND (CAST(?2 AS TEXT) IS NULL OR session_id = ?2) AND fts_rowid > 0
             ORDER BY rank DESC, fts_rowid DESC LIMIT ?3"
        } else {
            "SELECT fts_rowid, CAST(ts_rank_cd(terms, q) AS DOUBLE PRECISION) AS rank
             FROM search_index, CAST(CAST(?1 AS TEXT) AS tsquery) AS q
             WHERE terms @@ q AND (CAST(?2 AS TEXT) IS NULL OR session_id = ?2) AND fts_rowid < 0
             ORDER BY rank DESC, fts_rowid ASC LIMIT ?3"
        };
        self.conn
            .query_map(sql, args![literal, session_id, limit as i64], |row| {
                Ok((row.get(0)?, -row.get::<f64>(1)?))
            })
    }

    /// For each of `words`, the newest index rows at or below `below` it matches, at
    /// most [`query::RARE_MATCHES`] (see `memory_recall.rs`).
    pub(crate) fn newest_rows_matching_postgres(
        &self,
        words: &[String],
        below: i64,
        terms: &Terms,
    ) -> Result<Vec<Vec<i64>>> {
        let languages = languages_of(terms);
        words
            .iter()
            .map(|word| {
                self.conn.query_map(
                    "SELECT fts_rowid FROM search_index
                     WHERE terms @@ CAST(CAST(?1 AS TEXT) AS tsquery)
                       AND fts_rowid BETWEEN 1 AND ?3
                     ORDER BY fts_rowid DESC LIMIT ?2",
                    args![
                        crate::pg::fts::word_literal(word, &languages),
                        query::RARE_MATCHES,
                        below
                    ],
                    |row| row.get::<i64>(0),
                )
            })
            .collect()
    }

    /// The messages of `session_id` in `span` (sequence numbers) whose parts best
    /// match `words` as grep reads a query, best first, at most `limit`, each with
    /// minus its `ts_rank_cd` (lower is better, as bm25 is on SQLite).
    pub(crate) fn best_matches_postgres(
        &self,
        words: &str,
        session_id: &str,
        span: (i64, i64),
        limit: i64,
    ) -> Result<Vec<(String, f64)>> {
        let terms = self.search_terms()?;
        let parsed = query::parse(words, &terms)?;
        let literal = crate::pg::fts::query_literal(&parsed, &languages_of(&terms));
        if literal.is_empty() {
            return Ok(Vec::new());
        }
        self.conn.query_map(
            "SELECT m.id, CAST(ts_rank_cd(s.terms, q) AS DOUBLE PRECISION) AS rank
             FROM search_index s JOIN messages m ON m.id = s.owner_id,
                  CAST(CAST(?1 AS TEXT) AS tsquery) AS q
             WHERE s.terms @@ q AND s.session_id = ?2 AND m.seq BETWEEN ?3 AND ?4
             ORDER BY rank DESC, s.fts_rowid DESC LIMIT ?5",
            args![literal, session_id, span.0, span.1, limit],
            |row| Ok((row.get(0)?, -row.get::<f64>(1)?)),
        )
    }
}

/// Which of `lean`'s optional words are rare, the rare ones, and their weights
/// (bm25's idf), as `grep_text` reads them on SQLite.
fn rare_words(
    parsed: &query::Query,
    lean: &query::Query,
    matches: &[i64],
    rows: i64,
) -> (Vec<bool>, Vec<String>, Vec<f64>) {
    let kept: Vec<(&String, i64)> = parsed
        .optional
        .iter()
        .zip(matches.iter().copied())
        .filter(|(word, _)| lean.optional.contains(word))
        .collect();
    let rare = kept
        .iter()
        .map(|(_, count)| *count <= query::RARE_MATCHES)
        .collect();
    let (words, weights) = kept
        .iter()
        .filter(|(_, count)| *count <= query::RARE_MATCHES)
        .map(|(word, count)| ((*word).clone(), query::idf(*count, rows)))
        .unzip();
    (rare, words, weights)
}

/// The languages a query's words are stemmed in (none: verbatim).
fn languages_of(terms: &Terms) -> Vec<crate::lang::Language> {
    match terms {
        Terms::Stemmed(languages) => languages.clone(),
        Terms::Verbatim => Vec::new(),
    }
}

/// A snippet around the earliest of the `required` words in `body` (any of the
/// query's words without one), every word of the query in it bracketed, as the
/// snippets of SQLite's full-text index mark them; the start of `body` when no
/// word is there as written (a stem matched). Line breaks stay, as there too.
fn snippet_of(body: &str, required: &[String], optional: &[String]) -> String {
    let lowered = body.to_lowercase();
    let found = |words: &[String]| -> Vec<(usize, usize)> {
        let mut marks: Vec<(usize, usize)> = words
            .iter()
            .filter(|word| !word.is_empty())
            .flat_map(|word| {
                lowered
                    .match_indices(word.as_str())
                    .map(|(at, _)| (at, at + word.len()))
            })
            // Lowercasing can change byte lengths: a position is used only where
            // it is a boundary of the text as stored.
            .filter(|(at, end)| {
                *end <= body.len() && body.is_char_boundary(*at) && body.is_char_boundary(*end)
            })
            .collect();
        marks.sort_unstable();
        marks
    };
    let anchors = found(required);
    let mut marks = found(&[required, optional].concat());
    marks.dedup_by(|later, earlier| later.0 < earlier.1);
    match anchors.first().or(marks.first()) {
        Some(&anchor) => snippet_marking(body, anchor, &marks),
        None => snippet_marking(body, (0, 0), &[(0, 0)]),
    }
}
