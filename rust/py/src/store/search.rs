//! Recall from the store: grep, describe, expand and read.

use lossless_core::store::GrepMode;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::convert;
use crate::errors::invalid;
use crate::recall;

use super::{dict_of, obj, Store};

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
    ) -> PyResult<Bound<'py, PyList>> {
        let query = convert::text(query, "query")?;
        let session_id = convert::maybe_text(session_id, "session_id")?;
        let limit = usize::try_from(limit)
            .ok()
            .filter(|limit| *limit >= 1)
            .ok_or_else(|| invalid("limit", "must be at least 1"))?;
        let hits = self.with(py, |store| {
            store.grep(&query, session_id.as_deref(), mode, limit)
        })?;
        let list = PyList::empty(py);
        for hit in &hits {
            list.append(dict_of(
                py,
                &[
                    ("session_id", obj(py, &hit.session_id)?),
                    ("owner_kind", obj(py, hit.owner_kind)?),
                    ("owner_id", obj(py, &hit.owner_id)?),
                    ("part_id", obj(py, hit.part_id.as_deref())?),
                    ("snippet", obj(py, &hit.snippet)?),
                    ("rank", obj(py, hit.rank)?),
                    (
                        "covering_summary_id",
                        obj(py, hit.covering_summary_id.as_deref())?,
                    ),
                    ("leaf_summary_id", obj(py, hit.leaf_summary_id.as_deref())?),
                ],
            )?)?;
        }
        Ok(list)
    }

    #[pyo3(signature = (session_id = None, summary_id = None))]
    fn describe<'py>(
        &self,
        py: Python<'py>,
        session_id: Option<&Bound<'py, PyAny>>,
        summary_id: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let session_id = convert::maybe_text(session_id, "session_id")?;
        let summary_id = convert::maybe_text(summary_id, "summary_id")?;
        let nodes = self.with(py, |store| {
            store.describe(session_id.as_deref(), summary_id.as_deref())
        })?;
        let list = PyList::empty(py);
        for node in &nodes {
            let dict = convert::summary_row(py, &node.summary)?;
            dict.set_item("live", node.live)?;
            dict.set_item("source_kind", &node.source_kind)?;
            dict.set_item("sources", &node.sources)?;
            list.append(dict)?;
        }
        Ok(list)
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
    ) -> PyResult<Bound<'py, PyDict>> {
        let summary_id = convert::text(summary_id, "summary_id")?;
        let max_tokens = convert::int(max_tokens, "max_tokens")?;
        let focus = recall::focus(around, query, before, after)?;
        let expansion = self.with(py, |store| {
            store.expand_window(&summary_id, &focus, max_tokens)
        })?;
        recall::expansion(py, &expansion)
    }

    #[pyo3(signature = (message_id, max_tokens, cursor = None))]
    fn read_message<'py>(
        &self,
        py: Python<'py>,
        message_id: &Bound<'py, PyAny>,
        max_tokens: &Bound<'py, PyAny>,
        cursor: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let message_id = convert::text(message_id, "message_id")?;
        let max_tokens = convert::int(max_tokens, "max_tokens")?;
        let cursor = cursor.filter(|value| !value.is_none());
        let cursor = usize::try_from(cursor.map_or(Ok(0), |value| convert::int(value, "cursor"))?)
            .map_err(|_| invalid("cursor", "must be at least 0"))?;
        let read = self.with(py, |store| {
            store.read_message(&message_id, cursor, max_tokens)
        })?;
        recall::message_read(py, &read)
    }
}
