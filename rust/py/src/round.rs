//! `RoundRules`: the limits of a compaction round, built once per round from the
//! session's budget and configuration; the arithmetic on them is the core's.

use lossless_core::plan::{self, Tail};
use lossless_core::store::leaf_runs;
use pyo3::prelude::*;

use crate::span::Span;

#[pyclass(frozen, module = "lossless._native")]
pub struct RoundRules {
    pub(crate) inner: plan::RoundRules,
}

#[pymethods]
impl RoundRules {
    #[new]
    #[pyo3(signature = (
        soft_limit, *, tail_tokens = None, tail_messages, user_turns,
        prune_protect_tokens, prune_minimum_tokens, protected_tools, summary_max_tokens,
        leaf_chunk_tokens = 20_000, usable = None,
    ))]
    #[expect(
        clippy::too_many_arguments,
        reason = "mirrors the keyword arguments of the Python call"
    )]
    fn new(
        soft_limit: i64,
        tail_tokens: Option<i64>,
        tail_messages: usize,
        user_turns: usize,
        prune_protect_tokens: i64,
        prune_minimum_tokens: i64,
        protected_tools: Vec<String>,
        summary_max_tokens: i64,
        leaf_chunk_tokens: i64,
        usable: Option<i64>,
    ) -> Self {
        let tail = Tail {
            user_turns,
            max_tokens: tail_tokens
                .unwrap_or_else(|| plan::RoundRules::default_tail_tokens(soft_limit)),
            max_messages: tail_messages,
        };
        Self {
            inner: plan::RoundRules {
                soft_limit,
                usable: usable.unwrap_or(i64::MAX),
                tail,
                prune_protect_tokens,
                prune_minimum_tokens,
                protected_tools,
                summary_max_tokens,
                leaf_chunk_tokens,
            },
        }
    }

    #[getter]
    fn soft_limit(&self) -> i64 {
        self.inner.soft_limit
    }

    /// Where the round aims the view.
    #[getter]
    fn goal(&self) -> i64 {
        self.inner.goal()
    }

    /// The most source tokens one leaf summary covers.
    #[getter]
    fn leaf_chunk_tokens(&self) -> i64 {
        self.inner.leaf_chunk_tokens
    }

    #[getter]
    fn tail_tokens(&self) -> i64 {
        self.inner.tail.max_tokens
    }

    #[getter]
    fn tail_messages(&self) -> usize {
        self.inner.tail.max_messages
    }

    #[getter]
    fn user_turns(&self) -> usize {
        self.inner.tail.user_turns
    }

    /// The smallest summary a round of these rules asks for.
    #[getter]
    fn min_summary(&self) -> i64 {
        self.inner.min_summary()
    }

    /// The runs of `span` that leaf summaries cover, each with its summary budget.
    fn leaf_runs(&self, span: &Span) -> Vec<(Span, i64)> {
        leaf_runs(&self.inner, &span.inner)
            .into_iter()
            .map(|(inner, target)| (Span { inner }, target))
            .collect()
    }

    /// The most text tokens a model's leaf summary may hold when asked for `target`.
    fn leaf_ceiling(&self, target: i64, input_tokens: i64, condensable: bool) -> i64 {
        self.inner.leaf_ceiling(target, input_tokens, condensable)
    }

    /// The text tokens a condensed summary of `merged_tokens` of live summaries may take.
    fn condense_target(&self, view_tokens: i64, merged_tokens: i64) -> i64 {
        self.inner.condense_target(view_tokens, merged_tokens)
    }

    /// Whether a summary of `summary_tokens` is worth committing in place of
    /// `covered_tokens` of view (framing included).
    #[staticmethod]
    fn shrinks(summary_tokens: i64, covered_tokens: i64) -> bool {
        plan::RoundRules::shrinks(summary_tokens, covered_tokens)
    }
}
