//! Python copies of rendered chat messages, reused across assemblies.
//!
//! The core keeps each view item's rendering until the item changes and names it
//! by a generation no other rendering has: the copies here are kept by that
//! number, so the core alone decides when a rendering is stale. Building the dicts
//! is most of an assembly's cost; reusing them makes a turn's cost grow with what
//! changed, not with the size of the view.

use std::collections::HashMap;
use std::sync::Arc;

use lossless_core::model::Generation;
use lossless_core::render::{ChatMessage, ReasoningBlock};
use lossless_core::store::RenderedItem;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use crate::convert;

/// Sessions whose renderings are kept at once.
const SESSIONS: usize = 16;

/// The Python objects built for one rendering.
struct Entry {
    generation: Generation,
    messages: Vec<CachedMessage>,
    id: Py<PyString>,
}

/// One chat message as built once, with its tool calls' dicts at hand: every copy
/// needs them anew, so that a caller (or litellm) changing the `tool_calls` it got
/// cannot change the cache or another assembly. Strings are shared: they cannot change.
struct CachedMessage {
    dict: Py<PyDict>,
    /// Each call's entry dict and its `function` dict.
    calls: Vec<(Py<PyDict>, Py<PyDict>)>,
    /// The reasoning blocks sent back, parsed anew for every copy (a block may
    /// nest dicts a caller could change).
    reasoning: Vec<ReasoningBlock>,
    /// The content list's parts, each with its inner dict, when the content is a
    /// list: copied for every copy (the data URL strings are shared).
    content: Option<Vec<ContentPart>>,
    /// Whether this is a message of the session's own (not one that carries the
    /// attachments of the messages before it).
    own: bool,
    /// Whether its role is `user`.
    user: bool,
}

/// A content part's dict, with its inner `image_url` or `file` dict.
type ContentPart = (Py<PyDict>, Option<Py<PyDict>>);

impl CachedMessage {
    fn new(py: Python<'_>, message: &ChatMessage, own: bool) -> PyResult<Self> {
        let dict = convert::chat_message(py, message)?;
        let mut content = None;
        if let Some(list) = dict.get_item(intern!(py, "content"))? {
            if let Ok(list) = list.cast_into::<PyList>() {
                let mut parts = Vec::with_capacity(list.len());
                for part in list.iter() {
                    let part = part.cast_into::<PyDict>()?;
                    let inner = match part.get_item(intern!(py, "image_url"))? {
                        Some(inner) => Some(inner),
                        None => part.get_item(intern!(py, "file"))?,
                    };
                    let inner = inner.map(Bound::cast_into::<PyDict>).transpose()?;
                    parts.push((part.unbind(), inner.map(Bound::unbind)));
                }
                content = Some(parts);
            }
        }
        let mut calls = Vec::with_capacity(message.tool_calls.len());
        if let Some(list) = dict.get_item(intern!(py, "tool_calls"))? {
            for entry in list.cast_into::<PyList>()?.iter() {
                let entry = entry.cast_into::<PyDict>()?;
                if let Some(function) = entry.get_item(intern!(py, "function"))? {
                    calls.push((entry.unbind(), function.cast_into::<PyDict>()?.unbind()));
                }
            }
        }
        Ok(Self {
            dict: dict.unbind(),
            calls,
            reasoning: message.reasoning.clone(),
            content,
            own,
            user: message.role == "user",
        })
    }

    /// A fresh copy, nested tool-call dicts included.
    fn copy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let copy = self.dict.bind(py).copy()?;
        if !self.calls.is_empty() {
            let list = PyList::empty(py);
            for (entry, function) in &self.calls {
                let entry = entry.bind(py).copy()?;
                entry.set_item(intern!(py, "function"), function.bind(py).copy()?)?;
                list.append(entry)?;
            }
            copy.set_item(intern!(py, "tool_calls"), list)?;
        }
        if !self.reasoning.is_empty() {
            convert::set_reasoning_lists(py, &copy, &self.reasoning)?;
        }
        if let Some(parts) = &self.content {
            let list = PyList::empty(py);
            for (part, inner) in parts {
                let part = part.bind(py).copy()?;
                if let Some(inner) = inner {
                    let key = if part.contains(intern!(py, "file"))? {
                        intern!(py, "file")
                    } else {
                        intern!(py, "image_url")
                    };
                    part.set_item(key, inner.bind(py).copy()?)?;
                }
                list.append(part)?;
            }
            copy.set_item(intern!(py, "content"), list)?;
        }
        Ok(copy)
    }
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
    /// The index in `messages` of the newest user message of the session's own
    /// (not one that carries attachments), -1 when there is none.
    pub newest_user: i64,
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
        let mut newest_user = -1;
        for rendered in items {
            let entry = match previous.take(rendered.generation) {
                Some(entry) => entry,
                None => new_entry(py, rendered)?,
            };
            for message in &entry.messages {
                if message.own && message.user {
                    newest_user = messages.len() as i64;
                }
                messages.append(message.copy(py)?)?;
            }
            current.push(entry);
        }
        let ids = current.iter().map(|entry| entry.id.bind(py));
        let item_ids = match marker {
            None => PyList::new(py, ids)?,
            Some(position) => {
                let ids: Vec<_> = ids.enumerate().filter(|(at, _)| *at != position).collect();
                PyList::new(py, ids.into_iter().map(|(_, id)| id))?
            }
        };
        self.sessions.insert(session_id.to_string(), current);
        Ok(Lists {
            messages,
            item_ids,
            newest_user,
        })
    }
}

/// The entries of the last assembly, taken out in the order the new one needs
/// them. Consecutive assemblies mostly share a run of items in the same order, so
/// the next entry is tried first; a lookup table is built only on the first miss.
struct Previous {
    entries: Vec<Option<Entry>>,
    next: usize,
    by_key: Option<HashMap<Generation, usize>>,
}

impl Previous {
    fn new(entries: Vec<Entry>) -> Self {
        Self {
            entries: entries.into_iter().map(Some).collect(),
            next: 0,
            by_key: None,
        }
    }

    fn take(&mut self, key: Generation) -> Option<Entry> {
        let in_order = self
            .entries
            .get(self.next)
            .and_then(Option::as_ref)
            .is_some_and(|entry| entry.generation == key);
        let index = if in_order {
            self.next
        } else {
            let entries = &self.entries;
            let by_key = self.by_key.get_or_insert_with(|| {
                entries
                    .iter()
                    .enumerate()
                    .filter_map(|(index, entry)| Some((entry.as_ref()?.generation, index)))
                    .collect()
            });
            *by_key.get(&key)?
        };
        self.next = index + 1;
        self.entries[index].take()
    }
}

fn new_entry(py: Python<'_>, rendered: &Arc<RenderedItem>) -> PyResult<Entry> {
    let messages = convert::chat_completions(&rendered.messages)
        .iter()
        .map(|(message, added)| CachedMessage::new(py, message, !added))
        .collect::<PyResult<_>>()?;
    Ok(Entry {
        generation: rendered.generation,
        messages,
        id: PyString::new(py, &rendered.id).unbind(),
    })
}
