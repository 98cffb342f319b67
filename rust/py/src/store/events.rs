//! The event tape and the compaction lease.

use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::convert;

use super::{dict_of, obj, Store};

#[pymethods]
impl Store {
    fn append_event(
        &self,
        py: Python<'_>,
        session_id: &str,
        name: &str,
        payload_json: &str,
    ) -> PyResult<i64> {
        self.quick(py, |store| {
            store.append_event(session_id, name, payload_json)
        })
    }

    fn events<'py>(
        &self,
        py: Python<'py>,
        session_id: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let session_id = convert::text(session_id, "session_id")?;
        let rows = self.with(py, |store| store.events(&session_id))?;
        let list = PyList::empty(py);
        for row in &rows {
            list.append(dict_of(
                py,
                &[
                    ("id", obj(py, &row.id)?),
                    ("seq", obj(py, row.seq)?),
                    ("name", obj(py, &row.name)?),
                    ("payload_json", obj(py, &row.payload)?),
                    ("created_at", obj(py, row.created_at)?),
                ],
            )?)?;
        }
        Ok(list)
    }

    fn acquire_compaction_lease(
        &self,
        py: Python<'_>,
        session_id: &str,
        holder: &str,
        ttl_ms: i64,
    ) -> PyResult<bool> {
        self.with(py, |store| {
            store.acquire_compaction_lease(session_id, holder, ttl_ms)
        })
    }

    fn release_compaction_lease(
        &self,
        py: Python<'_>,
        session_id: &str,
        holder: &str,
    ) -> PyResult<()> {
        self.with(py, |store| {
            store.release_compaction_lease(session_id, holder)
        })
    }
}
