//! Arguments and results of the recall methods of `Store`: expand and read.

use lossless_core::store::{Expansion, Focus, MessageRead};
use pyo3::prelude::*;

use crate::convert;
use crate::errors::invalid;
use crate::results::{result_class, SharedList};

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

result_class! {
    eq;
    /// One source message of an expansion, written out as text.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct ExpandedRow {
        id: String,
        seq: i64,
        role: String,
        text: String,
        tokens: i64,
    }
}

result_class! {
    eq;
    /// A window of a summary's source messages, with what lies before and after it.
    #[derive(Debug, PartialEq)]
    pub struct ExpansionRow {
        summary_id: String,
        session_id: String,
        messages: SharedList,
        tokens: i64,
        total_messages: i64,
        omitted_messages: i64,
        messages_before: i64,
        messages_after: i64,
        focus_id: Option<String>,
        before_cursor: Option<String>,
        after_cursor: Option<String>,
        note: String,
    }
}

impl ExpansionRow {
    pub fn convert(py: Python<'_>, expansion: Expansion) -> PyResult<Self> {
        let messages = expansion.messages.into_iter().map(|message| ExpandedRow {
            id: message.id,
            seq: message.seq,
            role: message.role,
            text: message.text,
            tokens: message.tokens,
        });
        Ok(Self {
            summary_id: expansion.summary_id,
            session_id: expansion.session_id,
            messages: SharedList::of(py, messages)?,
            tokens: expansion.tokens,
            total_messages: expansion.total_messages,
            omitted_messages: expansion.omitted_messages,
            messages_before: expansion.messages_before,
            messages_after: expansion.messages_after,
            focus_id: expansion.focus_id,
            before_cursor: expansion.before_cursor,
            after_cursor: expansion.after_cursor,
            note: expansion.note,
        })
    }
}

result_class! {
    eq;
    /// A page of one message written out whole; `next_cursor` is `None` on the last.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct MessagePageRow {
        message_id: String,
        session_id: String,
        seq: i64,
        role: String,
        status: String,
        parts: usize,
        text: String,
        tokens: i64,
        cursor: usize,
        total_chars: usize,
        next_cursor: Option<usize>,
    }
}

impl From<MessageRead> for MessagePageRow {
    fn from(read: MessageRead) -> Self {
        Self {
            next_cursor: (read.end < read.total_chars).then_some(read.end),
            message_id: read.message_id,
            session_id: read.session_id,
            seq: read.seq,
            role: read.role,
            status: read.status,
            parts: read.parts,
            text: read.text,
            tokens: read.tokens,
            cursor: read.start,
            total_chars: read.total_chars,
        }
    }
}
