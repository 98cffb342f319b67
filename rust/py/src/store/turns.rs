//! Turns: appending messages and tool updates (with their events), and reading them back.

use lossless_core::parts::{Role, ToolStatus};
use lossless_core::store::{self as core_store, WriteEvent};
use lossless_core::Result;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::convert;

use super::{dict_of, obj, Store};

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
    ) -> PyResult<Bound<'py, PyDict>> {
        let session_id = convert::text(session_id, "session_id")?;
        let role = convert::role(role)?;
        let parts = convert::parts(parts)?;
        let model = convert::maybe_text(model, "model")?;
        let result = self.with(py, |store| {
            store.append_message(&session_id, role, &parts, model.as_deref())
        })?;
        append_result(py, &result)
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
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let session_id = convert::text(session_id, "session_id")?;
        let role = convert::role(role)?;
        let parts = convert::parts(parts)?;
        let event = WriteEvent::parse(event, payload_json).map_err(crate::errors::to_py_err)?;
        let written = self.write(py, wait, |store| {
            let result = store.append_turn(&session_id, role, &parts, None, Some(&event))?;
            Ok((result, store.view_stats(&session_id)?.tokens))
        })?;
        let Some((result, view_tokens)) = written else {
            return Ok(None);
        };
        let dict = append_result(py, &result)?;
        dict.set_item("view_tokens", view_tokens)?;
        Ok(Some(dict))
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
    ) -> PyResult<Bound<'py, PyDict>> {
        let parts = convert::parts(parts)?;
        let usage = convert::usage(usage)?;
        let result = self.with(py, |store| {
            store.finish_message(message_id, &parts, complete, &usage)
        })?;
        append_result(py, &result)
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
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let parts = convert::parts(parts)?;
        let usage = convert::usage(usage)?;
        let event = WriteEvent::parse(event, payload_json).map_err(crate::errors::to_py_err)?;
        let written = self.write(py, wait, |store| {
            let result = store.finish_turn(message_id, &parts, complete, &usage, Some(&event))?;
            Ok((result, store.view_stats(session_id)?.tokens))
        })?;
        let Some((result, view_tokens)) = written else {
            return Ok(None);
        };
        let dict = append_result(py, &result)?;
        dict.set_item("view_tokens", view_tokens)?;
        Ok(Some(dict))
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
    #[pyo3(signature = (session_id, call_id, status, output, error, event, payload_json, wait = true))]
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
    ) -> PyResult<Option<i64>> {
        let update = ToolUpdate::convert(session_id, call_id, status, output, error)?;
        let event = WriteEvent::parse(event, payload_json).map_err(crate::errors::to_py_err)?;
        self.write(py, wait, |store| {
            update.apply(store, Some(&event))?;
            Ok(store.view_stats(&update.session_id)?.tokens)
        })
    }

    fn get_message<'py>(
        &self,
        py: Python<'py>,
        message_id: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let message_id = convert::text(message_id, "message_id")?;
        let record = self.with(py, |store| store.get_message(&message_id))?;
        convert::message_record(py, &record)
    }

    fn history<'py>(
        &self,
        py: Python<'py>,
        session_id: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let session_id = convert::text(session_id, "session_id")?;
        let records = self.quick(py, |store| store.history(&session_id))?;
        let list = PyList::empty(py);
        for record in &records {
            list.append(convert::message_record(py, record)?)?;
        }
        Ok(list)
    }
}

fn append_result<'py>(
    py: Python<'py>,
    result: &core_store::AppendResult,
) -> PyResult<Bound<'py, PyDict>> {
    dict_of(
        py,
        &[
            ("id", obj(py, &result.id)?),
            ("seq", obj(py, result.seq)?),
            ("token_count", obj(py, result.token_count)?),
            ("part_ids", obj(py, &result.part_ids)?),
        ],
    )
}

/// The arguments of a tool call's update, converted from Python.
struct ToolUpdate {
    session_id: String,
    call_id: String,
    status: ToolStatus,
    output: Option<String>,
    error: Option<String>,
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
        })
    }

    fn apply(&self, store: &mut core_store::Store, event: Option<&WriteEvent>) -> Result<()> {
        store.update_tool_turn(
            &self.session_id,
            &self.call_id,
            self.status,
            self.output.as_deref(),
            self.error.as_deref(),
            event,
        )
    }
}
