//! The event tape and the compaction lease.

use lossless_core::store::{EventPage, EventRow as CoreEventRow};
use pyo3::prelude::*;

use crate::convert;
use crate::results::result_class;

use super::Store;

#[pymethods]
impl Store {
    /// Appends an event; its seq. Without `wait`, `None` where the write would
    /// wait (see [`Store::write`]).
    #[pyo3(signature = (session_id, name, payload_json, wait = true))]
    fn append_event(
        &self,
        py: Python<'_>,
        session_id: &str,
        name: &str,
        payload_json: &str,
        wait: bool,
    ) -> PyResult<Option<i64>> {
        let append = |store: &mut lossless_core::store::Store| {
            store.append_event(session_id, name, payload_json)
        };
        if wait {
            self.quick(py, append).map(Some)
        } else {
            self.write(py, false, append)
        }
    }

    fn events(&self, py: Python<'_>, session_id: &Bound<'_, PyAny>) -> PyResult<Vec<EventRow>> {
        let session_id = convert::text(session_id, "session_id")?;
        let rows = self.with(py, |store| store.events(&session_id))?;
        Ok(rows.into_iter().map(EventRow::from).collect())
    }

    /// A page of the session's events (see the core's `Store::events_page`).
    #[pyo3(signature = (session_id, *, after = None, before = None, name = None, limit = 100, newest_first = false))]
    #[expect(
        clippy::too_many_arguments,
        reason = "one keyword per bound of the page"
    )]
    fn events_page(
        &self,
        py: Python<'_>,
        session_id: &Bound<'_, PyAny>,
        after: Option<i64>,
        before: Option<i64>,
        name: Option<&str>,
        limit: i64,
        newest_first: bool,
    ) -> PyResult<Vec<EventRow>> {
        let session_id = convert::text(session_id, "session_id")?;
        let page = EventPage {
            after,
            before,
            name,
            limit,
            newest_first,
        };
        let rows = self.with(py, |store| store.events_page(&session_id, &page))?;
        Ok(rows.into_iter().map(EventRow::from).collect())
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

result_class! {
    eq;
    /// One event of a session's tape, its payload as JSON text.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct EventRow {
        id: String,
        seq: i64,
        name: String,
        payload_json: String,
        created_at: i64,
    }
}

impl From<CoreEventRow> for EventRow {
    fn from(row: CoreEventRow) -> Self {
        Self {
            id: row.id,
            seq: row.seq,
            name: row.name,
            payload_json: row.payload,
            created_at: row.created_at,
        }
    }
}
