//! A request in another format as Python objects: the core converts the
//! assembled chat messages (`lossless_core::formats`), this builds the lists and
//! dicts in one pass. Nothing is decided here.

use lossless_core::formats::{anthropic, rejoined, responses, Format, Node};
use lossless_core::render::ChatMessage;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString, PyTuple};

use crate::convert;
use crate::errors::invalid;
use crate::prefix::ItemUnits;

/// The format named by a `format` argument.
fn format_arg(name: &str) -> PyResult<Format> {
    Format::named(name).ok_or_else(|| {
        invalid(
            "format",
            &format!("{name:?} is not one of 'openai', 'anthropic', 'responses'"),
        )
    })
}

/// The request of `items` laid out as `layout` in `format`: `(system, messages)`
/// for Anthropic (`system` a list of text blocks), `(None, input)` for Responses.
/// `layout` lists the request's chat messages in order: an `int` is the index of
/// one of the items' messages, a `{"role", "content"}` dict a message placed
/// around them (the system prompt, the arena's blocks). `marks` are the indices
/// in `layout` whose last block carries an Anthropic cache breakpoint.
#[pyfunction]
pub fn format_request<'py>(
    py: Python<'py>,
    items: &ItemUnits,
    layout: &Bound<'py, PyList>,
    format: &str,
    marks: Vec<usize>,
) -> PyResult<Bound<'py, PyTuple>> {
    let format = format_arg(format)?;
    let rendered: Vec<(&ChatMessage, Option<usize>)> = items
        .items
        .iter()
        .enumerate()
        .flat_map(|(at, item)| item.messages.iter().map(move |message| (message, Some(at))))
        .collect();
    let placed = placed_messages(layout)?;
    let mut extra = placed.iter();
    let mut messages = Vec::with_capacity(layout.len());
    for entry in layout.iter() {
        if entry.is_instance_of::<PyDict>() {
            messages.push((extra.next().expect("one placed message per dict"), None));
        } else {
            let index = convert::int(&entry, "layout")?;
            let message = usize::try_from(index)
                .ok()
                .and_then(|index| rendered.get(index).copied())
                .ok_or_else(|| invalid("layout", &format!("no message {index}")))?;
            messages.push(message);
        }
    }
    let (joined, marks) = rejoined(&messages, &marks);
    let messages: Vec<&ChatMessage> = joined.iter().map(AsRef::as_ref).collect();
    let loads = py
        .import(intern!(py, "json"))?
        .getattr(intern!(py, "loads"))?;
    let build = Builder { loads };
    match format {
        Format::Anthropic => {
            let request = anthropic::request(&messages, &marks);
            let system = build.list(py, &request.system)?;
            let turns = build.list(py, &request.messages)?;
            PyTuple::new(py, [system.into_any(), turns.into_any()])
        }
        Format::Responses => {
            let input = build.list(py, &responses::input(&messages))?;
            PyTuple::new(py, [py.None().into_bound(py), input.into_any()])
        }
    }
}

/// The messages `layout` places around the items, in order.
fn placed_messages(layout: &Bound<'_, PyList>) -> PyResult<Vec<ChatMessage>> {
    let mut placed = Vec::new();
    for entry in layout.iter() {
        let Ok(dict) = entry.cast::<PyDict>() else {
            continue;
        };
        let role = match dict.get_item("role")? {
            Some(role) => convert::text(&role, "layout.role")?,
            None => return Err(invalid("layout.role", "missing")),
        };
        let role: &'static str = match role.as_str() {
            "system" => "system",
            "user" => "user",
            other => return Err(invalid("layout.role", &format!("{other:?} is not placed"))),
        };
        let content = convert::maybe_text(dict.get_item("content")?.as_ref(), "layout.content")?;
        placed.push(ChatMessage {
            role,
            content,
            tool_calls: Vec::new(),
            tool_call_id: None,
            reasoning: Vec::new(),
            attachments: Vec::new(),
        });
    }
    Ok(placed)
}

/// Builds Python objects from nodes; raw JSON text is parsed by Python's parser,
/// which keeps its keys in the order they were written.
struct Builder<'py> {
    loads: Bound<'py, PyAny>,
}

impl<'py> Builder<'py> {
    fn list(&self, py: Python<'py>, nodes: &[Node<'_>]) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for node in nodes {
            list.append(self.object(py, node)?)?;
        }
        Ok(list)
    }

    fn object(&self, py: Python<'py>, node: &Node<'_>) -> PyResult<Bound<'py, PyAny>> {
        Ok(match node {
            Node::Text(text) => PyString::new(py, text).into_any(),
            Node::Bool(value) => PyBool::new(py, *value).to_owned().into_any(),
            Node::List(items) => self.list(py, items)?.into_any(),
            Node::Map(entries) => {
                let dict = PyDict::new(py);
                for (key, value) in entries {
                    dict.set_item(PyString::intern(py, key), self.object(py, value)?)?;
                }
                dict.into_any()
            }
            Node::Raw(text) => self.loads.call1((*text,))?,
        })
    }
}
