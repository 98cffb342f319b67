//! Assembling a session's context, and the sizes and items of its view.

use std::sync::TryLockError;

use lossless_core::profile::Profile;
use lossless_core::store::{self as core_store};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::arena_rows::ViewItemRow;
use crate::convert;
use crate::prefix::ItemUnits;
use crate::render_cache::RenderCache;
use crate::results::result_class;

use super::{obj, Store};

#[pymethods]
impl Store {
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

    /// [`Store::assemble_placed`] without the chat messages, for a request sent in
    /// another format (see `formats.rs`): the tokens, the item ids, how many were
    /// left out, the index of the newest `user` message (-1 when none) and the
    /// items, which hold their renderings.
    fn assemble_items<'py>(
        &self,
        py: Python<'py>,
        session_id: &Bound<'py, PyAny>,
        budget_tokens: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let session_id = convert::text(session_id, "session_id")?;
        let budget_tokens = convert::int(budget_tokens, "budget_tokens")?;
        let assembled = self.quick(py, |store| store.assemble(&session_id, budget_tokens))?;
        let ids: Vec<&str> = assembled.item_ids().collect();
        PyTuple::new(
            py,
            [
                obj(py, assembled.tokens)?,
                PyList::new(py, ids)?.into_any(),
                obj(py, assembled.omitted)?,
                obj(py, newest_user(assembled.messages().map(|m| m.role)))?,
                Bound::new(py, ItemUnits::of(&assembled))?.into_any(),
            ],
        )
    }

    fn view_stats(&self, py: Python<'_>, session_id: &Bound<'_, PyAny>) -> PyResult<ViewStats> {
        let session_id = convert::text(session_id, "session_id")?;
        let stats = self.quick(py, |store| store.view_stats(&session_id))?;
        Ok(ViewStats::from(stats))
    }

    fn view_items(&self, py: Python<'_>, session_id: &str) -> PyResult<Vec<ViewItemRow>> {
        let items = self.with(py, |store| store.view_items(session_id))?;
        Ok(items.iter().map(ViewItemRow::from).collect())
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
            members.push(obj(py, lists.newest_user)?);
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
    let mut newest = -1;
    for (message, added) in convert::chat_completions(&messages) {
        if !added && message.role == "user" {
            newest = list.len() as i64;
        }
        list.append(convert::chat_message(py, &message)?)?;
    }
    let ids: Vec<&str> = assembled.item_ids().collect();
    let mut members = vec![
        list.into_any(),
        obj(py, assembled.tokens)?,
        PyList::new(py, ids)?.into_any(),
        obj(py, assembled.omitted)?,
    ];
    if placed {
        members.push(obj(py, newest)?);
        members.push(Bound::new(py, ItemUnits::of(assembled))?.into_any());
    }
    PyTuple::new(py, members)
}

result_class! {
    eq;
    /// The sizes of a session's view. Also read by name (`stats["tokens"]`), as the
    /// mapping the call returned before it had a type of its own.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct ViewStats {
        items: i64,
        message_items: i64,
        summary_items: i64,
        tokens: i64,
        summary_tokens: i64,
        version: i64,
        instruction_tokens: i64,
    }
}

impl From<lossless_core::model::ViewStats> for ViewStats {
    fn from(stats: lossless_core::model::ViewStats) -> Self {
        Self {
            items: stats.items,
            message_items: stats.message_items,
            summary_items: stats.summary_items,
            tokens: stats.tokens,
            summary_tokens: stats.summary_tokens,
            version: stats.version,
            instruction_tokens: stats.instruction_tokens,
        }
    }
}
