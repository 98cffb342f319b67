//! What a turn's arena calls answered last, kept as the Python objects handed out:
//! while nothing they depend on changed, a `build_context` gets the same objects
//! back without planning or converting anything again.

use std::sync::{Arc, Mutex, PoisonError};

use lossless_core::arena::Entry;
use lossless_core::store::{self as core_store, NewestRecall};
use lossless_core::Result;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::arena::{self, ArenaRules, Planned, TransientArgs};

/// What a plan depends on: the session's live entries (the same `Arc` while no row
/// was written), the controller's stored state, the rules, the cap and this turn's
/// candidates.
pub struct PlanKey {
    session_id: String,
    live: Arc<Vec<Entry>>,
    state: Option<String>,
    rules: u64,
    cap: i64,
    transient: Vec<TransientArgs>,
}

impl PlanKey {
    fn matches(&self, session_id: &str, live: &Arc<Vec<Entry>>, state: Option<&str>) -> bool {
        self.session_id == session_id
            && Arc::ptr_eq(&self.live, live)
            && self.state.as_deref() == state
    }
}

/// The last plan and recall a store's sessions asked for.
#[derive(Default)]
pub struct TurnMemo {
    /// The last plan, its dict and a number that changes with each new plan.
    plan: Mutex<Option<(PlanKey, Py<PyDict>, u64)>>,
    recall: Mutex<Option<(Arc<NewestRecall>, Py<PyTuple>)>>,
}

/// What `plan` found: the kept plan (by its number) or one made anew.
pub enum PlanOutcome {
    Kept(u64),
    Made(Box<(PlanKey, Planned)>),
}

impl TurnMemo {
    /// Plans the turn unless the last plan still holds (`None`): called with the
    /// interpreter released.
    pub fn plan(
        &self,
        store: &mut core_store::Store,
        session_id: &str,
        rules: &ArenaRules,
        cap: i64,
        transient: &[TransientArgs],
    ) -> Result<PlanOutcome> {
        let live = store.arena_entries(session_id)?;
        let state = store.arena_state(session_id)?;
        let kept = self.plan.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((key, _, number)) = kept.as_ref() {
            if key.matches(session_id, &live, state.as_deref())
                && key.rules == rules.id
                && key.cap == cap
                && key.transient.as_slice() == transient
            {
                return Ok(PlanOutcome::Kept(*number));
            }
        }
        drop(kept);
        let key = PlanKey {
            session_id: session_id.to_string(),
            live: Arc::clone(&live),
            state,
            rules: rules.id,
            cap,
            transient: transient.to_vec(),
        };
        let sources = (live.as_slice(), key.state.as_deref());
        let planned = arena::plan(
            store,
            session_id,
            sources,
            &rules.inner,
            cap,
            transient.to_vec(),
        )?;
        Ok(PlanOutcome::Made(Box::new((key, planned))))
    }

    /// The plan as Python sees it; `None` when the kept plan it names was replaced
    /// meanwhile (by another session's), and the turn must plan again.
    pub fn plan_dict<'py>(
        &self,
        py: Python<'py>,
        outcome: PlanOutcome,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let mut kept = self.plan.lock().unwrap_or_else(PoisonError::into_inner);
        match outcome {
            PlanOutcome::Made(made) => {
                let (key, planned) = *made;
                let dict = arena::planned_dict(py, &planned)?;
                let number = kept.as_ref().map_or(0, |(_, _, number)| number + 1);
                *kept = Some((key, dict.clone().unbind(), number));
                Ok(Some(dict))
            }
            PlanOutcome::Kept(wanted) => Ok(kept
                .as_ref()
                .filter(|(_, _, number)| *number == wanted)
                .map(|(_, dict, _)| dict.bind(py).clone())),
        }
    }

    /// Forgets the kept plan, so the next one is made anew.
    pub fn forget_plan(&self) {
        *self.plan.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// `(question, hits)` of `recalled`: the kept tuple while it is the same recall.
    pub fn recall_tuple<'py>(
        &self,
        py: Python<'py>,
        recalled: Option<Arc<NewestRecall>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let Some(recalled) = recalled else {
            return PyTuple::new(py, [py.None().into_bound(py), PyList::empty(py).into_any()]);
        };
        let mut kept = self.recall.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((same, tuple)) = kept.as_ref() {
            if Arc::ptr_eq(same, &recalled) {
                return Ok(tuple.bind(py).clone());
            }
        }
        let hits = PyList::empty(py);
        for hit in &recalled.hits {
            hits.append(arena::hit_dict(py, hit)?)?;
        }
        let question = recalled.question.as_str().into_pyobject(py)?.into_any();
        let tuple = PyTuple::new(py, [question, hits.into_any()])?;
        *kept = Some((recalled, tuple.clone().unbind()));
        Ok(tuple)
    }
}
