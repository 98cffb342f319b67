//! Python copies of rendered chat messages, reused across assemblies.
//!
//! The core hands out each view item's rendering as an `Arc` and keeps the same
//! `Arc` until the item changes, so its address identifies one rendering. Building
//! the dicts is most of an assembly's cost; reusing them makes a turn's cost grow
//! with what changed, not with the size of the view.

use std::collections::HashMap;
use std::sync::Arc;

use lossless_core::render::ChatMessage;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::convert;

/// Sessions whose renderings are kept at once.
const SESSIONS: usize = 16;

type Entry = (Arc<Vec<ChatMessage>>, Vec<Py<PyDict>>);

#[derive(Default)]
pub struct RenderCache {
    sessions: HashMap<String, HashMap<usize, Entry>>,
}

impl RenderCache {
    /// The chat messages of `items` as a fresh list of fresh dicts (callers may mutate
    /// them), building only the dicts of renderings not seen in the last assembly.
    pub fn build_list<'py>(
        &mut self,
        py: Python<'py>,
        session_id: &str,
        items: &[Arc<Vec<ChatMessage>>],
    ) -> PyResult<Bound<'py, PyList>> {
        if !self.sessions.contains_key(session_id) && self.sessions.len() >= SESSIONS {
            self.sessions.clear();
        }
        let mut previous = self.sessions.remove(session_id).unwrap_or_default();
        let mut current = HashMap::with_capacity(items.len());
        let list = PyList::empty(py);
        for rendered in items {
            // Holding the Arc in the entry keeps its address from being reused.
            let key = Arc::as_ptr(rendered) as usize;
            let entry = match previous.remove(&key) {
                Some(entry) => entry,
                None => (Arc::clone(rendered), build(py, rendered)?),
            };
            for dict in &entry.1 {
                list.append(dict.bind(py).copy()?)?;
            }
            current.insert(key, entry);
        }
        self.sessions.insert(session_id.to_string(), current);
        Ok(list)
    }
}

fn build(py: Python<'_>, rendered: &[ChatMessage]) -> PyResult<Vec<Py<PyDict>>> {
    rendered
        .iter()
        .map(|message| convert::chat_message(py, message).map(Bound::unbind))
        .collect()
}
