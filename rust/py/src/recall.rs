//! Arguments and results of the recall methods of `Store`: expand and read.

use lossless_core::store::{Expansion, Focus, MessageRead};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3::IntoPyObjectExt;

use crate::convert;
use crate::errors::invalid;

/// Where an expansion starts: at most one of `around`, `query`, `before`, `after`.
pub fn focus(
    around: Option<&Bound<'_, PyAny>>,
    query: Option<&Bound<'_, PyAny>>,
    before: Option<&Bound<'_, PyAny>>,
    after: Option<&Bound<'_, PyAny>>,
) -> PyResult<Focus> {
    let given = [
        convert::maybe_text(around, "around")?.map(Focus::Around),
        convert::maybe_text(query, "query")?.map(Focus::Query),
        convert::maybe_text(before, "before")?.map(Focus::Before),
        convert::maybe_text(after, "after")?.map(Focus::After),
    ];
    let mut chosen = given.into_iter().flatten();
    let first = chosen.next().unwrap_or(Focus::Oldest);
    if chosen.next().is_some() {
        return Err(invalid(
            "around",
            "give at most one of around, query, before and after",
        ));
    }
    Ok(first)
}

fn set<'py, T: IntoPyObject<'py>>(dict: &Bound<'py, PyDict>, key: &str, value: T) -> PyResult<()> {
    dict.set_item(key, value.into_bound_py_any(dict.py())?)
}

/// An expansion as a dict.
pub fn expansion<'py>(py: Python<'py>, expansion: &Expansion) -> PyResult<Bound<'py, PyDict>> {
    let messages = PyList::empty(py);
    for message in &expansion.messages {
        let item = PyDict::new(py);
        set(&item, "id", &message.id)?;
        set(&item, "seq", message.seq)?;
        set(&item, "role", &message.role)?;
        set(&item, "text", &message.text)?;
        set(&item, "tokens", message.tokens)?;
        messages.append(item)?;
    }
    let dict = PyDict::new(py);
    set(&dict, "summary_id", &expansion.summary_id)?;
    set(&dict, "session_id", &expansion.session_id)?;
    set(&dict, "messages", messages)?;
    set(&dict, "tokens", expansion.tokens)?;
    set(&dict, "total_messages", expansion.total_messages)?;
    set(&dict, "omitted_messages", expansion.omitted_messages)?;
    set(&dict, "messages_before", expansion.messages_before)?;
    set(&dict, "messages_after", expansion.messages_after)?;
    set(&dict, "focus_id", expansion.focus_id.as_deref())?;
    set(&dict, "before_cursor", expansion.before_cursor.as_deref())?;
    set(&dict, "after_cursor", expansion.after_cursor.as_deref())?;
    set(&dict, "note", &expansion.note)?;
    Ok(dict)
}

/// A page of a message as a dict; `next_cursor` is `None` on the last page.
pub fn message_read<'py>(py: Python<'py>, read: &MessageRead) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    set(&dict, "message_id", &read.message_id)?;
    set(&dict, "session_id", &read.session_id)?;
    set(&dict, "seq", read.seq)?;
    set(&dict, "role", &read.role)?;
    set(&dict, "status", &read.status)?;
    set(&dict, "parts", read.parts)?;
    set(&dict, "text", &read.text)?;
    set(&dict, "tokens", read.tokens)?;
    set(&dict, "cursor", read.start)?;
    set(&dict, "total_chars", read.total_chars)?;
    set(
        &dict,
        "next_cursor",
        (read.end < read.total_chars).then_some(read.end),
    )?;
    Ok(dict)
}
