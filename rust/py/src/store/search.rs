//! Recall from the store: grep, describe, expand and read.

use lossless_core::store::{DagNode, GrepHit, GrepMode};
use pyo3::prelude::*;

use crate::convert;
use crate::errors::invalid;
use crate::recall::{self, ExpansionRow, MessagePageRow};
use crate::results::result_class;

use super::Store;

#[pymethods]
impl Store {
    #[pyo3(
        signature = (query, session_id = None, mode = GrepMode::Text, limit = 20),
        text_signature = "($self, query, session_id=None, mode='text', limit=20)"
    )]
    fn grep<'py>(
        &self,
        py: Python<'py>,
        query: &Bound<'py, PyAny>,
        session_id: Option<&Bound<'py, PyAny>>,
        #[pyo3(from_py_with = convert::mode_arg)] mode: GrepMode,
        #[pyo3(from_py_with = convert::limit_arg)] limit: i64,
    ) -> PyResult<Vec<GrepRow>> {
        let query = convert::text(query, "query")?;
        let session_id = convert::maybe_text(session_id, "session_id")?;
        // Below zero is below one: the core refuses both with the same words.
        let limit = usize::try_from(limit).unwrap_or(0);
        let hits = self.with(py, |store| {
            store.grep(&query, session_id.as_deref(), mode, limit)
        })?;
        Ok(hits.into_iter().map(GrepRow::from).collect())
    }

    #[pyo3(signature = (session_id = None, summary_id = None))]
    fn describe<'py>(
        &self,
        py: Python<'py>,
        session_id: Option<&Bound<'py, PyAny>>,
        summary_id: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Vec<DagRow>> {
        let session_id = convert::maybe_text(session_id, "session_id")?;
        let summary_id = convert::maybe_text(summary_id, "summary_id")?;
        let nodes = self.with(py, |store| {
            store.describe(session_id.as_deref(), summary_id.as_deref())
        })?;
        Ok(nodes.into_iter().map(DagRow::from).collect())
    }

    /// One summary of the DAG with the ids of its sources, without its subtree.
    fn summary_node(&self, py: Python<'_>, summary_id: &Bound<'_, PyAny>) -> PyResult<DagRow> {
        let summary_id = convert::text(summary_id, "summary_id")?;
        let node = self.with(py, |store| store.summary_node(&summary_id))?;
        Ok(DagRow::from(node))
    }

    #[pyo3(signature = (summary_id, max_tokens, around = None, query = None, before = None, after = None))]
    #[expect(
        clippy::too_many_arguments,
        reason = "mirrors the keyword arguments of the Python function"
    )]
    fn expand<'py>(
        &self,
        py: Python<'py>,
        summary_id: &Bound<'py, PyAny>,
        max_tokens: &Bound<'py, PyAny>,
        around: Option<&Bound<'py, PyAny>>,
        query: Option<&Bound<'py, PyAny>>,
        before: Option<&Bound<'py, PyAny>>,
        after: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<ExpansionRow> {
        let summary_id = convert::text(summary_id, "summary_id")?;
        let max_tokens = convert::int(max_tokens, "max_tokens")?;
        let focus = recall::focus(around, query, before, after)?;
        let expansion = self.with(py, |store| {
            store.expand_window(&summary_id, &focus, max_tokens)
        })?;
        ExpansionRow::convert(py, expansion)
    }

    #[pyo3(signature = (message_id, max_tokens, cursor = None))]
    fn read_message<'py>(
        &self,
        py: Python<'py>,
        message_id: &Bound<'py, PyAny>,
        max_tokens: &Bound<'py, PyAny>,
        cursor: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<MessagePageRow> {
        let message_id = convert::text(message_id, "message_id")?;
        let max_tokens = convert::int(max_tokens, "max_tokens")?;
        let cursor = cursor.filter(|value| !value.is_none());
        let cursor = usize::try_from(cursor.map_or(Ok(0), |value| convert::int(value, "cursor"))?)
            .map_err(|_| invalid("cursor", "must be at least 0"))?;
        let read = self.with(py, |store| {
            store.read_message(&message_id, cursor, max_tokens)
        })?;
        Ok(MessagePageRow::from(read))
    }
}

result_class! {
    eq;
    /// A part or summary that matched a search, with the summaries covering it.
    #[derive(Clone, Debug, PartialEq)]
    pub struct GrepRow {
        session_id: String,
        owner_kind: String,
        owner_id: String,
        part_id: Option<String>,
        snippet: String,
        rank: f64,
        covering_summary_id: Option<String>,
        leaf_summary_id: Option<String>,
    }
}

impl From<GrepHit> for GrepRow {
    fn from(hit: GrepHit) -> Self {
        Self {
            session_id: hit.session_id,
            owner_kind: hit.owner_kind.to_owned(),
            owner_id: hit.owner_id,
            part_id: hit.part_id,
            snippet: hit.snippet,
            rank: hit.rank,
            covering_summary_id: hit.covering_summary_id,
            leaf_summary_id: hit.leaf_summary_id,
        }
    }
}

result_class! {
    eq;
    /// A summary of the DAG: its row, whether it is in the view, and what it covers.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct DagRow {
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
        live: bool,
        source_kind: String,
        sources: Vec<String>,
    }
}

impl From<DagNode> for DagRow {
    fn from(node: DagNode) -> Self {
        let row = node.summary;
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
            live: node.live,
            source_kind: node.source_kind,
            sources: node.sources,
        }
    }
}
