//! Python copies of rendered chat messages, reused across assemblies.
//!
//! The core hands out each view item's rendering as an `Arc` and keeps the same
//! `Arc` until the item changes, so its address identifies one rendering. Building
//! the dicts is most of an assembly's cost; reusing them makes a turn's cost grow
//! with what changed, not with the size of the view.

use std::collections::HashMap;
use std::sync::Arc;

use lossless_core::store::RenderedItem;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use crate::convert;

/// Sessions whose renderings are kept at once.
const SESSIONS: usize = 16;

/// The Python objects built for one rendering.
struct Entry {
    /// Held so that its address is not reused while the entry lives.
    rendered: Arc<RenderedItem>,
    dicts: Vec<Py<PyDict>>,
    id: Py<PyString>,
}

impl Entry {
    /// Fresh copies of the dicts, nested `tool_calls` included, so a caller that
    /// changes what it got cannot change the cache or another assembly.
    fn copies<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.dicts
            .iter()
            .zip(&self.rendered.messages)
            .map(|(dict, message)| {
                let copy = dict.bind(py).copy()?;
                if !message.tool_calls.is_empty() {
                    copy.set_item("tool_calls", convert::tool_calls(py, &message.tool_calls)?)?;
                }
                Ok(copy)
            })
            .collect()
    }
}

impl Entry {
    fn key(&self) -> usize {
        key(&self.rendered)
    }
}

fn key(rendered: &Arc<RenderedItem>) -> usize {
    Arc::as_ptr(rendered) as usize
}

#[derive(Default)]
pub struct RenderCache {
    /// Per session, the entries of its last assembly, in order.
    sessions: HashMap<String, Vec<Entry>>,
}

/// An assembly as Python lists: the chat messages, and the ids of the view items.
pub struct Lists<'py> {
    pub messages: Bound<'py, PyList>,
    pub item_ids: Bound<'py, PyList>,
}

impl RenderCache {
    /// The chat messages of `items` as a fresh list of fresh dicts (callers may mutate
    /// them), building only the dicts of renderings not seen in the last assembly.
    /// The item at `marker` is no view item: its id is not listed.
    pub fn build_lists<'py>(
        &mut self,
        py: Python<'py>,
        session_id: &str,
        items: &[Arc<RenderedItem>],
        marker: Option<usize>,
    ) -> PyResult<Lists<'py>> {
        if !self.sessions.contains_key(session_id) && self.sessions.len() >= SESSIONS {
            self.sessions.clear();
        }
        let mut previous = Previous::new(self.sessions.remove(session_id).unwrap_or_default());
        let mut current = Vec::with_capacity(items.len());
        let messages = PyList::empty(py);
        for rendered in items {
            let entry = match previous.take(key(rendered)) {
                Some(entry) => entry,
                None => new_entry(py, rendered)?,
            };
            for copy in entry.copies(py)? {
                messages.append(copy)?;
            }
            current.push(entry);
        }
        let item_ids = PyList::empty(py);
        for (position, entry) in current.iter().enumerate() {
            if Some(position) != marker {
                item_ids.append(entry.id.bind(py))?;
            }
        }
        self.sessions.insert(session_id.to_string(), current);
        Ok(Lists { messages, item_ids })
    }
}

/// The entries of the last assembly, taken out in the order the new one needs
/// them. Consecutive assemblies mostly share a run of items in the same order, so
/// the next entry is tried first; a lookup table is built only on the first miss.
struct Previous {
    entries: Vec<Option<Entry>>,
    next: usize,
    by_key: Option<HashMap<usize, usize>>,
}

impl Previous {
    fn new(entries: Vec<Entry>) -> Self {
        Self {
            entries: entries.into_iter().map(Some).collect(),
            next: 0,
            by_key: None,
        }
    }

    fn take(&mut self, key: usize) -> Option<Entry> {
        let in_order = self
            .entries
            .get(self.next)
            .and_then(Option::as_ref)
            .is_some_and(|entry| entry.key() == key);
        let index = if in_order {
            self.next
        } else {
            let entries = &self.entries;
            let by_key = self.by_key.get_or_insert_with(|| {
                entries
                    .iter()
                    .enumerate()
                    .filter_map(|(index, entry)| Some((entry.as_ref()?.key(), index)))
                    .collect()
            });
            *by_key.get(&key)?
        };
        self.next = index + 1;
        self.entries[index].take()
    }
}

fn new_entry(py: Python<'_>, rendered: &Arc<RenderedItem>) -> PyResult<Entry> {
    let dicts = rendered
        .messages
        .iter()
        .map(|message| convert::chat_message(py, message).map(Bound::unbind))
        .collect::<PyResult<_>>()?;
    Ok(Entry {
        rendered: Arc::clone(rendered),
        dicts,
        id: PyString::new(py, &rendered.id).unbind(),
    })
}
