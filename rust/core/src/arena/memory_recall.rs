//! Internal recall: what a session once held that is no longer in its view (messages
//! under a summary, tombstoned tool output), found for the newest user message. A
//! reply that never joined the view (cut off while it streamed) is not recalled, nor
//! is anything newer than the newest message a summary covers.
//!
//! It reads the full-text index as the writes left it and never indexes at query
//! time: every transaction that takes something out of the view (a summary commit,
//! a prune) moves the search backlog into the index first. Each word's newest 500
//! matches at most are read (all of a rare word's), and a hit is scored by the share
//! of the question's weight (bm25's idf of each word, from what was read) it holds,
//! so a score is in `[0, 1]`, means the same in any session, and depends only on
//! what is stored.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::db::backend::args;

use crate::arena::cut_head_tail;
use crate::error::Result;
use crate::model::{Generation, ItemKind};
use crate::parts::{search_text_sql, Role};
use crate::query;
use crate::store::Store;

/// One recalled part.
#[derive(Clone, Debug, PartialEq)]
pub struct RecallHit {
    pub message_id: String,
    pub part_id: String,
    /// The message's sequence number in its session.
    pub seq: i64,
    /// The part's text, cut to the hit's token budget.
    pub text: String,
    pub tokens: i64,
    /// Share of the question's weight the part holds, in `[0, 1]`.
    pub score: f64,
    /// The part's output was tombstoned (its message may still be in view).
    pub tombstoned: bool,
}

/// The newest user message of a view, as a question, and its out-of-view hits.
#[derive(Clone, Debug, PartialEq)]
pub struct NewestRecall {
    pub message_id: String,
    pub question: String,
    pub hits: Vec<RecallHit>,
    /// New for every recall made: what the binding keeps its Python copy by.
    pub generation: Generation,
    k: usize,
    max_tokens: usize,
}

/// Candidates looked up at most, best first, before giving up on finding `k`
/// out-of-view hits: bounds a query whose matches are all still in view.
const MAX_LOOKUPS: usize = 64;

/// Words of a question read at most.
const MAX_WORDS: usize = 16;

impl Store {
    /// The view's newest user message and its `k` best out-of-view hits (see
    /// [`Store::recall`]); `None` without a user message in view.
    ///
    /// What recall finds changes only when something leaves the view (what it reads
    /// lies at or below the newest part a summary covers), so the answer is kept with
    /// the view until then: a tool run after one instruction recalls once, and its
    /// requests carry the same hits turn after turn.
    pub fn recall_newest(
        &mut self,
        session_id: &str,
        k: usize,
        max_tokens: usize,
    ) -> Result<Option<Arc<NewestRecall>>> {
        let view = self.fresh_view(session_id)?;
        let Some(newest) = view
            .items
            .iter()
            .rev()
            .find(|item| item.kind == ItemKind::Message && item.role == Some(Role::User))
        else {
            return Ok(None);
        };
        if let Some(kept) = &view.recalled {
            if kept.message_id == newest.id && kept.k == k && kept.max_tokens == max_tokens {
                return Ok(Some(Arc::clone(kept)));
            }
        }
        let message_id = newest.id.clone();
        let message = self.get_message(&message_id)?;
        let question: Vec<&str> = message
            .parts
            .iter()
            .filter_map(|part| part.part.said())
            .collect();
        let question = question.join("\n");
        let hits = self.recall(session_id, &question, k, max_tokens)?;
        let recalled = Arc::new(NewestRecall {
            generation: Generation::next(),
            message_id,
            question,
            hits,
            k,
            max_tokens,
        });
        self.fresh_view(session_id)?.recalled = Some(Arc::clone(&recalled));
        Ok(Some(recalled))
    }

    /// For each word, the newest index rows it matches, at most
    /// [`query::RARE_MATCHES`]: all of a rare word's, the newest of a common one's.
    fn newest_rows_matching(
        &self,
        words: &[String],
        below: i64,
        terms: &query::Terms,
    ) -> Result<Vec<Vec<i64>>> {
        if self.conn.is_postgres() {
            return self.newest_rows_matching_postgres(words, below, terms);
        }
        let mut stmt = self.conn.prepare_cached(
            "SELECT rowid FROM fts WHERE fts MATCH ?1 AND rowid BETWEEN 1 AND ?3
             ORDER BY rowid DESC LIMIT ?2",
        )?;
        words
            .iter()
            .map(|word| {
                stmt.query_map(args![terms.word(word), query::RARE_MATCHES, below], |row| {
                    row.get::<i64>(0)
                })
            })
            .collect()
    }

    /// The newest part that a summary of the session covers (its rowid), 0 without
    /// one: what recall reads lies at or below it. Every such row was indexed by the
    /// summary's commit, so what recall reads does not depend on when the rows still
    /// queued for the index (all newer) are moved into it.
    ///
    /// A fork's summaries may cover its parent's messages: the boundary is the newest
    /// such part of any session of its lineage, below the newest seq a summary of
    /// the fork's history covers.
    fn recall_boundary(&self, session_id: &str) -> Result<i64> {
        let lineage = self.lineage(session_id)?;
        let mut covered: Option<i64> = None;
        for segment in &lineage.segments {
            let end: Option<i64> = self
                .conn
                .prepare_cached(
                    "SELECT max(span_end_seq) FROM summaries
                     WHERE session_id = ?1 AND span_end_seq <= ?2",
                )?
                .query_row(args![segment.session_id, segment.last_seq], |row| {
                    row.get(0)
                })?;
            covered = covered.max(end);
        }
        let Some(covered) = covered else {
            return Ok(0);
        };
        let mut boundary = 0;
        for (holder, low, high) in lineage.clip(1, covered) {
            let pk: Option<i64> = self
                .conn
                .prepare_cached(
                    "SELECT pk FROM parts WHERE session_id = ?1 AND msg_seq BETWEEN ?2 AND ?3
                     ORDER BY msg_seq DESC, ord DESC LIMIT 1",
                )?
                .query_opt(args![holder, low, high], |row| row.get(0))?;
            boundary = boundary.max(pk.unwrap_or(0));
        }
        Ok(boundary)
    }

    /// The `k` best parts of `session_id` matching `question` that are out of the
    /// view, best first (ties: newest first), each cut to `max_tokens`. A question
    /// without a searchable word finds nothing.
    pub fn recall(
        &mut self,
        session_id: &str,
        question: &str,
        k: usize,
        max_tokens: usize,
    ) -> Result<Vec<RecallHit>> {
        self.session(session_id)?;
        let words: String = question
            .chars()
            .map(|c| if c.is_alphanumeric() { c } else { ' ' })
            .collect();
        // Stemmed in the languages the file's index holds (what is stored).
        let terms = self.search_terms()?;
        let Ok(parsed) = query::parse(&words, &terms) else {
            return Ok(Vec::new());
        };
        if k == 0 {
            return Ok(Vec::new());
        }
        // Each word's newest matches, at most RARE_MATCHES: all of a rare word's, the
        // newest of a common one's. Its weight is bm25's idf of what was read, so a
        // score depends only on what is stored (not on counts a store kept earlier).
        let words: Vec<String> = parsed.optional.iter().take(MAX_WORDS).cloned().collect();
        let rows = self.recall_boundary(session_id)?;
        let lineage = self.lineage(session_id)?;
        if rows == 0 {
            return Ok(Vec::new());
        }
        let holders = self.newest_rows_matching(&words, rows, &terms)?;
        let weights: Vec<f64> = holders
            .iter()
            .map(|found| query::idf(found.len() as i64, rows))
            .collect();
        let total: f64 = weights.iter().sum();
        if total <= 0.0 {
            return Ok(Vec::new());
        }
        let rare_weights = &weights;
        let mut scores: HashMap<i64, f64> = HashMap::new();
        for (rows, weight) in holders.iter().zip(rare_weights) {
            for rowid in rows.iter().filter(|rowid| **rowid > 0) {
                *scores.entry(*rowid).or_default() += weight;
            }
        }
        let mut ranked: Vec<(i64, f64)> = scores.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
        let in_view: HashSet<String> = self
            .view_items(session_id)?
            .into_iter()
            .map(|item| item.id)
            .collect();
        let count = self.counter(session_id)?;
        let count = |text: &str| count.count(text);
        let mut lookup = self.conn.prepare_cached(&format!(
            "SELECT p.message_id, p.id, p.msg_seq, p.compacted_at IS NOT NULL, {}, p.session_id
             FROM parts p LEFT JOIN tool_outputs o ON o.part_pk = p.pk
             JOIN messages m ON m.id = p.message_id
             WHERE p.pk = ?1 AND m.status = 'complete'",
            search_text_sql(self.conn.is_postgres())
        ))?;
        let mut hits = Vec::new();
        for (rowid, weight) in ranked.into_iter().take(MAX_LOOKUPS) {
            let row = lookup.query_opt(args![rowid], |row| {
                Ok((
                    row.get::<String>(0)?,
                    row.get::<String>(1)?,
                    row.get::<i64>(2)?,
                    row.get::<bool>(3)?,
                    row.get::<String>(4)?,
                    row.get::<String>(5)?,
                ))
            })?;
            let Some((message_id, part_id, seq, tombstoned, text, holder)) = row else {
                continue;
            };
            // The session's own parts, and a fork's parent's up to the fork point.
            if lineage.holder_of(seq) != Some(holder.as_str()) {
                continue;
            }
            if !tombstoned && in_view.contains(&message_id) {
                continue;
            }
            let Some((text, tokens)) = cut_head_tail(&text, max_tokens, &count) else {
                continue;
            };
            hits.push(RecallHit {
                message_id,
                part_id,
                seq,
                text,
                tokens: tokens as i64,
                score: (weight / total).clamp(0.0, 1.0),
                tombstoned,
            });
            if hits.len() == k {
                break;
            }
        }
        Ok(hits)
    }
}
