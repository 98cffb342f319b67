//! Argument extraction and result conversion: builtins in, builtins out.

use lossless_core::model::chat::{Attachment, AttachmentKind, AttachmentSource};
use lossless_core::parts::{Part, Role, WireSink, WireSource};
use lossless_core::profile::Profile;
use lossless_core::render::{
    reasoning_content, BlockKind, ChatMessage, ReasoningBlock, StoredPart, ToolCall,
};
use lossless_core::store::{Durability, GrepMode, Usage};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyInt, PyList, PyString};

use crate::errors::{invalid, to_py_err};

/// A `str` argument as UTF-8, naming the field when it cannot be (lone surrogates).
pub fn text(value: &Bound<'_, PyAny>, field: &str) -> PyResult<String> {
    let string = value
        .cast::<PyString>()
        .map_err(|_| invalid(field, &format!("expected str, got {}", type_name(value))))?;
    string
        .to_str()
        .map(str::to_string)
        .map_err(|_| invalid(field, "is not valid text (it holds a lone surrogate)"))
}

/// An optional `str` argument: `None` stays `None`, anything else is [`text`].
pub fn maybe_text(value: Option<&Bound<'_, PyAny>>, field: &str) -> PyResult<Option<String>> {
    value
        .filter(|value| !value.is_none())
        .map(|value| text(value, field))
        .transpose()
}

/// An `int` argument that fits in 64 bits, naming the field when it is not one.
pub fn int(value: &Bound<'_, PyAny>, field: &str) -> PyResult<i64> {
    // `True` is an `int` to Python, never a count or a size to a caller.
    let number = value
        .cast::<PyInt>()
        .ok()
        .filter(|_| !value.is_instance_of::<PyBool>())
        .ok_or_else(|| {
            invalid(
                field,
                &format!("expected an integer, got {}", type_name(value)),
            )
        })?;
    number
        .extract()
        .map_err(|_| invalid(field, &format!("{number} is out of range")))
}

// Arguments with a default value, extracted through `#[pyo3(from_py_with = ...)]`:
// a default must be a plain value, not a `Bound`. Each names its argument when it
// refuses one, and the enumerations are parsed by the core.

pub fn synchronous_arg(value: &Bound<'_, PyAny>) -> PyResult<Durability> {
    Durability::parse(&text(value, "synchronous")?).map_err(to_py_err)
}

pub fn mode_arg(value: &Bound<'_, PyAny>) -> PyResult<GrepMode> {
    GrepMode::parse(&text(value, "mode")?).map_err(to_py_err)
}

pub fn profile_arg(value: &Bound<'_, PyAny>) -> PyResult<Profile> {
    let name = text(value, "profile")?;
    Profile::named(&name).ok_or_else(|| {
        invalid(
            "profile",
            &format!("{name:?} is not one of default, strict, mistral, llama3"),
        )
    })
}

pub fn limit_arg(value: &Bound<'_, PyAny>) -> PyResult<i64> {
    int(value, "limit")
}

pub fn busy_timeout_arg(value: &Bound<'_, PyAny>) -> PyResult<i64> {
    int(value, "busy_timeout_ms")
}

/// A message role argument.
pub fn role(value: &Bound<'_, PyAny>) -> PyResult<Role> {
    Role::parse(&text(value, "role")?).map_err(to_py_err)
}

pub(crate) fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map_or_else(|_| "?".into(), |name| name.to_string())
}

fn optional_text(dict: &Bound<'_, PyDict>, key: &str, field: &str) -> PyResult<Option<String>> {
    match dict.get_item(key)? {
        Some(value) if !value.is_none() => text(&value, &format!("{field}.{key}")).map(Some),
        _ => Ok(None),
    }
}

/// A part's wire dict read through the core's [`WireSource`]: the core says which
/// fields each kind has, this says how a Python value becomes one.
struct DictSource<'a, 'py>(&'a Bound<'py, PyDict>);

impl DictSource<'_, '_> {
    fn value(
        &self,
        key: &str,
        field: &str,
    ) -> lossless_core::error::Result<Option<Bound<'_, PyAny>>> {
        let value = self.0.get_item(key).map_err(|err| {
            lossless_core::error::Error::invalid(format!("{field}.{key}"), err.to_string())
        })?;
        Ok(value.filter(|value| !value.is_none()))
    }
}

impl WireSource for DictSource<'_, '_> {
    fn text(&self, key: &str, field: &str) -> lossless_core::error::Result<Option<String>> {
        let Some(value) = self.value(key, field)? else {
            return Ok(None);
        };
        let field = format!("{field}.{key}");
        let Ok(string) = value.cast::<PyString>() else {
            let reason = format!("expected str, got {}", type_name(&value));
            return Err(lossless_core::error::Error::invalid(field, reason));
        };
        string
            .to_str()
            .map(|text| Some(text.to_string()))
            .map_err(|_| {
                lossless_core::error::Error::invalid(
                    field,
                    "is not valid text (it holds a lone surrogate)",
                )
            })
    }

    fn int(&self, key: &str, field: &str) -> lossless_core::error::Result<Option<i64>> {
        let Some(value) = self.value(key, field)? else {
            return Ok(None);
        };
        value.extract::<i64>().map(Some).map_err(|_| {
            lossless_core::error::Error::invalid(format!("{field}.{key}"), "expected an int")
        })
    }

    fn bytes(&self, key: &str, field: &str) -> lossless_core::error::Result<Option<Vec<u8>>> {
        let Some(value) = self.value(key, field)? else {
            return Ok(None);
        };
        let Ok(bytes) = value.cast::<PyBytes>() else {
            let reason = format!("expected bytes, got {}", type_name(&value));
            return Err(lossless_core::error::Error::invalid(
                format!("{field}.{key}"),
                reason,
            ));
        };
        Ok(Some(bytes.as_bytes().to_vec()))
    }
}

/// One part from its wire dict (see `lossless.parts.part_to_wire`).
pub fn part(value: &Bound<'_, PyAny>, field: &str) -> PyResult<Part> {
    let dict = value.cast::<PyDict>().map_err(|_| {
        invalid(
            field,
            &format!("expected a part dict, got {}", type_name(value)),
        )
    })?;
    Part::read_wire(&DictSource(dict), field).map_err(to_py_err)
}

/// A list of parts.
pub fn parts(value: &Bound<'_, PyAny>) -> PyResult<Vec<Part>> {
    let list = value.cast::<PyList>().map_err(|_| {
        invalid(
            "parts",
            &format!("expected a list, got {}", type_name(value)),
        )
    })?;
    list.iter()
        .enumerate()
        .map(|(index, item)| part(&item, &format!("parts[{index}]")))
        .collect()
}

/// Provider usage from a dict with optional keys.
pub fn usage(value: Option<&Bound<'_, PyDict>>) -> PyResult<Usage> {
    let Some(dict) = value else {
        return Ok(Usage::default());
    };
    let get = |key: &str| -> PyResult<Option<Bound<'_, PyAny>>> {
        Ok(dict.get_item(key)?.filter(|value| !value.is_none()))
    };
    Ok(Usage {
        input_tokens: get("input_tokens")?.map(|v| v.extract()).transpose()?,
        output_tokens: get("output_tokens")?.map(|v| v.extract()).transpose()?,
        cost: get("cost")?.map(|v| v.extract()).transpose()?,
        finish_reason: optional_text(dict, "finish_reason", "usage")?,
    })
}

/// The text of the user message that carries the attachments of the messages
/// before it (see [`chat_completions`]).
pub const ATTACHED_TEXT: &str = "[the images and documents of the messages above]";

/// `messages` as Chat Completions takes them: a user message's attachments in its
/// content list, and the attachments of any other message (a tool result's
/// screenshots, above all) in a user message after the run of tool results they
/// belong to, since Chat Completions takes images and files only from a user. Each
/// message comes with whether it is such an added one.
#[must_use]
pub fn chat_completions(messages: &[ChatMessage]) -> Vec<(ChatMessage, bool)> {
    let mut out = Vec::with_capacity(messages.len());
    let mut carried: Vec<Attachment> = Vec::new();
    for (at, message) in messages.iter().enumerate() {
        let mut message = message.clone();
        if message.role != "user" {
            carried.append(&mut message.attachments);
        }
        out.push((message, false));
        let run_goes_on = messages.get(at + 1).is_some_and(|next| next.role == "tool");
        if !carried.is_empty() && !run_goes_on {
            let attached = ChatMessage {
                role: "user",
                content: Some(ATTACHED_TEXT.to_string()),
                tool_calls: Vec::new(),
                tool_call_id: None,
                reasoning: Vec::new(),
                attachments: std::mem::take(&mut carried),
            };
            out.push((attached, true));
        }
    }
    out
}

/// A chat message as an OpenAI-format dict. Reasoning sent back goes as litellm
/// takes it on an assistant message: `thinking_blocks` (which its Anthropic and
/// Bedrock transformations put first in the turn), Responses API items as
/// `reasoning_items` (which its Responses bridge sends back as input items), and
/// `reasoning_content`. A message with attachments (a user's, after
/// [`chat_completions`]) has a content list: its text, then an `image_url` part
/// per image and a `file` part per document.
pub fn chat_message<'py>(py: Python<'py>, message: &ChatMessage) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("role", message.role)?;
    if message.attachments.is_empty() {
        dict.set_item("content", message.content.as_deref())?;
    } else {
        dict.set_item("content", content_list(py, message)?)?;
    }
    if !message.tool_calls.is_empty() {
        dict.set_item("tool_calls", tool_calls(py, &message.tool_calls)?)?;
    }
    if let Some(id) = &message.tool_call_id {
        dict.set_item("tool_call_id", id)?;
    }
    if !message.reasoning.is_empty() {
        set_reasoning_lists(py, &dict, &message.reasoning)?;
        if let Some(text) = reasoning_content(&message.reasoning) {
            dict.set_item("reasoning_content", text)?;
        }
    }
    Ok(dict)
}

/// A message's text and attachments as a Chat Completions content list.
pub fn content_list<'py>(py: Python<'py>, message: &ChatMessage) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    if let Some(text) = message.content.as_deref().filter(|text| !text.is_empty()) {
        let part = PyDict::new(py);
        part.set_item("type", "text")?;
        part.set_item("text", text)?;
        list.append(part)?;
    }
    for attachment in &message.attachments {
        list.append(attachment_part(py, attachment)?)?;
    }
    Ok(list)
}

/// One attachment as a content part: an image's `image_url` (a data URL of its
/// bytes, or its URL as given), a document's `file` with its bytes as a data URL.
fn attachment_part<'py>(py: Python<'py>, attachment: &Attachment) -> PyResult<Bound<'py, PyDict>> {
    let url = match &attachment.source {
        AttachmentSource::Base64(data) => format!("data:{};base64,{data}", attachment.media_type),
        AttachmentSource::Url(url) => url.clone(),
    };
    let part = PyDict::new(py);
    let inner = PyDict::new(py);
    match attachment.kind {
        AttachmentKind::Image => {
            inner.set_item("url", url)?;
            part.set_item("type", "image_url")?;
            part.set_item("image_url", inner)?;
        }
        AttachmentKind::Document => {
            inner.set_item("file_data", url)?;
            if let Some(name) = &attachment.caption {
                inner.set_item("filename", name)?;
            }
            part.set_item("type", "file")?;
            part.set_item("file", inner)?;
        }
    }
    Ok(part)
}

/// Sets the provider blocks a message carries back, where litellm takes each kind:
/// thinking as `thinking_blocks`, Responses API items as `reasoning_items`,
/// compaction blocks as `provider_specific_fields.compaction_blocks`, each in order
/// and parsed from the JSON text the provider sent (Python's parser keeps the keys
/// in the provider's order).
pub fn set_reasoning_lists(
    py: Python<'_>,
    dict: &Bound<'_, PyDict>,
    reasoning: &[ReasoningBlock],
) -> PyResult<()> {
    let loads = py
        .import(intern!(py, "json"))?
        .getattr(intern!(py, "loads"))?;
    let blocks = PyList::empty(py);
    let items = PyList::empty(py);
    let compaction = PyList::empty(py);
    for block in reasoning {
        let list = match block.kind {
            BlockKind::Thinking => &blocks,
            BlockKind::ReasoningItem => &items,
            BlockKind::Compaction => &compaction,
        };
        list.append(loads.call1((block.payload.as_str(),))?)?;
    }
    if !blocks.is_empty() {
        dict.set_item(intern!(py, "thinking_blocks"), blocks)?;
    }
    if !items.is_empty() {
        dict.set_item(intern!(py, "reasoning_items"), items)?;
    }
    if !compaction.is_empty() {
        let fields = PyDict::new(py);
        fields.set_item(intern!(py, "compaction_blocks"), compaction)?;
        dict.set_item(intern!(py, "provider_specific_fields"), fields)?;
    }
    Ok(())
}

/// The `tool_calls` list of an assistant message.
pub fn tool_calls<'py>(py: Python<'py>, calls: &[ToolCall]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for call in calls {
        let function = PyDict::new(py);
        function.set_item("name", &call.name)?;
        function.set_item("arguments", &call.arguments)?;
        let entry = PyDict::new(py);
        entry.set_item("id", &call.id)?;
        entry.set_item("type", "function")?;
        entry.set_item("function", function)?;
        list.append(entry)?;
    }
    Ok(list)
}

/// A part's wire dict written through the core's [`WireSink`].
struct DictSink<'a, 'py>(&'a Bound<'py, PyDict>);

impl WireSink for DictSink<'_, '_> {
    type Error = PyErr;

    fn text(&mut self, key: &str, value: Option<&str>) -> PyResult<()> {
        self.0.set_item(key, value)
    }

    fn int(&mut self, key: &str, value: i64) -> PyResult<()> {
        self.0.set_item(key, value)
    }
}

/// A part as its wire dict.
pub fn part_dict<'py>(py: Python<'py>, part: &Part) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    part.write_wire(&mut DictSink(&dict))?;
    Ok(dict)
}

/// A stored part as its wire dict, with `id` and `compacted`.
pub fn stored_part<'py>(py: Python<'py>, stored: &StoredPart) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("id", &stored.id)?;
    stored.part.write_wire(&mut DictSink(&dict))?;
    dict.set_item("compacted", stored.tombstone.is_some())?;
    Ok(dict)
}
