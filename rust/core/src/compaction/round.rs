//! One compaction round's store work in one call: the prune, the span, and the
//! deterministic levels. The rules it follows are in [`crate::plan`]; this file only
//! sequences the store's reads and writes, each write its own transaction.

use crate::compaction::commit::CommitResult;
use crate::compaction::prune::PruneResult;
use crate::compaction::span::SpanInfo;
use crate::error::Result;
use crate::plan::RoundRules;
use crate::store::Store;

/// Who writes a round's leaf summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeafWriter {
    /// The built-in extractive summary, then deterministic truncation: the round
    /// completes in the call.
    BuiltIn,
    /// A model: the round returns the span and its target for the caller's call.
    Model,
}

/// What [`Store::compaction_round`] did.
#[derive(Clone, Debug, Default)]
pub struct RoundOutcome {
    pub pruned: PruneResult,
    /// The span a model is to summarise within `target` tokens; set only for
    /// [`LeafWriter::Model`] when there is a span.
    pub span: Option<SpanInfo>,
    /// The span's summary budget (0 when no span was read).
    pub target: i64,
    /// Messages in the span the round read (0 when it ended at the prune).
    pub span_messages: usize,
    /// The leaf summaries the round committed, oldest first, each with its level and
    /// the messages it covers: one per run of at most `leaf_chunk_tokens` of span.
    pub committed: Vec<(CommitResult, i64, usize)>,
    /// Why the deterministic levels committed nothing, level by level.
    pub attempts: Vec<String>,
    /// The view's size read after the round's last write, when the round's store
    /// work is finished (every case but a span handed to a model).
    pub view_after: Option<i64>,
}

impl RoundOutcome {
    /// Tokens the round took out of the view.
    #[must_use]
    pub fn saved(&self) -> i64 {
        let summaries: i64 = self
            .committed
            .iter()
            .map(|(commit, _, _)| commit.tokens_before - commit.tokens_after)
            .sum();
        self.pruned.tokens_saved + summaries
    }
}

/// The runs of `span` that leaf summaries cover (at most `leaf_chunk_tokens` of
/// messages each), oldest first, each with its summary budget (see
/// [`RoundRules::run_targets`]).
#[must_use]
pub fn leaf_runs(rules: &RoundRules, span: &SpanInfo) -> Vec<(SpanInfo, i64)> {
    let runs = span.chunks(rules.leaf_chunk_tokens);
    let tokens: Vec<i64> = runs.iter().map(|run| run.tokens).collect();
    let targets = rules.run_targets(&tokens, span.view_tokens, span.summary_tokens);
    runs.into_iter().zip(targets).collect()
}

impl Store {
    /// A compaction round up to its first model call, for a view of `before`
    /// tokens: prune stale tool output (ending the round when it writes), read the
    /// span before the protected tail, and
    /// summarise it: with [`LeafWriter::BuiltIn`] by the extractive summary,
    /// else by truncation (level 3), committed when it shrinks the view; with
    /// [`LeafWriter::Model`] the span and its target are returned instead.
    ///
    /// Condensation is not part of a round's first steps: it runs while the view
    /// stays above the goal, with the caller's summariser.
    pub fn compaction_round(
        &mut self,
        session_id: &str,
        rules: &RoundRules,
        before: i64,
        writer: LeafWriter,
    ) -> Result<RoundOutcome> {
        let mut outcome = RoundOutcome {
            pruned: self.prune(
                session_id,
                rules.prune_protect(),
                rules.prune_minimum(before),
                &rules.protected_tools,
                rules.tail,
            )?,
            ..RoundOutcome::default()
        };
        // A prune that wrote is the round's one change, forced or not: a summary
        // committed after it would change the request's prefix a second time, and
        // the prune only writes when it saves what the round must (decision 113).
        if outcome.pruned.pruned_parts > 0 {
            outcome.view_after = Some(self.view_stats(session_id)?.tokens);
            return Ok(outcome);
        }
        let mut span = self.compaction_span(session_id, rules.tail)?;
        let covered = rules.covered_messages(&span.message_tokens, span.view_tokens);
        if covered < span.message_ids.len() {
            span = span.head(covered);
        }
        outcome.span_messages = span.message_ids.len();
        if span.message_ids.is_empty() {
            outcome.view_after = Some(self.view_stats(session_id)?.tokens);
            return Ok(outcome);
        }
        outcome.target = rules.leaf_target(span.tokens, span.view_tokens, span.summary_tokens);
        if writer == LeafWriter::Model {
            outcome.span = Some(span);
            return Ok(outcome);
        }
        self.deterministic_leaf(&span, rules, &mut outcome)?;
        outcome.view_after = Some(self.view_stats(session_id)?.tokens);
        Ok(outcome)
    }

    /// The built-in summary of each run of `span` (at most `leaf_chunk_tokens` of
    /// messages), within the run's own budget (see [`leaf_runs`]), else its truncation,
    /// committed when it fits and shrinks the view: one leaf per run.
    fn deterministic_leaf(
        &mut self,
        span: &SpanInfo,
        rules: &RoundRules,
        outcome: &mut RoundOutcome,
    ) -> Result<()> {
        for (run, target) in leaf_runs(rules, span) {
            self.deterministic_run(&run, target, outcome)?;
        }
        Ok(())
    }

    fn deterministic_run(
        &mut self,
        run: &SpanInfo,
        target: i64,
        outcome: &mut RoundOutcome,
    ) -> Result<()> {
        let messages = run.message_ids.len();
        let extractive = self.commit_extractive_summary(run, target)?;
        if let Some(commit) = extractive.committed {
            outcome.committed.push((commit, 1, messages));
            return Ok(());
        }
        outcome.attempts.push(format!(
            "extractive: {} tokens for a {}-token span",
            extractive.token_count, run.tokens
        ));
        let truncated = self.truncate_summary(&run.message_ids, target)?;
        if RoundRules::shrinks(truncated.token_count, run.tokens) {
            let commit = self.commit_summary(
                &run.session_id,
                &truncated.text,
                3,
                &run.message_ids,
                &[],
                None,
            )?;
            outcome.committed.push((commit, 3, messages));
        } else {
            outcome.attempts.push(format!(
                "level 3: {} tokens would not shrink {} tokens of messages; not committed",
                truncated.token_count, run.tokens
            ));
        }
        Ok(())
    }
}
