//! Python copies of what the core keeps for a turn: the arena's plan and the
//! newest recall. The core decides when either is stale (a new value gets a new
//! generation); a copy is kept here by that generation only, so a turn whose plan
//! or recall did not change gets the same Python objects back without converting
//! anything again.

use std::sync::{Arc, Mutex, PoisonError};

use lossless_core::arena::PlannedTurn;
use lossless_core::model::Generation;
use lossless_core::store::NewestRecall;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::arena_rows::{ArenaPlanRow, RecallHitRow};

/// The last plan and recall a store's sessions asked for, as Python objects.
#[derive(Default)]
pub struct TurnMemo {
    plan: Mutex<Option<(Generation, Py<ArenaPlanRow>)>>,
    recall: Mutex<Option<(Generation, Py<PyTuple>)>>,
}

impl TurnMemo {
    /// The plan as Python reads it: the kept one while it is the same plan.
    pub fn plan_row<'py>(
        &self,
        py: Python<'py>,
        planned: &PlannedTurn,
    ) -> PyResult<Bound<'py, ArenaPlanRow>> {
        let mut kept = self.plan.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((generation, row)) = kept.as_ref() {
            if *generation == planned.generation {
                return Ok(row.bind(py).clone());
            }
        }
        let row = Bound::new(py, ArenaPlanRow::of(py, planned)?)?;
        *kept = Some((planned.generation, row.clone().unbind()));
        Ok(row)
    }

    /// `(question, hits, generation)` of `recalled`: the kept tuple while it is the
    /// same recall; `(None, [], 0)` without one.
    pub fn recall_tuple<'py>(
        &self,
        py: Python<'py>,
        recalled: Option<Arc<NewestRecall>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let Some(recalled) = recalled else {
            let none = py.None().into_bound(py);
            return PyTuple::new(
                py,
                [
                    none,
                    PyList::empty(py).into_any(),
                    0_u64.into_pyobject(py)?.into_any(),
                ],
            );
        };
        let mut kept = self.recall.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((generation, tuple)) = kept.as_ref() {
            if *generation == recalled.generation {
                return Ok(tuple.bind(py).clone());
            }
        }
        let hits = PyList::empty(py);
        for hit in &recalled.hits {
            hits.append(RecallHitRow::from(hit))?;
        }
        let question = recalled.question.as_str().into_pyobject(py)?.into_any();
        let generation = recalled.generation.0.into_pyobject(py)?.into_any();
        let tuple = PyTuple::new(py, [question, hits.into_any(), generation])?;
        *kept = Some((recalled.generation, tuple.clone().unbind()));
        Ok(tuple)
    }
}
