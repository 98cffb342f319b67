//! Map runs: inputs, outcomes, and the sessions of agentic items.

use lossless_core::store::{self as core_store, SessionSummary};
use pyo3::prelude::*;

use crate::results::result_class;
use crate::store::{SessionRow, Store};

result_class! {
    eq;
    /// A map run: its kind, parent, spec and item count.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct MapRun {
        map_id: String,
        kind: String,
        parent_id: Option<String>,
        spec: String,
        item_count: i64,
        created_at: i64,
    }
}

impl From<core_store::MapRun> for MapRun {
    fn from(run: core_store::MapRun) -> Self {
        Self {
            map_id: run.map_id,
            kind: run.kind,
            parent_id: run.parent_id,
            spec: run.spec,
            item_count: run.item_count,
            created_at: run.created_at,
        }
    }
}

result_class! {
    eq;
    /// One finished attempt at an item of a run: a success or a failure.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct MapOutcome {
        idx: i64,
        succeeded: bool,
        output: Option<String>,
        error_kind: Option<String>,
        error: Option<String>,
        attempts: i64,
        usage: String,
        session_id: Option<String>,
        created_at: i64,
    }
}

impl From<core_store::MapOutcome> for MapOutcome {
    fn from(row: core_store::MapOutcome) -> Self {
        Self {
            idx: row.idx,
            succeeded: row.succeeded,
            output: row.output,
            error_kind: row.error_kind,
            error: row.error,
            attempts: row.attempts,
            usage: row.usage,
            session_id: row.session_id,
            created_at: row.created_at,
        }
    }
}

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
pub fn map_run(py: Python<'_>, store: &Store, map_id: String) -> PyResult<MapRun> {
    let run = store.with(py, |core| core.map_run(&map_id))?;
    Ok(MapRun::from(run))
}

/// The inputs of a run (JSON texts), by index.
#[pyfunction]
pub fn map_inputs(py: Python<'_>, store: &Store, map_id: String) -> PyResult<Vec<String>> {
    store.with(py, |core| core.map_inputs(&map_id))
}

/// Every outcome stored for a run, by item then in the order written.
#[pyfunction]
pub fn map_outcomes(py: Python<'_>, store: &Store, map_id: String) -> PyResult<Vec<MapOutcome>> {
    let rows = store.with(py, |core| core.map_outcomes(&map_id))?;
    Ok(rows.into_iter().map(MapOutcome::from).collect())
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
    let outcome = core_store::MapOutcome {
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
