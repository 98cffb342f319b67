//! `Span`: the messages the next summary covers. Their ids stay on the Rust side,
//! so a compaction round over tens of thousands of messages never copies them into
//! Python and back.

use lossless_core::store::SpanInfo;
use pyo3::prelude::*;

/// The oldest unprotected run of messages in a session's view, as
/// `Store.compaction_span` found it.
#[pyclass(frozen, module = "lossless._native")]
pub struct Span {
    pub(crate) inner: SpanInfo,
}

#[pymethods]
impl Span {
    #[getter]
    fn session_id(&self) -> &str {
        &self.inner.session_id
    }

    /// The messages, in view order (a new list on every access).
    #[getter]
    fn message_ids(&self) -> Vec<String> {
        self.inner.message_ids.clone()
    }

    #[getter]
    fn message_count(&self) -> usize {
        self.inner.message_ids.len()
    }

    /// View tokens of the messages.
    #[getter]
    fn tokens(&self) -> i64 {
        self.inner.tokens
    }

    #[getter]
    fn first_seq(&self) -> i64 {
        self.inner.first_seq
    }

    #[getter]
    fn last_seq(&self) -> i64 {
        self.inner.last_seq
    }

    #[getter]
    fn view_version(&self) -> i64 {
        self.inner.view_version
    }

    /// View tokens of the whole view the span was read from.
    #[getter]
    fn view_tokens(&self) -> i64 {
        self.inner.view_tokens
    }

    /// The summaries in that view.
    #[getter]
    fn summary_ids(&self) -> Vec<String> {
        self.inner.summary_ids.clone()
    }

    /// View tokens of those summaries.
    #[getter]
    fn summary_tokens(&self) -> i64 {
        self.inner.summary_tokens
    }

    /// The oldest `count` messages of the span.
    fn head(&self, count: usize) -> Span {
        Span {
            inner: self.inner.head(count),
        }
    }

    /// The runs of the span that leaf summaries of at most `max_tokens` of source
    /// each cover, oldest first.
    fn chunks(&self, max_tokens: i64) -> Vec<Span> {
        self.inner
            .chunks(max_tokens)
            .into_iter()
            .map(|inner| Span { inner })
            .collect()
    }

    fn __len__(&self) -> usize {
        self.inner.message_ids.len()
    }

    fn __repr__(&self) -> String {
        format!(
            "Span(session_id={:?}, messages={}, tokens={}, seq={}..={}, view_version={})",
            self.inner.session_id,
            self.inner.message_ids.len(),
            self.inner.tokens,
            self.inner.first_seq,
            self.inner.last_seq,
            self.inner.view_version
        )
    }
}

/// Messages named by a list of ids or by a [`Span`].
#[derive(FromPyObject)]
pub(crate) enum MessageIds<'py> {
    Span(Bound<'py, Span>),
    Ids(Vec<String>),
}

impl MessageIds<'_> {
    pub(crate) fn ids(&self) -> &[String] {
        match self {
            MessageIds::Span(span) => &span.get().inner.message_ids,
            MessageIds::Ids(ids) => ids,
        }
    }

    /// Results name the messages they cover only for a list: a span's caller
    /// takes `span.head(message_count)` instead of a copy of the ids.
    pub(crate) fn is_list(&self) -> bool {
        matches!(self, MessageIds::Ids(_))
    }
}
