//! The `Store` class: one core store behind a mutex, every call made with the
//! interpreter released, except the short ones an event loop makes that need not wait.

use std::sync::{Mutex, PoisonError, TryLockError};

use lossless_core::store::{self as core_store, Durability, OpenOptions};
use lossless_core::Result;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

use crate::convert;
use crate::release;
use crate::render_cache::RenderCache;
use crate::results::result_class;
use crate::turn_memo::TurnMemo;

mod arena;
mod compaction;
mod context;
mod erasure;
mod events;
mod ledger;
mod lineage;
mod media;
mod search;
mod sessions;
mod turns;

pub use context::ViewStats;
pub use erasure::{ErasureReceipt, RetentionRuleRow};
pub use events::EventRow;
pub use ledger::{ledger_subject, LedgerItemRow, LedgerUpdateResult};
pub use lineage::ForkRow;
pub use search::{DagRow, GrepRow};
pub use sessions::{SessionInfo, SessionRow, StreamRow};
pub use turns::{AppendResult, MessageRecord, TurnAppendResult};

/// A connection to a lossless database.
// `weakref`: whoever keeps track of stores (a test that nothing holds one after
// closing, a pool) can without keeping them open.
#[pyclass(frozen, weakref)]
pub struct Store {
    /// The core store; `None` once a PostgreSQL store is closed, until its next call
    /// connects again.
    inner: Mutex<Option<core_store::Store>>,
    path: String,
    /// `path` as errors name it: a URL without its password.
    shown: String,
    /// How the store was opened, to connect again after [`Store::close`].
    options: OpenOptions,
    read_only: bool,
    rendered: Mutex<RenderCache>,
    turn: TurnMemo,
}

impl Store {
    /// Runs `work` on the core store with the interpreter released.
    pub(crate) fn with<T, F>(&self, py: Python<'_>, work: F) -> PyResult<T>
    where
        F: FnOnce(&mut core_store::Store) -> Result<T> + Send,
        T: Send,
    {
        release(py, || {
            // A panic while holding the lock cannot leave a half-written transaction
            // behind (SQLite rolls it back), so the store stays usable.
            let mut store = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            if store.is_none() {
                *store = Some(open(&self.path, &self.options, self.read_only)?);
            }
            let store = store.as_mut().ok_or_else(closed)?;
            work(store).map_err(|err| err.with_path(&self.shown))
        })
    }
}

impl Store {
    /// Runs the write `work`: with `wait`, as [`Store::with`] does; without, only if
    /// no other thread is using this connection, with the interpreter held and
    /// nothing waited for (the core's `without_waiting`), `None` where it would
    /// have waited. A write made on the event loop tries that first: a worker
    /// thread's round trip, and its wait for the interpreter, cost more than the
    /// write itself.
    pub(crate) fn write<T, F>(&self, py: Python<'_>, wait: bool, work: F) -> PyResult<Option<T>>
    where
        F: FnOnce(&mut core_store::Store) -> Result<T> + Send,
        T: Send,
    {
        if wait {
            return self.with(py, work).map(Some);
        }
        let mut store = match self.inner.try_lock() {
            Ok(store) => store,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return Ok(None),
        };
        let Some(store) = store.as_mut() else {
            // Closed: connecting again may wait.
            return Ok(None);
        };
        lossless_core::error::catch_panic(|| store.without_waiting(work))
            .map_err(|err| crate::errors::to_py_err(err.with_path(&self.shown)))
    }

    /// Runs the short call `work` (a turn's read, or an event's write) keeping the
    /// interpreter when it can run without waiting, else as [`Store::with`]. Made
    /// on the event loop, a call that lets go of the interpreter gets it back only
    /// after whatever thread took it meanwhile (litellm's logging of the last
    /// stream, typically) has run its slice: work the loop would otherwise leave
    /// for when it waits on the network comes first, on the turn's path
    /// (decision 123).
    pub(crate) fn quick<T, F>(&self, py: Python<'_>, work: F) -> PyResult<T>
    where
        F: Fn(&mut core_store::Store) -> Result<T> + Send + Sync,
        T: Send,
    {
        match self.write(py, false, &work)? {
            Some(done) => Ok(done),
            None => self.with(py, work),
        }
    }
}

/// The error of a call on a closed store.
fn closed() -> lossless_core::Error {
    lossless_core::Error::invalid("store", "the store is closed")
}

impl Store {
    fn opened(
        py: Python<'_>,
        path: String,
        options: OpenOptions,
        read_only: bool,
    ) -> PyResult<Self> {
        let store = release(py, || open(&path, &options, read_only))?;
        Ok(Self {
            inner: Mutex::new(Some(store)),
            shown: lossless_core::pg::redact(&path),
            path,
            options,
            read_only,
            rendered: Mutex::new(RenderCache::default()),
            turn: TurnMemo::default(),
        })
    }
}

fn open(path: &str, options: &OpenOptions, read_only: bool) -> Result<core_store::Store> {
    if read_only {
        core_store::Store::open_read_only(path, options)
    } else {
        core_store::Store::open(path, options)
    }
}

pub(crate) fn obj<'py, T: IntoPyObject<'py>>(
    py: Python<'py>,
    value: T,
) -> PyResult<Bound<'py, PyAny>> {
    value.into_bound_py_any(py)
}

#[pymethods]
impl Store {
    #[new]
    // The text signatures spell the defaults PyO3 can only show as `...`: they are
    // not literals where the argument is parsed on extraction.
    #[pyo3(
        signature = (path, synchronous = Durability::Normal, busy_timeout_ms = 30000, read_only = false, key = None),
        text_signature = "(path, synchronous='normal', busy_timeout_ms=30000, read_only=False, key=None)"
    )]
    fn new(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        #[pyo3(from_py_with = convert::synchronous_arg)] synchronous: Durability,
        #[pyo3(from_py_with = convert::busy_timeout_arg)] busy_timeout_ms: i64,
        read_only: bool,
        key: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let path = convert::text(path, "path")?;
        let options = OpenOptions::new(synchronous, busy_timeout_ms)
            .map_err(crate::errors::to_py_err)?
            .with_key(crate::encryption::key_arg(key)?);
        Self::opened(py, path, options, read_only)
    }

    /// Another connection to this store's database, opened with the same options
    /// and key; read-only with `read_only`.
    #[pyo3(signature = (read_only = false))]
    fn reopen(&self, py: Python<'_>, read_only: bool) -> PyResult<Self> {
        Self::opened(py, self.path.clone(), self.options.clone(), read_only)
    }

    /// Ends the connection once the call using it (if any) returns; a later call
    /// connects again. On PostgreSQL that gives a slot on the server back; the last
    /// store of this process on a SQLite file first empties the write-ahead log
    /// into the file, so the file alone holds everything. A private in-memory
    /// database stays open: closing it would lose it.
    fn close(&self, py: Python<'_>) {
        if self.path == ":memory:" || self.path.is_empty() {
            return;
        }
        py.detach(|| {
            let store = self
                .inner
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some(store) = store {
                store.close();
            }
        });
    }

    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    /// Whether this store was opened read-only.
    #[getter]
    fn read_only(&self, py: Python<'_>) -> PyResult<bool> {
        self.with(py, |store| Ok(store.is_read_only()))
    }

    fn schema_version(&self, py: Python<'_>) -> PyResult<i64> {
        self.with(py, |store| store.schema_version())
    }

    /// Moves the text waiting for the full-text index into it; returns the rows written.
    fn set_checkpoint_pages(&self, py: Python<'_>, pages: u32) -> PyResult<()> {
        self.with(py, |store| {
            store.set_checkpoint_pages(pages);
            Ok(())
        })
    }

    fn flush_search_index(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, core_store::Store::flush_search_index)
    }

    /// Rows waiting for the full-text index.
    fn search_backlog(&self, py: Python<'_>) -> PyResult<i64> {
        self.with(py, |store| store.search_backlog())
    }

    fn stats(&self, py: Python<'_>) -> PyResult<StoreStats> {
        let stats = self.with(py, |store| store.stats())?;
        Ok(StoreStats::from(stats))
    }
}

result_class! {
    eq;
    /// Counts over the whole database.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct StoreStats {
        sessions: i64,
        messages: i64,
        parts: i64,
        summaries: i64,
        live_summaries: i64,
        compactions: i64,
        tokens_stored: i64,
        tokens_in_view: i64,
        tombstones: i64,
        events: i64,
    }
}

impl From<core_store::StoreStats> for StoreStats {
    fn from(stats: core_store::StoreStats) -> Self {
        Self {
            sessions: stats.sessions,
            messages: stats.messages,
            parts: stats.parts,
            summaries: stats.summaries,
            live_summaries: stats.live_summaries,
            compactions: stats.compactions,
            tokens_stored: stats.tokens_stored,
            tokens_in_view: stats.tokens_in_view,
            tombstones: stats.tombstones,
            events: stats.events,
        }
    }
}
