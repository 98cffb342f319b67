//! `RoundRules`: the limits of a compaction round, built once per round from the
//! session's budget and configuration; the arithmetic on them is the core's.

use lossless_core::plan::{self, Tail};
use pyo3::prelude::*;

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
        leaf_chunk_tokens = 20_000,
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

    /// Whether a summary of `summary_tokens` is worth committing in place of
    /// `covered_tokens` of view (framing included).
    #[staticmethod]
    fn shrinks(summary_tokens: i64, covered_tokens: i64) -> bool {
        plan::RoundRules::shrinks(summary_tokens, covered_tokens)
    }
}
