//! Full-text grep on PostgreSQL: the query as a `tsquery` of the store's own terms
//! (see `pg::fts`) over the index's `tsvector`s under their GIN index, ranked by
//! `ts_rank_cd`. Snippets are cut here around the first word of the query found.

use super::backend::args;
use super::grep::{snippet_around, GrepHit};
use super::Store;
use crate::error::Result;
use crate::query::{self, Terms};

impl Store {
    /// The best `limit` index rows for `text`, best first. A hit's rank is minus
    /// `ts_rank_cd`, so that lower is better on both backends, as bm25 is.
    pub(super) fn grep_text_postgres(
        &self,
        text: &str,
        session_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<GrepHit>> {
        let terms = self.search_terms()?;
        let parsed = query::parse(text, &terms)?;
        let languages = match &terms {
            Terms::Stemmed(languages) => languages.clone(),
            Terms::Verbatim => Vec::new(),
        };
        let literal = crate::pg::fts::query_literal(&parsed, &languages);
        if literal.is_empty() {
            return Ok(Vec::new());
        }
        let words: Vec<String> = parsed
            .required
            .iter()
            .flatten()
            .chain(&parsed.optional)
            .map(|word| word.to_lowercase())
            .collect();
        self.conn.query_map(
            "SELECT session_id, owner_id, part_id, body,
                    CAST(ts_rank_cd(terms, q) AS DOUBLE PRECISION) AS rank
             FROM search_index, CAST(CAST(?1 AS TEXT) AS tsquery) AS q
             WHERE terms @@ q AND (CAST(?2 AS TEXT) IS NULL OR session_id = ?2)
             ORDER BY rank DESC, fts_rowid DESC LIMIT ?3",
            args![literal, session_id, limit as i64],
            |row| {
                let body: &str = row.get(3)?;
                let rank: f64 = row.get(4)?;
                Ok(GrepHit::new(
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    snippet_of(body, &words),
                    -rank,
                ))
            },
        )
    }
}

/// A snippet around the earliest of `words` in `body` (compared lowercased), or
/// the start of `body` when none is there as written (a stem matched).
fn snippet_of(body: &str, words: &[String]) -> String {
    let lowered = body.to_lowercase();
    let found = words
        .iter()
        .filter_map(|word| lowered.find(word.as_str()).map(|at| (at, word.len())))
        .min()
        // Lowercasing can change byte lengths: a position is used only where it
        // is a boundary of the text as stored.
        .filter(|(at, len)| body.is_char_boundary(*at) && body.is_char_boundary(at + len));
    match found {
        Some((at, len)) => snippet_around(body, at, at + len),
        None => snippet_around(body, 0, 0),
    }
}
