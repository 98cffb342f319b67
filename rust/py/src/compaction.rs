//! Results of the compaction methods of `Store`: prunes, texts, summaries, commits
//! and rounds.

use lossless_core::store::{self as core_store};
use pyo3::prelude::*;
use pyo3::types::{PyString, PyStringMethods};

use crate::results::{result_class, Shared, SharedList};
use crate::span::{MessageIds, Span};

result_class! {
    eq;
    /// What a prune pass did: the tool outputs it could tombstone, those it did,
    /// and the tokens the view shrank by.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct PruneResult {
        candidates: i64,
        pruned_parts: i64,
        tokens_saved: i64,
    }
}

impl From<core_store::PruneResult> for PruneResult {
    fn from(result: core_store::PruneResult) -> Self {
        Self {
            candidates: result.candidates,
            pruned_parts: result.pruned_parts,
            tokens_saved: result.tokens_saved,
        }
    }
}

result_class! {
    eq;
    /// A text written from messages named by a list of ids (or from summaries),
    /// with the ids of the messages it covers.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct TextResult {
        text: String,
        token_count: i64,
        message_count: usize,
        file_ids: Vec<String>,
        message_ids: Vec<String>,
    }
}

impl From<core_store::TextResult> for TextResult {
    fn from(result: core_store::TextResult) -> Self {
        Self {
            text: result.text,
            token_count: result.token_count,
            message_count: result.message_ids.len(),
            file_ids: result.file_ids,
            message_ids: result.message_ids,
        }
    }
}

result_class! {
    eq;
    /// A text written from a span: without the ids of the messages it covers, which
    /// its caller takes as `span.head(message_count)`.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct SpanTextResult {
        text: String,
        token_count: i64,
        message_count: usize,
        file_ids: Vec<String>,
    }
}

impl From<core_store::TextResult> for SpanTextResult {
    fn from(result: core_store::TextResult) -> Self {
        Self {
            text: result.text,
            token_count: result.token_count,
            message_count: result.message_ids.len(),
            file_ids: result.file_ids,
        }
    }
}

/// A text result, of the class its argument decides: messages named by a list
/// give a `TextResult`, a span a `SpanTextResult`.
#[derive(IntoPyObject)]
pub enum Text {
    Listed(TextResult),
    Spanned(SpanTextResult),
}

impl Text {
    pub fn of(result: core_store::TextResult, messages: &MessageIds<'_>) -> Self {
        if messages.is_list() {
            Self::Listed(result.into())
        } else {
            Self::Spanned(result.into())
        }
    }
}

// Whether a text result names its messages depends on the argument it was given,
// so its callers ask with `in`, as they asked the dict it replaced.
#[pymethods]
impl TextResult {
    #[allow(clippy::unused_self)] // A method, as the `in` operator calls it.
    fn __contains__(&self, key: &Bound<'_, PyAny>) -> bool {
        has_key(Self::KEYS, key)
    }
}

#[pymethods]
impl SpanTextResult {
    #[allow(clippy::unused_self)] // A method, as the `in` operator calls it.
    fn __contains__(&self, key: &Bound<'_, PyAny>) -> bool {
        has_key(Self::KEYS, key)
    }
}

/// Whether `key` is a `str` among `keys`.
fn has_key(keys: &[&str], key: &Bound<'_, PyAny>) -> bool {
    key.cast::<PyString>()
        .ok()
        .and_then(|key| key.to_str().ok().map(|key| keys.contains(&key)))
        .unwrap_or(false)
}

result_class! {
    eq;
    /// A summary still in its session's view, as `Store.live_summaries` lists it.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct SummaryRow {
        id: String,
        session_id: String,
        kind: String,
        level: i64,
        text: String,
        token_count: i64,
        span_start_seq: i64,
        span_end_seq: i64,
        message_count: i64,
        depth: i64,
        file_ids: Vec<String>,
        created_at: i64,
        superseded_by: Option<String>,
    }
}

impl From<core_store::SummaryRow> for SummaryRow {
    fn from(row: core_store::SummaryRow) -> Self {
        Self {
            id: row.id,
            session_id: row.session_id,
            kind: row.kind,
            level: row.level,
            text: row.text,
            token_count: row.token_count,
            span_start_seq: row.span_start_seq,
            span_end_seq: row.span_end_seq,
            message_count: row.message_count,
            depth: row.depth,
            file_ids: row.file_ids,
            created_at: row.created_at,
            superseded_by: row.superseded_by,
        }
    }
}

result_class! {
    eq;
    /// A committed summary: its id and size, the view's size before and after, the
    /// messages it covers and the file ids of its footer.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct CommitResult {
        summary_id: String,
        token_count: i64,
        tokens_before: i64,
        tokens_after: i64,
        messages_covered: i64,
        file_ids: Vec<String>,
    }
}

impl From<core_store::CommitResult> for CommitResult {
    fn from(result: core_store::CommitResult) -> Self {
        Self {
            summary_id: result.summary_id,
            token_count: result.token_count,
            tokens_before: result.tokens_before,
            tokens_after: result.tokens_after,
            messages_covered: result.messages_covered,
            file_ids: result.file_ids,
        }
    }
}

result_class! {
    eq;
    /// A span's built-in summary and its commit; `committed` is `None` when the
    /// summary did not fit its budget or would not shrink the view.
    #[derive(Debug, PartialEq)]
    pub struct ExtractiveCommitResult {
        text: String,
        token_count: i64,
        message_count: usize,
        file_ids: Vec<String>,
        committed: Option<Shared<CommitResult>>,
    }
}

impl ExtractiveCommitResult {
    /// `result`, the commit of the `message_count` messages of a span.
    pub fn convert(
        py: Python<'_>,
        result: core_store::SpanCommit,
        message_count: usize,
    ) -> PyResult<Self> {
        let committed = result
            .committed
            .map(|commit| Shared::new(py, CommitResult::from(commit)))
            .transpose()?;
        Ok(Self {
            text: result.text,
            token_count: result.token_count,
            message_count,
            file_ids: result.file_ids,
            committed,
        })
    }
}

result_class! {
    eq;
    /// A leaf summary a round committed: the commit, with its level and the messages
    /// it covers.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct RoundCommit {
        summary_id: String,
        token_count: i64,
        tokens_before: i64,
        tokens_after: i64,
        messages_covered: i64,
        file_ids: Vec<String>,
        level: i64,
        messages: usize,
    }
}

impl From<(core_store::CommitResult, i64, usize)> for RoundCommit {
    fn from((commit, level, messages): (core_store::CommitResult, i64, usize)) -> Self {
        Self {
            summary_id: commit.summary_id,
            token_count: commit.token_count,
            tokens_before: commit.tokens_before,
            tokens_after: commit.tokens_after,
            messages_covered: commit.messages_covered,
            file_ids: commit.file_ids,
            level,
            messages,
        }
    }
}

// Not `eq`: a span compares by identity, so two rounds never would by their fields.
result_class! {
    /// A round's store work up to its first model call (see the core's
    /// `Store::compaction_round`): the prune, the span left for a model, the
    /// summaries committed and the tokens saved.
    #[derive(Debug)]
    pub struct RoundResult {
        pruned: Shared<PruneResult>,
        span: Option<Shared<Span>>,
        target: i64,
        span_messages: usize,
        committed: SharedList,
        attempts: Vec<String>,
        view_after: Option<i64>,
        saved: i64,
    }
}

impl RoundResult {
    pub fn convert(py: Python<'_>, outcome: core_store::RoundOutcome) -> PyResult<Self> {
        let saved = outcome.saved();
        let span = outcome
            .span
            .map(|inner| Shared::new(py, Span { inner }))
            .transpose()?;
        Ok(Self {
            pruned: Shared::new(py, PruneResult::from(outcome.pruned))?,
            span,
            target: outcome.target,
            span_messages: outcome.span_messages,
            committed: SharedList::of(py, outcome.committed.into_iter().map(RoundCommit::from))?,
            attempts: outcome.attempts,
            view_after: outcome.view_after,
            saved,
        })
    }
}
