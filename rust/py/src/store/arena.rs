//! The context arena's entries and plans, and the recall it fills its zone from.

use lossless_core::store::WriteEvent;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::arena;
use crate::arena_rows::{
    ArenaEntryRow, ArenaObservedRow, ArenaPlanRow, ArenaWriteRow, RecallHitRow,
};

use super::Store;

#[pymethods]
impl Store {
    /// Applies arena writes (see `lossless_core::store::ArenaWrite`) in one
    /// transaction with the event `event` (its payload `payload_json`), if given.
    #[pyo3(signature = (session_id, writes, rules, event = None, payload_json = None))]
    fn arena_write(
        &self,
        py: Python<'_>,
        session_id: &str,
        writes: Vec<arena::WriteArgs>,
        rules: &arena::ArenaRules,
        event: Option<&str>,
        payload_json: Option<&str>,
    ) -> PyResult<Vec<ArenaWriteRow>> {
        let event = match event {
            Some(name) => Some(
                WriteEvent::parse(name, payload_json.unwrap_or("{}"))
                    .map_err(crate::errors::to_py_err)?,
            ),
            None => None,
        };
        let writes = arena::writes(writes).map_err(crate::errors::to_py_err)?;
        let outcomes = self.with(py, |store| {
            store.arena_write_under(session_id, writes, &rules.inner, event.as_ref())
        })?;
        Ok(outcomes.iter().map(ArenaWriteRow::from).collect())
    }

    /// The live entries of a session's arena, oldest first.
    fn arena_entries(&self, py: Python<'_>, session_id: &str) -> PyResult<Vec<ArenaEntryRow>> {
        let entries = self.quick(py, |store| store.arena_entries(session_id))?;
        Ok(entries.iter().map(ArenaEntryRow::from).collect())
    }

    /// Plans a turn's injection under `cap` tokens, with this turn's `transient`
    /// candidates (recall hits), and renders it.
    fn arena_plan<'py>(
        &self,
        py: Python<'py>,
        session_id: &str,
        rules: &arena::ArenaRules,
        cap: i64,
        transient: Vec<arena::TransientArgs>,
    ) -> PyResult<Bound<'py, ArenaPlanRow>> {
        let candidates = arena::candidates(transient);
        let planned = self.quick(py, |store| {
            store.arena_plan(session_id, &rules.inner, rules.id, cap, &candidates)
        })?;
        self.turn.plan_row(py, &planned)
    }

    /// The session's tool calls still waiting for their result: (call id, name).
    fn open_tool_calls(&self, py: Python<'_>, session_id: &str) -> PyResult<Vec<(String, String)>> {
        self.with(py, |store| store.open_tool_calls(session_id))
    }

    /// Takes in a sent turn's (demand, accepted, cut at write) per zone and the
    /// once-per-session entries it injected, as (zone, key, seq); stores the
    /// controller's state, with the event `event` when cap moved.
    #[pyo3(signature = (session_id, rules, zones, once, event = None))]
    fn arena_observe(
        &self,
        py: Python<'_>,
        session_id: &str,
        rules: &arena::ArenaRules,
        zones: Vec<(i64, i64, i64)>,
        once: Vec<arena::OnceArgs>,
        event: Option<&str>,
    ) -> PyResult<ArenaObservedRow> {
        let observed = self.with(py, |store| {
            store.arena_observe(session_id, &rules.inner, &zones, &once, event)
        })?;
        Ok(ArenaObservedRow::from(&observed))
    }

    /// Forgets the arena's learned caps and the once-per-session entries it showed,
    /// with the event `event` (its JSON `payload`) in the same transaction.
    fn arena_reset(
        &self,
        py: Python<'_>,
        session_id: &str,
        event: &str,
        payload: &str,
    ) -> PyResult<()> {
        let event = WriteEvent::parse(event, payload).map_err(crate::errors::to_py_err)?;
        self.with(py, |store| store.arena_reset(session_id, &event))
    }

    /// The newest user message of the view and the parts out of the view that
    /// match it best: (question or None, hits, the recall's generation).
    fn recall_newest<'py>(
        &self,
        py: Python<'py>,
        session_id: &str,
        k: usize,
        max_tokens: usize,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let recalled = self.quick(py, |store| store.recall_newest(session_id, k, max_tokens))?;
        self.turn.recall_tuple(py, recalled)
    }

    /// The parts of a session out of its view that match `question` best.
    fn recall(
        &self,
        py: Python<'_>,
        session_id: &str,
        question: &str,
        k: usize,
        max_tokens: usize,
    ) -> PyResult<Vec<RecallHitRow>> {
        let hits = self.with(py, |store| {
            store.recall(session_id, question, k, max_tokens)
        })?;
        Ok(hits.iter().map(RecallHitRow::from).collect())
    }
}
