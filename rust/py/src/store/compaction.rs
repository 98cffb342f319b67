//! Compaction: prunes, spans, transcripts, summaries and whole rounds.

use lossless_core::plan::Tail;
use lossless_core::store::{self as core_store};
use pyo3::prelude::*;

use crate::compaction::{
    CommitResult, ExtractiveCommitResult, PruneResult, RoundResult, SummaryRow, Text, TextResult,
};
use crate::convert;
use crate::round::RoundRules;
use crate::span::{MessageIds, Span};

use super::Store;

#[pymethods]
impl Store {
    #[pyo3(signature = (
        session_id, protect_tokens, minimum_tokens, protected_tools,
        protect_user_turns = 2, tail_tokens = None, tail_messages = None,
    ))]
    #[expect(
        clippy::too_many_arguments,
        reason = "mirrors the keyword arguments of the Python call"
    )]
    fn prune(
        &self,
        py: Python<'_>,
        session_id: &str,
        protect_tokens: i64,
        minimum_tokens: i64,
        protected_tools: Vec<String>,
        protect_user_turns: usize,
        tail_tokens: Option<i64>,
        tail_messages: Option<usize>,
    ) -> PyResult<PruneResult> {
        let tail = tail_rule(protect_user_turns, tail_tokens, tail_messages);
        let result = self.with(py, |store| {
            store.prune(
                session_id,
                protect_tokens,
                minimum_tokens,
                &protected_tools,
                tail,
            )
        })?;
        Ok(PruneResult::from(result))
    }

    #[pyo3(signature = (session_id, protect_user_turns = 2, tail_tokens = None, tail_messages = None))]
    fn compaction_span(
        &self,
        py: Python<'_>,
        session_id: &str,
        protect_user_turns: usize,
        tail_tokens: Option<i64>,
        tail_messages: Option<usize>,
    ) -> PyResult<Span> {
        let tail = tail_rule(protect_user_turns, tail_tokens, tail_messages);
        let inner = self.with(py, |store| store.compaction_span(session_id, tail))?;
        Ok(Span { inner })
    }

    #[pyo3(signature = (message_ids, max_chars_per_message = None, max_tokens = None))]
    fn transcript<'py>(
        &self,
        py: Python<'py>,
        message_ids: MessageIds<'py>,
        max_chars_per_message: Option<usize>,
        max_tokens: Option<i64>,
    ) -> PyResult<Text> {
        let ids = message_ids.ids();
        let result = self.with(py, |store| {
            store.transcript(ids, max_chars_per_message, max_tokens)
        })?;
        Ok(Text::of(result, &message_ids))
    }

    fn truncate_summary<'py>(
        &self,
        py: Python<'py>,
        message_ids: MessageIds<'py>,
        target_tokens: i64,
    ) -> PyResult<Text> {
        let ids = message_ids.ids();
        let result = self.with(py, |store| store.truncate_summary(ids, target_tokens))?;
        Ok(Text::of(result, &message_ids))
    }

    fn extractive_summary<'py>(
        &self,
        py: Python<'py>,
        message_ids: MessageIds<'py>,
        max_tokens: i64,
    ) -> PyResult<Text> {
        let ids = message_ids.ids();
        let result = self.with(py, |store| store.extractive_summary(ids, max_tokens))?;
        Ok(Text::of(result, &message_ids))
    }

    fn live_summaries(&self, py: Python<'_>, session_id: &str) -> PyResult<Vec<SummaryRow>> {
        let rows = self.with(py, |store| store.live_summaries(session_id))?;
        Ok(rows.into_iter().map(SummaryRow::from).collect())
    }

    fn condense_merge(
        &self,
        py: Python<'_>,
        summary_ids: Vec<String>,
        max_tokens: i64,
    ) -> PyResult<TextResult> {
        let result = self.with(py, |store| store.condense_merge(&summary_ids, max_tokens))?;
        Ok(TextResult::from(result))
    }

    fn condense_truncate(
        &self,
        py: Python<'_>,
        summary_ids: Vec<String>,
        max_tokens: i64,
    ) -> PyResult<TextResult> {
        let result = self.with(py, |store| {
            store.condense_truncate(&summary_ids, max_tokens)
        })?;
        Ok(TextResult::from(result))
    }

    #[pyo3(signature = (session_id, text, level, source_message_ids, source_summary_ids, expected_view_version = None))]
    #[expect(
        clippy::too_many_arguments,
        reason = "mirrors the keyword arguments of the Python method"
    )]
    fn commit_summary<'py>(
        &self,
        py: Python<'py>,
        session_id: &str,
        text: &Bound<'py, PyAny>,
        level: i64,
        source_message_ids: MessageIds<'py>,
        source_summary_ids: Vec<String>,
        expected_view_version: Option<i64>,
    ) -> PyResult<CommitResult> {
        let text = convert::text(text, "text")?;
        let message_ids = source_message_ids.ids();
        let result = self.with(py, |store| {
            store.commit_summary(
                session_id,
                &text,
                level,
                message_ids,
                &source_summary_ids,
                expected_view_version,
            )
        })?;
        Ok(CommitResult::from(result))
    }

    fn commit_extractive_summary(
        &self,
        py: Python<'_>,
        span: Bound<'_, Span>,
        max_tokens: i64,
    ) -> PyResult<ExtractiveCommitResult> {
        let inner = &span.get().inner;
        let result = self.with(py, |store| {
            store.commit_extractive_summary(inner, max_tokens)
        })?;
        ExtractiveCommitResult::convert(py, result, inner.message_ids.len())
    }

    /// One compaction round's store work (see the core's `Store::compaction_round`).
    fn compaction_round(
        &self,
        py: Python<'_>,
        session_id: &str,
        rules: Bound<'_, RoundRules>,
        before: i64,
        model_summary: bool,
    ) -> PyResult<RoundResult> {
        let rules = &rules.get().inner;
        let writer = if model_summary {
            core_store::LeafWriter::Model
        } else {
            core_store::LeafWriter::BuiltIn
        };
        let outcome = self.with(py, |store| {
            store.compaction_round(session_id, rules, before, writer)
        })?;
        RoundResult::convert(py, outcome)
    }

    fn session_file_ids(
        &self,
        py: Python<'_>,
        session_id: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<String>> {
        let session_id = convert::text(session_id, "session_id")?;
        self.with(py, |store| store.session_file_ids(&session_id))
    }
}

/// The protected tail a round leaves alone; an absent bound is no bound.
fn tail_rule(user_turns: usize, tokens: Option<i64>, messages: Option<usize>) -> Tail {
    Tail {
        user_turns,
        max_tokens: tokens.unwrap_or(i64::MAX),
        max_messages: messages.unwrap_or(usize::MAX),
    }
}
