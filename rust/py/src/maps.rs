//! Map runs: inputs, outcomes, and the sessions of agentic items.

use lossless_core::store::{MapOutcome, SessionSummary};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::store::{dict_of, obj, SessionRow, Store};

/// Stores a new run over `inputs` (JSON texts); returns its id.
#[pyfunction]
#[pyo3(signature = (store, kind, parent_id, spec, inputs))]
pub fn create_map(
    py: Python<'_>,
    store: &Store,
    kind: String,
    parent_id: Option<String>,
    spec: String,
    inputs: Vec<String>,
) -> PyResult<String> {
    store.with(py, |core| {
        core.create_map(&kind, parent_id.as_deref(), &spec, &inputs)
    })
}

/// The run `map_id`: kind, parent, spec and item count.
#[pyfunction]
pub fn map_run<'py>(
    py: Python<'py>,
    store: &Store,
    map_id: String,
) -> PyResult<Bound<'py, PyDict>> {
    let run = store.with(py, |core| core.map_run(&map_id))?;
    dict_of(
        py,
        &[
            ("map_id", obj(py, &run.map_id)?),
            ("kind", obj(py, &run.kind)?),
            ("parent_id", obj(py, run.parent_id.as_deref())?),
            ("spec", obj(py, &run.spec)?),
            ("item_count", obj(py, run.item_count)?),
            ("created_at", obj(py, run.created_at)?),
        ],
    )
}

/// The inputs of a run (JSON texts), by index.
#[pyfunction]
pub fn map_inputs(py: Python<'_>, store: &Store, map_id: String) -> PyResult<Vec<String>> {
    store.with(py, |core| core.map_inputs(&map_id))
}

/// Every outcome stored for a run, by item then in the order written.
#[pyfunction]
pub fn map_outcomes<'py>(
    py: Python<'py>,
    store: &Store,
    map_id: String,
) -> PyResult<Bound<'py, PyList>> {
    let rows = store.with(py, |core| core.map_outcomes(&map_id))?;
    let list = PyList::empty(py);
    for row in &rows {
        list.append(dict_of(
            py,
            &[
                ("idx", obj(py, row.idx)?),
                ("succeeded", obj(py, row.succeeded)?),
                ("output", obj(py, row.output.as_deref())?),
                ("error_kind", obj(py, row.error_kind.as_deref())?),
                ("error", obj(py, row.error.as_deref())?),
                ("attempts", obj(py, row.attempts)?),
                ("usage", obj(py, &row.usage)?),
                ("session_id", obj(py, row.session_id.as_deref())?),
                ("created_at", obj(py, row.created_at)?),
            ],
        )?)?;
    }
    Ok(list)
}

/// Stores one item's outcome (returning `True`); a second success of an item raises
/// `MapConflictError`. Without `wait`, `None` where the write would wait (see
/// `Store.write`).
#[pyfunction]
#[pyo3(signature = (store, map_id, idx, succeeded, output, error_kind, error, attempts, usage, session_id = None, wait = true))]
#[expect(
    clippy::too_many_arguments,
    reason = "one argument per column of the outcome"
)]
pub fn record_map_outcome(
    py: Python<'_>,
    store: &Store,
    map_id: String,
    idx: i64,
    succeeded: bool,
    output: Option<String>,
    error_kind: Option<String>,
    error: Option<String>,
    attempts: i64,
    usage: String,
    session_id: Option<String>,
    wait: bool,
) -> PyResult<Option<bool>> {
    let outcome = MapOutcome {
        idx,
        succeeded,
        output,
        error_kind,
        error,
        attempts,
        usage,
        session_id,
        created_at: 0,
    };
    let written = store.write(py, wait, |core| core.record_map_outcome(&map_id, &outcome))?;
    Ok(written.map(|()| true))
}

/// Creates the session of item `idx` of a run, linked to `parent_id`; returns its id.
/// Without `wait`, `None` where the write would wait (see `Store.write`).
#[pyfunction]
#[pyo3(signature = (store, model, config, system_prompt, parent_id, map_id, idx, wait = true))]
#[expect(
    clippy::too_many_arguments,
    reason = "the session's columns and its link"
)]
pub fn create_child_session(
    py: Python<'_>,
    store: &Store,
    model: String,
    config: String,
    system_prompt: Option<String>,
    parent_id: String,
    map_id: String,
    idx: i64,
    wait: bool,
) -> PyResult<Option<String>> {
    store.write(py, wait, |core| {
        core.create_child_session(
            &model,
            &config,
            system_prompt.as_deref(),
            &parent_id,
            &map_id,
            idx,
        )
    })
}

/// The session item `idx` of a run ran in, if it started.
#[pyfunction]
pub fn item_session(
    py: Python<'_>,
    store: &Store,
    map_id: String,
    idx: i64,
) -> PyResult<Option<String>> {
    store.with(py, |core| core.item_session(&map_id, idx))
}

/// The sessions linked to `parent_id`, as `Store.list_sessions` lists sessions.
#[pyfunction]
pub fn child_sessions(
    py: Python<'_>,
    store: &Store,
    parent_id: String,
) -> PyResult<Vec<SessionRow>> {
    let rows: Vec<SessionSummary> = store.with(py, |core| core.child_sessions(&parent_id))?;
    Ok(rows.into_iter().map(SessionRow::from).collect())
}
