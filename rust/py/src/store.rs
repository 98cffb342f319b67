//! The `Store` class: one core store behind a mutex, every call made with the
//! interpreter released, except the short ones an event loop makes that need not wait.

use std::sync::{Mutex, PoisonError, TryLockError};

use lossless_core::parts::{Role, ToolStatus};
use lossless_core::plan::Tail;
use lossless_core::profile::Profile;
use lossless_core::store::{self as core_store, Durability, GrepMode, OpenOptions, WriteEvent};
use lossless_core::Result;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use pyo3::IntoPyObjectExt;

use crate::arena;
use crate::convert;
use crate::errors::invalid;
use crate::prefix::ItemUnits;
use crate::recall;
use crate::release;
use crate::render_cache::RenderCache;
use crate::round::RoundRules;
use crate::span::{MessageIds, Span};
use crate::tokens::utf8;
use crate::turn_memo::TurnMemo;

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

fn open(path: &str, options: &OpenOptions, read_only: bool) -> Result<core_store::Store> {
    if read_only {
        core_store::Store::open_read_only(path, options)
    } else {
        core_store::Store::open(path, options)
    }
}

pub(crate) fn dict_of<'py>(
    py: Python<'py>,
    items: &[(&str, Bound<'py, PyAny>)],
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (key, value) in items {
        dict.set_item(*key, value)?;
    }
    Ok(dict)
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
        signature = (path, synchronous = Durability::Normal, busy_timeout_ms = 30000, read_only = false),
        text_signature = "(path, synchronous='normal', busy_timeout_ms=30000, read_only=False)"
    )]
    fn new(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        #[pyo3(from_py_with = convert::synchronous_arg)] synchronous: Durability,
        #[pyo3(from_py_with = convert::busy_timeout_arg)] busy_timeout_ms: i64,
        read_only: bool,
    ) -> PyResult<Self> {
        let path = convert::text(path, "path")?;
        let options =
            OpenOptions::new(synchronous, busy_timeout_ms).map_err(crate::errors::to_py_err)?;
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

    #[pyo3(signature = (model, config_json, system_prompt))]
    fn create_session(
        &self,
        py: Python<'_>,
        model: &Bound<'_, PyAny>,
        config_json: &Bound<'_, PyAny>,
        system_prompt: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let model = convert::text(model, "model")?;
        let config_json = convert::text(config_json, "config_json")?;
        let system_prompt = convert::maybe_text(system_prompt, "system_prompt")?;
        self.with(py, |store| {
            store.create_session(&model, &config_json, system_prompt.as_deref())
        })
    }

    fn get_session<'py>(
        &self,
        py: Python<'py>,
        session_id: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let session_id = convert::text(session_id, "session_id")?;
        let info = self.with(py, |store| store.session(&session_id).cloned())?;
        dict_of(
            py,
            &[
                ("id", obj(py, &info.id)?),
                ("model", obj(py, &info.model)?),
                ("created_at", obj(py, info.created_at)?),
                ("config_json", obj(py, &info.config)?),
                ("system_prompt", obj(py, info.system_prompt.as_deref())?),
            ],
        )
    }

    fn list_sessions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let rows = self.with(py, |store| store.list_sessions())?;
        let list = PyList::empty(py);
        for row in &rows {
            list.append(dict_of(
                py,
                &[
                    ("id", obj(py, &row.id)?),
                    ("model", obj(py, &row.model)?),
                    ("created_at", obj(py, row.created_at)?),
                    ("messages", obj(py, row.messages)?),
                    ("summaries", obj(py, row.summaries)?),
                ],
            )?)?;
        }
        Ok(list)
    }

    fn flag_interrupted(
        &self,
        py: Python<'_>,
        session_id: &str,
        message_ids: Vec<String>,
    ) -> PyResult<usize> {
        self.with(py, |store| store.flag_interrupted(session_id, &message_ids))
    }

    fn streams<'py>(&self, py: Python<'py>, session_id: &str) -> PyResult<Bound<'py, PyList>> {
        let rows = self.with(py, |store| store.streams(session_id))?;
        let list = PyList::empty(py);
        for row in rows {
            list.append(dict_of(
                py,
                &[
                    ("message_id", obj(py, row.message_id)?),
                    ("owner", obj(py, row.owner)?),
                    ("beat_at", obj(py, row.beat_at)?),
                    ("chars", obj(py, row.chars)?),
                ],
            )?)?;
        }
        Ok(list)
    }

    #[pyo3(signature = (message_id, owner, appended = None))]
    fn checkpoint_message(
        &self,
        py: Python<'_>,
        message_id: &str,
        owner: &str,
        appended: Option<Bound<'_, PyString>>,
    ) -> PyResult<()> {
        let appended = appended
            .as_ref()
            .map(|text| utf8(text, "appended"))
            .transpose()?;
        self.with(py, |store| {
            store.checkpoint_message(message_id, owner, appended)
        })
    }

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

    #[pyo3(
        signature = (session_id, budget_tokens, profile = Profile::default()),
        text_signature = "($self, session_id, budget_tokens, profile='default')"
    )]
    fn assemble<'py>(
        &self,
        py: Python<'py>,
        session_id: &Bound<'py, PyAny>,
        budget_tokens: &Bound<'py, PyAny>,
        #[pyo3(from_py_with = convert::profile_arg)] profile: Profile,
    ) -> PyResult<Bound<'py, PyTuple>> {
        self.assemble_with(py, session_id, budget_tokens, profile, false)
    }

    /// [`Store::assemble`] with a fifth member: the index of the newest `user`
    /// message in the list (-1 when there is none), where the arena's volatile
    /// block goes; and a sixth: the items as units of a request's print.
    #[pyo3(
        signature = (session_id, budget_tokens, profile = Profile::default()),
        text_signature = "($self, session_id, budget_tokens, profile='default')"
    )]
    fn assemble_placed<'py>(
        &self,
        py: Python<'py>,
        session_id: &Bound<'py, PyAny>,
        budget_tokens: &Bound<'py, PyAny>,
        #[pyo3(from_py_with = convert::profile_arg)] profile: Profile,
    ) -> PyResult<Bound<'py, PyTuple>> {
        self.assemble_with(py, session_id, budget_tokens, profile, true)
    }

    /// Applies arena writes (see `lossless_core::store::ArenaWrite`) in one
    /// transaction with the event `event` (its payload `payload_json`), if given.
    #[pyo3(signature = (session_id, writes, rules, event = None, payload_json = None))]
    fn arena_write<'py>(
        &self,
        py: Python<'py>,
        session_id: &str,
        writes: Vec<arena::WriteArgs>,
        rules: &arena::ArenaRules,
        event: Option<&str>,
        payload_json: Option<&str>,
    ) -> PyResult<Bound<'py, PyList>> {
        let event = match event {
            Some(name) => Some(
                WriteEvent::parse(name, payload_json.unwrap_or("{}"))
                    .map_err(crate::errors::to_py_err)?,
            ),
            None => None,
        };
        let ceiling = arena::ceiling(rules);
        let outcomes = self.with(py, |store| {
            let learned = arena::learned_caps(store, session_id, &rules.inner)?;
            let writes = arena::writes(writes, &rules.inner, learned.as_ref())?;
            store.arena_write(session_id, &writes, ceiling, event.as_ref())
        })?;
        arena::outcomes(py, &outcomes)
    }

    /// The live entries of a session's arena, oldest first.
    fn arena_entries<'py>(
        &self,
        py: Python<'py>,
        session_id: &str,
    ) -> PyResult<Bound<'py, PyList>> {
        let entries = self.quick(py, |store| store.arena_entries(session_id))?;
        let list = PyList::empty(py);
        for entry in entries.iter() {
            list.append(arena::entry_dict(py, entry)?)?;
        }
        Ok(list)
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
    ) -> PyResult<Bound<'py, PyDict>> {
        loop {
            let outcome = self.quick(py, |store| {
                self.turn.plan(store, session_id, rules, cap, &transient)
            })?;
            if let Some(dict) = self.turn.plan_dict(py, outcome)? {
                return Ok(dict);
            }
            // Another session's plan replaced the one found: plan anew.
            self.turn.forget_plan();
        }
    }

    /// The session's tool calls still waiting for their result: (call id, name).
    fn open_tool_calls(&self, py: Python<'_>, session_id: &str) -> PyResult<Vec<(String, String)>> {
        self.with(py, |store| store.open_tool_calls(session_id))
    }

    /// Takes in a sent turn's (demand, accepted, cut at write) per zone and the
    /// once-per-session entries it injected, as (zone, key, seq); stores the
    /// controller's state, with the event `event` when cap moved.
    #[pyo3(signature = (session_id, rules, zones, once, event = None))]
    fn arena_observe<'py>(
        &self,
        py: Python<'py>,
        session_id: &str,
        rules: &arena::ArenaRules,
        zones: Vec<(i64, i64, i64)>,
        once: Vec<arena::OnceArgs>,
        event: Option<&str>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let observed = self.with(py, |store| {
            arena::observe(store, session_id, &rules.inner, &zones, &once, event)
        })?;
        arena::observed_dict(py, &observed)
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
        self.with(py, |store| arena::reset(store, session_id, &event))
    }

    /// The newest user message of the view and the parts out of the view that
    /// match it best: (question or None, hits).
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
    fn recall<'py>(
        &self,
        py: Python<'py>,
        session_id: &str,
        question: &str,
        k: usize,
        max_tokens: usize,
    ) -> PyResult<Bound<'py, PyList>> {
        let hits = self.with(py, |store| {
            store.recall(session_id, question, k, max_tokens)
        })?;
        let list = PyList::empty(py);
        for hit in &hits {
            list.append(arena::hit_dict(py, hit)?)?;
        }
        Ok(list)
    }

    fn view_stats<'py>(
        &self,
        py: Python<'py>,
        session_id: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let session_id = convert::text(session_id, "session_id")?;
        let stats = self.quick(py, |store| store.view_stats(&session_id))?;
        dict_of(
            py,
            &[
                ("items", obj(py, stats.items)?),
                ("message_items", obj(py, stats.message_items)?),
                ("summary_items", obj(py, stats.summary_items)?),
                ("tokens", obj(py, stats.tokens)?),
                ("summary_tokens", obj(py, stats.summary_tokens)?),
                ("version", obj(py, stats.version)?),
                ("instruction_tokens", obj(py, stats.instruction_tokens)?),
            ],
        )
    }

    fn view_items<'py>(&self, py: Python<'py>, session_id: &str) -> PyResult<Bound<'py, PyList>> {
        let items = self.with(py, |store| store.view_items(session_id))?;
        let list = PyList::empty(py);
        for item in &items {
            list.append(dict_of(
                py,
                &[
                    ("position", obj(py, item.position)?),
                    ("kind", obj(py, item.kind.as_str())?),
                    ("id", obj(py, &item.id)?),
                    ("tokens", obj(py, item.tokens)?),
                    ("role", obj(py, item.role.map(Role::as_str))?),
                    ("seq", obj(py, item.seq)?),
                ],
            )?)?;
        }
        Ok(list)
    }

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

    #[pyo3(signature = (
        session_id, protect_tokens, minimum_tokens, protected_tools,
        protect_user_turns = 2, tail_tokens = None, tail_messages = None,
    ))]
    #[expect(
        clippy::too_many_arguments,
        reason = "mirrors the keyword arguments of the Python call"
    )]
    fn prune<'py>(
        &self,
        py: Python<'py>,
        session_id: &str,
        protect_tokens: i64,
        minimum_tokens: i64,
        protected_tools: Vec<String>,
        protect_user_turns: usize,
        tail_tokens: Option<i64>,
        tail_messages: Option<usize>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let tail = tail_rule(protect_user_turns, tail_tokens, tail_messages);
        let result = self.with(py, |store| {
            store.prune(
                session_id,
                protect_tokens,
                minimum_tokens,
                &protected_tools,
                tail,
            )
        })?;
        dict_of(
            py,
            &[
                ("candidates", obj(py, result.candidates)?),
                ("pruned_parts", obj(py, result.pruned_parts)?),
                ("tokens_saved", obj(py, result.tokens_saved)?),
            ],
        )
    }

    #[pyo3(signature = (session_id, protect_user_turns = 2, tail_tokens = None, tail_messages = None))]
    fn compaction_span(
        &self,
        py: Python<'_>,
        session_id: &str,
        protect_user_turns: usize,
        tail_tokens: Option<i64>,
        tail_messages: Option<usize>,
    ) -> PyResult<Span> {
        let tail = tail_rule(protect_user_turns, tail_tokens, tail_messages);
        let inner = self.with(py, |store| store.compaction_span(session_id, tail))?;
        Ok(Span { inner })
    }

    #[pyo3(signature = (message_ids, max_chars_per_message = None, max_tokens = None))]
    fn transcript<'py>(
        &self,
        py: Python<'py>,
        message_ids: MessageIds<'py>,
        max_chars_per_message: Option<usize>,
        max_tokens: Option<i64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let ids = message_ids.ids();
        let result = self.with(py, |store| {
            store.transcript(ids, max_chars_per_message, max_tokens)
        })?;
        text_result(py, &result, message_ids.is_list())
    }

    fn truncate_summary<'py>(
        &self,
        py: Python<'py>,
        message_ids: MessageIds<'py>,
        target_tokens: i64,
    ) -> PyResult<Bound<'py, PyDict>> {
        let ids = message_ids.ids();
        let result = self.with(py, |store| store.truncate_summary(ids, target_tokens))?;
        text_result(py, &result, message_ids.is_list())
    }

    fn extractive_summary<'py>(
        &self,
        py: Python<'py>,
        message_ids: MessageIds<'py>,
        max_tokens: i64,
    ) -> PyResult<Bound<'py, PyDict>> {
        let ids = message_ids.ids();
        let result = self.with(py, |store| store.extractive_summary(ids, max_tokens))?;
        text_result(py, &result, message_ids.is_list())
    }

    fn live_summaries<'py>(
        &self,
        py: Python<'py>,
        session_id: &str,
    ) -> PyResult<Bound<'py, PyList>> {
        let rows = self.with(py, |store| store.live_summaries(session_id))?;
        let list = PyList::empty(py);
        for row in &rows {
            list.append(convert::summary_row(py, row)?)?;
        }
        Ok(list)
    }

    fn condense_truncate<'py>(
        &self,
        py: Python<'py>,
        summary_ids: Vec<String>,
        max_tokens: i64,
    ) -> PyResult<Bound<'py, PyDict>> {
        let result = self.with(py, |store| {
            store.condense_truncate(&summary_ids, max_tokens)
        })?;
        text_result(py, &result, true)
    }

    #[pyo3(signature = (session_id, text, level, source_message_ids, source_summary_ids, expected_view_version = None))]
    #[expect(
        clippy::too_many_arguments,
        reason = "mirrors the keyword arguments of the Python method"
    )]
    fn commit_summary<'py>(
        &self,
        py: Python<'py>,
        session_id: &str,
        text: &Bound<'py, PyAny>,
        level: i64,
        source_message_ids: MessageIds<'py>,
        source_summary_ids: Vec<String>,
        expected_view_version: Option<i64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let text = convert::text(text, "text")?;
        let message_ids = source_message_ids.ids();
        let result = self.with(py, |store| {
            store.commit_summary(
                session_id,
                &text,
                level,
                message_ids,
                &source_summary_ids,
                expected_view_version,
            )
        })?;
        commit_result(py, &result)
    }

    fn commit_extractive_summary<'py>(
        &self,
        py: Python<'py>,
        span: Bound<'py, Span>,
        max_tokens: i64,
    ) -> PyResult<Bound<'py, PyDict>> {
        let inner = &span.get().inner;
        let result = self.with(py, |store| {
            store.commit_extractive_summary(inner, max_tokens)
        })?;
        let committed = match &result.committed {
            Some(commit) => commit_result(py, commit)?.into_any(),
            None => py.None().into_bound(py),
        };
        dict_of(
            py,
            &[
                ("text", obj(py, &result.text)?),
                ("token_count", obj(py, result.token_count)?),
                ("message_count", obj(py, inner.message_ids.len())?),
                ("file_ids", obj(py, &result.file_ids)?),
                ("committed", committed),
            ],
        )
    }

    /// One compaction round's store work (see the core's `Store::compaction_round`).
    fn compaction_round<'py>(
        &self,
        py: Python<'py>,
        session_id: &str,
        rules: Bound<'py, RoundRules>,
        before: i64,
        model_summary: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let rules = &rules.get().inner;
        let writer = if model_summary {
            core_store::LeafWriter::Model
        } else {
            core_store::LeafWriter::BuiltIn
        };
        let outcome = self.with(py, |store| {
            store.compaction_round(session_id, rules, before, writer)
        })?;
        round_result(py, outcome)
    }

    fn session_file_ids(
        &self,
        py: Python<'_>,
        session_id: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<String>> {
        let session_id = convert::text(session_id, "session_id")?;
        self.with(py, |store| store.session_file_ids(&session_id))
    }

    #[pyo3(
        signature = (query, session_id = None, mode = GrepMode::Text, limit = 20),
        text_signature = "($self, query, session_id=None, mode='text', limit=20)"
    )]
    fn grep<'py>(
        &self,
        py: Python<'py>,
        query: &Bound<'py, PyAny>,
        session_id: Option<&Bound<'py, PyAny>>,
        #[pyo3(from_py_with = convert::mode_arg)] mode: GrepMode,
        #[pyo3(from_py_with = convert::limit_arg)] limit: i64,
    ) -> PyResult<Bound<'py, PyList>> {
        let query = convert::text(query, "query")?;
        let session_id = convert::maybe_text(session_id, "session_id")?;
        let limit = usize::try_from(limit)
            .ok()
            .filter(|limit| *limit >= 1)
            .ok_or_else(|| invalid("limit", "must be at least 1"))?;
        let hits = self.with(py, |store| {
            store.grep(&query, session_id.as_deref(), mode, limit)
        })?;
        let list = PyList::empty(py);
        for hit in &hits {
            list.append(dict_of(
                py,
                &[
                    ("session_id", obj(py, &hit.session_id)?),
                    ("owner_kind", obj(py, hit.owner_kind)?),
                    ("owner_id", obj(py, &hit.owner_id)?),
                    ("part_id", obj(py, hit.part_id.as_deref())?),
                    ("snippet", obj(py, &hit.snippet)?),
                    ("rank", obj(py, hit.rank)?),
                    (
                        "covering_summary_id",
                        obj(py, hit.covering_summary_id.as_deref())?,
                    ),
                    ("leaf_summary_id", obj(py, hit.leaf_summary_id.as_deref())?),
                ],
            )?)?;
        }
        Ok(list)
    }

    #[pyo3(signature = (session_id = None, summary_id = None))]
    fn describe<'py>(
        &self,
        py: Python<'py>,
        session_id: Option<&Bound<'py, PyAny>>,
        summary_id: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let session_id = convert::maybe_text(session_id, "session_id")?;
        let summary_id = convert::maybe_text(summary_id, "summary_id")?;
        let nodes = self.with(py, |store| {
            store.describe(session_id.as_deref(), summary_id.as_deref())
        })?;
        let list = PyList::empty(py);
        for node in &nodes {
            let dict = convert::summary_row(py, &node.summary)?;
            dict.set_item("live", node.live)?;
            dict.set_item("source_kind", &node.source_kind)?;
            dict.set_item("sources", &node.sources)?;
            list.append(dict)?;
        }
        Ok(list)
    }

    #[pyo3(signature = (summary_id, max_tokens, around = None, query = None, before = None, after = None))]
    #[expect(
        clippy::too_many_arguments,
        reason = "mirrors the keyword arguments of the Python function"
    )]
    fn expand<'py>(
        &self,
        py: Python<'py>,
        summary_id: &Bound<'py, PyAny>,
        max_tokens: &Bound<'py, PyAny>,
        around: Option<&Bound<'py, PyAny>>,
        query: Option<&Bound<'py, PyAny>>,
        before: Option<&Bound<'py, PyAny>>,
        after: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let summary_id = convert::text(summary_id, "summary_id")?;
        let max_tokens = convert::int(max_tokens, "max_tokens")?;
        let focus = recall::focus(around, query, before, after)?;
        let expansion = self.with(py, |store| {
            store.expand_window(&summary_id, &focus, max_tokens)
        })?;
        recall::expansion(py, &expansion)
    }

    #[pyo3(signature = (message_id, max_tokens, cursor = None))]
    fn read_message<'py>(
        &self,
        py: Python<'py>,
        message_id: &Bound<'py, PyAny>,
        max_tokens: &Bound<'py, PyAny>,
        cursor: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let message_id = convert::text(message_id, "message_id")?;
        let max_tokens = convert::int(max_tokens, "max_tokens")?;
        let cursor = cursor.filter(|value| !value.is_none());
        let cursor = usize::try_from(cursor.map_or(Ok(0), |value| convert::int(value, "cursor"))?)
            .map_err(|_| invalid("cursor", "must be at least 0"))?;
        let read = self.with(py, |store| {
            store.read_message(&message_id, cursor, max_tokens)
        })?;
        recall::message_read(py, &read)
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

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let stats = self.with(py, |store| store.stats())?;
        dict_of(
            py,
            &[
                ("sessions", obj(py, stats.sessions)?),
                ("messages", obj(py, stats.messages)?),
                ("parts", obj(py, stats.parts)?),
                ("summaries", obj(py, stats.summaries)?),
                ("live_summaries", obj(py, stats.live_summaries)?),
                ("compactions", obj(py, stats.compactions)?),
                ("tokens_stored", obj(py, stats.tokens_stored)?),
                ("tokens_in_view", obj(py, stats.tokens_in_view)?),
                ("tombstones", obj(py, stats.tombstones)?),
                ("events", obj(py, stats.events)?),
            ],
        )
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

/// A round's outcome as a dict.
fn round_result(py: Python<'_>, outcome: core_store::RoundOutcome) -> PyResult<Bound<'_, PyDict>> {
    let saved = outcome.saved();
    let pruned = dict_of(
        py,
        &[
            ("candidates", obj(py, outcome.pruned.candidates)?),
            ("pruned_parts", obj(py, outcome.pruned.pruned_parts)?),
            ("tokens_saved", obj(py, outcome.pruned.tokens_saved)?),
        ],
    )?;
    let committed = PyList::empty(py);
    for (commit, level, messages) in &outcome.committed {
        let entry = commit_result(py, commit)?;
        entry.set_item("level", level)?;
        entry.set_item("messages", messages)?;
        committed.append(entry)?;
    }
    let span = match outcome.span {
        Some(inner) => Bound::new(py, Span { inner })?.into_any(),
        None => py.None().into_bound(py),
    };
    dict_of(
        py,
        &[
            ("pruned", pruned.into_any()),
            ("span", span),
            ("target", obj(py, outcome.target)?),
            ("span_messages", obj(py, outcome.span_messages)?),
            ("committed", committed.into_any()),
            ("attempts", obj(py, outcome.attempts)?),
            ("view_after", obj(py, outcome.view_after)?),
            ("saved", obj(py, saved)?),
        ],
    )
}

/// A commit's result as a dict.
fn commit_result<'py>(
    py: Python<'py>,
    result: &core_store::CommitResult,
) -> PyResult<Bound<'py, PyDict>> {
    dict_of(
        py,
        &[
            ("summary_id", obj(py, &result.summary_id)?),
            ("token_count", obj(py, result.token_count)?),
            ("tokens_before", obj(py, result.tokens_before)?),
            ("tokens_after", obj(py, result.tokens_after)?),
            ("messages_covered", obj(py, result.messages_covered)?),
            ("file_ids", obj(py, &result.file_ids)?),
        ],
    )
}

/// A text result as a dict; with `with_ids`, the ids of the messages it covers
/// too (`message_count` always).
fn text_result<'py>(
    py: Python<'py>,
    result: &core_store::TextResult,
    with_ids: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = dict_of(
        py,
        &[
            ("text", obj(py, &result.text)?),
            ("token_count", obj(py, result.token_count)?),
            ("message_count", obj(py, result.message_ids.len())?),
            ("file_ids", obj(py, &result.file_ids)?),
        ],
    )?;
    if with_ids {
        dict.set_item("message_ids", &result.message_ids)?;
    }
    Ok(dict)
}

/// The protected tail a round leaves alone; an absent bound is no bound.
fn tail_rule(user_turns: usize, tokens: Option<i64>, messages: Option<usize>) -> Tail {
    Tail {
        user_turns,
        max_tokens: tokens.unwrap_or(i64::MAX),
        max_messages: messages.unwrap_or(usize::MAX),
    }
}

impl Store {
    fn assemble_with<'py>(
        &self,
        py: Python<'py>,
        session_id: &Bound<'py, PyAny>,
        budget_tokens: &Bound<'py, PyAny>,
        profile: Profile,
        placed: bool,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let session_id = convert::text(session_id, "session_id")?;
        let budget_tokens = convert::int(budget_tokens, "budget_tokens")?;
        let assembled = self.quick(py, |store| store.assemble(&session_id, budget_tokens))?;
        if !profile.is_default() {
            return profiled(py, &assembled, profile, placed);
        }
        // Never wait for the cache while holding the interpreter: a thread that holds
        // the cache may be waiting for the interpreter. Busy means build afresh.
        let lists = match self.rendered.try_lock() {
            Ok(mut cache) => {
                cache.build_lists(py, &session_id, &assembled.items, assembled.marker)?
            }
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner().build_lists(
                py,
                &session_id,
                &assembled.items,
                assembled.marker,
            )?,
            Err(TryLockError::WouldBlock) => RenderCache::default().build_lists(
                py,
                &session_id,
                &assembled.items,
                assembled.marker,
            )?,
        };
        let mut members = vec![
            lists.messages.into_any(),
            obj(py, assembled.tokens)?,
            lists.item_ids.into_any(),
            obj(py, assembled.omitted)?,
        ];
        if placed {
            members.push(obj(py, newest_user(assembled.messages().map(|m| m.role)))?);
            members.push(Bound::new(py, ItemUnits::of(&assembled))?.into_any());
        }
        PyTuple::new(py, members)
    }
}

/// Index of the last `user` role among `roles`, or -1.
fn newest_user<'a>(roles: impl Iterator<Item = &'a str>) -> i64 {
    let mut newest = -1;
    for (at, role) in roles.enumerate() {
        if role == "user" {
            newest = at as i64;
        }
    }
    newest
}

/// An assembly as a stricter target takes it: rewritten by `profile`, and built
/// afresh (the rewritten messages are not the cached renderings).
fn profiled<'py>(
    py: Python<'py>,
    assembled: &core_store::Assembled,
    profile: Profile,
    placed: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    let messages = profile.apply(assembled.messages().cloned().collect());
    let list = PyList::empty(py);
    for message in &messages {
        list.append(convert::chat_message(py, message)?)?;
    }
    let ids: Vec<&str> = assembled.item_ids().collect();
    let mut members = vec![
        list.into_any(),
        obj(py, assembled.tokens)?,
        PyList::new(py, ids)?.into_any(),
        obj(py, assembled.omitted)?,
    ];
    if placed {
        members.push(obj(py, newest_user(messages.iter().map(|m| m.role)))?);
        members.push(Bound::new(py, ItemUnits::of(assembled))?.into_any());
    }
    PyTuple::new(py, members)
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
