//! Turns: appending messages and tool updates (with their events), and reading them back.

use lossless_core::parts::{Part, Role, ToolStatus};
use lossless_core::store::{self as core_store, WriteEvent};
use lossless_core::Result;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert;
use crate::results::{result_class, SharedList};

use super::Store;

#[pymethods]
impl Store {
    #[pyo3(signature = (session_id, role, parts, model = None))]
    fn append_message<'py>(
        &self,
        py: Python<'py>,
        session_id: &Bound<'py, PyAny>,
        role: &Bound<'py, PyAny>,
        parts: &Bound<'py, PyAny>,
        model: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<AppendResult> {
        let session_id = convert::text(session_id, "session_id")?;
        let role = convert::role(role)?;
        let parts = convert::parts(parts)?;
        let model = convert::maybe_text(model, "model")?;
        let result = self.with(py, |store| {
            store.append_message(&session_id, role, &parts, model.as_deref())
        })?;
        Ok(AppendResult::from(result))
    }

    /// A turn as one transaction: the message, the event `event` (its payload given
    /// the new message's id) and, read right after, the view's size in tokens.
    /// Without `wait`, `None` where the write would wait (see [`Store::write`]).
    #[pyo3(signature = (session_id, role, parts, event, payload_json, wait = true))]
    #[allow(clippy::too_many_arguments)]
    fn append_turn<'py>(
        &self,
        py: Python<'py>,
        session_id: &Bound<'py, PyAny>,
        role: &Bound<'py, PyAny>,
        parts: &Bound<'py, PyAny>,
        event: &str,
        payload_json: &str,
        wait: bool,
    ) -> PyResult<Option<TurnAppendResult>> {
        let session_id = convert::text(session_id, "session_id")?;
        let role = convert::role(role)?;
        let parts = convert::parts(parts)?;
        let event = WriteEvent::parse(event, payload_json).map_err(crate::errors::to_py_err)?;
        let written = self.write(py, wait, |store| {
            let result = store.append_turn(&session_id, role, &parts, None, Some(&event))?;
            Ok((result, store.view_stats(&session_id)?.tokens))
        })?;
        Ok(written.map(TurnAppendResult::from))
    }

    /// Without `wait`, `None` where the write would wait (see [`Store::write`]).
    #[pyo3(signature = (session_id, role, model = None, owner = "local", wait = true))]
    fn begin_message(
        &self,
        py: Python<'_>,
        session_id: &str,
        role: &str,
        model: Option<&str>,
        owner: &str,
        wait: bool,
    ) -> PyResult<Option<String>> {
        let role = Role::parse(role).map_err(crate::errors::to_py_err)?;
        self.write(py, wait, |store| {
            store.begin_message(session_id, role, model, owner)
        })
    }

    #[pyo3(signature = (message_id, parts, complete, usage = None))]
    fn finish_message<'py>(
        &self,
        py: Python<'py>,
        message_id: &str,
        parts: &Bound<'py, PyAny>,
        complete: bool,
        usage: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<AppendResult> {
        let parts = convert::parts(parts)?;
        let usage = convert::usage(usage)?;
        let result = self.with(py, |store| {
            store.finish_message(message_id, &parts, complete, &usage)
        })?;
        Ok(AppendResult::from(result))
    }

    /// A reply of `session_id` finished as one transaction with its event `event`
    /// (its payload given the message's id), and the view's size read right after,
    /// in one call (decision 103). Returns the message as `finish_message` does,
    /// with `view_tokens`; without `wait`, `None` where the write would wait (see
    /// [`Store::write`]).
    #[pyo3(signature = (session_id, message_id, parts, complete, usage, event, payload_json, wait = true))]
    #[allow(clippy::too_many_arguments)]
    fn finish_turn<'py>(
        &self,
        py: Python<'py>,
        session_id: &str,
        message_id: &str,
        parts: &Bound<'py, PyAny>,
        complete: bool,
        usage: Option<&Bound<'py, PyDict>>,
        event: &str,
        payload_json: &str,
        wait: bool,
    ) -> PyResult<Option<TurnAppendResult>> {
        let parts = convert::parts(parts)?;
        let usage = convert::usage(usage)?;
        let event = WriteEvent::parse(event, payload_json).map_err(crate::errors::to_py_err)?;
        let written = self.write(py, wait, |store| {
            let result = store.finish_turn(message_id, &parts, complete, &usage, Some(&event))?;
            Ok((result, store.view_stats(session_id)?.tokens))
        })?;
        Ok(written.map(TurnAppendResult::from))
    }

    #[pyo3(signature = (session_id, call_id, status, output = None, error = None))]
    fn update_tool(
        &self,
        py: Python<'_>,
        session_id: &Bound<'_, PyAny>,
        call_id: &Bound<'_, PyAny>,
        status: &Bound<'_, PyAny>,
        output: Option<&Bound<'_, PyAny>>,
        error: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let update = ToolUpdate::convert(session_id, call_id, status, output, error)?;
        self.with(py, |store| update.apply(store, None))
    }

    /// [`Store::update_tool`] as one transaction with the event `event`; returns
    /// the view's size in tokens, read right after. Without `wait`, `None` where
    /// the write would wait (see [`Store::write`]).
    #[pyo3(signature = (session_id, call_id, status, output, error, event, payload_json, wait = true, media = None))]
    #[allow(clippy::too_many_arguments)]
    fn update_tool_turn(
        &self,
        py: Python<'_>,
        session_id: &Bound<'_, PyAny>,
        call_id: &Bound<'_, PyAny>,
        status: &Bound<'_, PyAny>,
        output: Option<&Bound<'_, PyAny>>,
        error: Option<&Bound<'_, PyAny>>,
        event: &str,
        payload_json: &str,
        wait: bool,
        media: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<i64>> {
        let mut update = ToolUpdate::convert(session_id, call_id, status, output, error)?;
        if let Some(media) = media {
            update.media = convert::parts(media)?;
        }
        let event = WriteEvent::parse(event, payload_json).map_err(crate::errors::to_py_err)?;
        self.write(py, wait, |store| {
            update.apply(store, Some(&event))?;
            Ok(store.view_stats(&update.session_id)?.tokens)
        })
    }

    fn get_message(
        &self,
        py: Python<'_>,
        message_id: &Bound<'_, PyAny>,
    ) -> PyResult<MessageRecord> {
        let message_id = convert::text(message_id, "message_id")?;
        let record = self.with(py, |store| store.get_message(&message_id))?;
        MessageRecord::convert(py, record)
    }

    fn history(
        &self,
        py: Python<'_>,
        session_id: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<MessageRecord>> {
        let session_id = convert::text(session_id, "session_id")?;
        let records = self.quick(py, |store| store.history(&session_id))?;
        records
            .into_iter()
            .map(|record| MessageRecord::convert(py, record))
            .collect()
    }

    /// The messages of a session whose seqs are `low..=high`, oldest first: a page
    /// of a long history, read alone.
    fn history_range(
        &self,
        py: Python<'_>,
        session_id: &Bound<'_, PyAny>,
        low: i64,
        high: i64,
    ) -> PyResult<Vec<MessageRecord>> {
        let session_id = convert::text(session_id, "session_id")?;
        let records = self.with(py, |store| store.history_range(&session_id, low, high))?;
        records
            .into_iter()
            .map(|record| MessageRecord::convert(py, record))
            .collect()
    }
}

result_class! {
    eq;
    /// A message just written: its id, place in the session, tokens and part ids,
    /// and the secrets replaced before it was stored (`(kind, count)` pairs).
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct AppendResult {
        id: String,
        seq: i64,
        token_count: i64,
        part_ids: Vec<String>,
        redacted: Vec<(String, i64)>,
    }
}

/// A write's findings as `(kind, count)` pairs.
fn findings(found: &[lossless_core::redact::Finding]) -> Vec<(String, i64)> {
    found
        .iter()
        .map(|finding| (finding.kind.to_string(), finding.count as i64))
        .collect()
}

impl From<core_store::AppendResult> for AppendResult {
    fn from(result: core_store::AppendResult) -> Self {
        Self {
            id: result.id,
            seq: result.seq,
            token_count: result.token_count,
            redacted: findings(&result.redacted),
            part_ids: result.part_ids,
        }
    }
}

result_class! {
    eq;
    /// A turn just written, as [`AppendResult`], with the view's size in tokens
    /// read right after in the same call.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct TurnAppendResult {
        id: String,
        seq: i64,
        token_count: i64,
        part_ids: Vec<String>,
        view_tokens: i64,
        redacted: Vec<(String, i64)>,
    }
}

impl From<(core_store::AppendResult, i64)> for TurnAppendResult {
    fn from((result, view_tokens): (core_store::AppendResult, i64)) -> Self {
        Self {
            id: result.id,
            seq: result.seq,
            token_count: result.token_count,
            redacted: findings(&result.redacted),
            part_ids: result.part_ids,
            view_tokens,
        }
    }
}

result_class! {
    eq;
    /// A stored message with its usage and its parts, each part the wire dict
    /// `lossless.parts.part_from_wire` reads.
    #[derive(Debug, PartialEq)]
    pub struct MessageRecord {
        id: String,
        session_id: String,
        seq: i64,
        role: String,
        status: String,
        created_at: i64,
        model: Option<String>,
        token_count: Option<i64>,
        input_tokens: Option<i64>,
        output_tokens: Option<i64>,
        cost: Option<f64>,
        finish_reason: Option<String>,
        parts: SharedList,
    }
}

impl MessageRecord {
    fn convert(py: Python<'_>, record: core_store::MessageRecord) -> PyResult<Self> {
        let parts = record
            .parts
            .iter()
            .map(|stored| convert::stored_part(py, stored))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(Self {
            id: record.id,
            session_id: record.session_id,
            seq: record.seq,
            role: record.role,
            status: record.status,
            created_at: record.created_at,
            model: record.model,
            token_count: record.token_count,
            input_tokens: record.usage.input_tokens,
            output_tokens: record.usage.output_tokens,
            cost: record.usage.cost,
            finish_reason: record.usage.finish_reason,
            parts: SharedList::of(py, parts)?,
        })
    }
}

/// The arguments of a tool call's update, converted from Python.
struct ToolUpdate {
    session_id: String,
    call_id: String,
    status: ToolStatus,
    output: Option<String>,
    error: Option<String>,
    /// Images and documents of the result.
    media: Vec<Part>,
}

impl ToolUpdate {
    fn convert(
        session_id: &Bound<'_, PyAny>,
        call_id: &Bound<'_, PyAny>,
        status: &Bound<'_, PyAny>,
        output: Option<&Bound<'_, PyAny>>,
        error: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        Ok(Self {
            session_id: convert::text(session_id, "session_id")?,
            call_id: convert::text(call_id, "call_id")?,
            status: ToolStatus::parse("status", &convert::text(status, "status")?)
                .map_err(crate::errors::to_py_err)?,
            output: convert::maybe_text(output, "output")?,
            error: convert::maybe_text(error, "error")?,
            media: Vec::new(),
        })
    }

    fn apply(&self, store: &mut core_store::Store, event: Option<&WriteEvent>) -> Result<()> {
        store.update_tool_with_media(
            &self.session_id,
            &self.call_id,
            self.status,
            self.output.as_deref(),
            self.error.as_deref(),
            &self.media,
            event,
        )
    }
}
