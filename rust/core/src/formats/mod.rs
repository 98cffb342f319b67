//! An assembled request's chat messages in the formats other SDKs take:
//! Anthropic Messages (`anthropic`) and OpenAI Responses input items
//! (`responses`). Each converter builds a [`Node`] tree that borrows from the
//! messages; the binding turns it into Python objects in one pass.

pub mod anthropic;
pub mod responses;

use std::borrow::Cow;

use crate::model::chat::{ChatMessage, ReasoningBlock};

/// A JSON value of a converted request. Keys keep the order they are written in.
#[derive(Clone, Debug, PartialEq)]
pub enum Node<'a> {
    Text(Cow<'a, str>),
    Bool(bool),
    List(Vec<Node<'a>>),
    Map(Vec<(&'static str, Node<'a>)>),
    /// JSON text sent as the value it holds: a reasoning block as its provider
    /// sent it, a tool call's arguments. Parsed, never written again.
    Raw(&'a str),
}

impl<'a> Node<'a> {
    /// A string borrowed from the messages.
    #[must_use]
    pub fn text(text: &'a str) -> Self {
        Node::Text(Cow::Borrowed(text))
    }

    /// A string made for the request.
    #[must_use]
    pub fn owned(text: String) -> Self {
        Node::Text(Cow::Owned(text))
    }

    /// The value at `key` of a map.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&Node<'a>> {
        match self {
            Node::Map(entries) => entries.iter().find(|(k, _)| *k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The node as JSON (raw text parsed), for tests and benchmarks.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Node::Text(text) => serde_json::Value::String(text.to_string()),
            Node::Bool(value) => serde_json::Value::Bool(*value),
            Node::List(items) => items.iter().map(Node::to_json).collect(),
            Node::Map(entries) => entries
                .iter()
                .map(|(key, value)| ((*key).to_string(), value.to_json()))
                .collect::<serde_json::Map<_, _>>()
                .into(),
            Node::Raw(text) => serde_json::from_str(text).unwrap_or(serde_json::Value::Null),
        }
    }
}

/// A request's messages as the converters take them, each given with the view item
/// it renders (`None` for a message placed around the items), and the indices of
/// the messages carrying cache marks. A stored message whose calls were split in
/// two because one repeats an identical call (decision 35, for Gemini, which has
/// no call ids) is joined again: both formats here carry call ids, and a history
/// read in comes back as it was. The mark of a joined message stays on it.
#[must_use]
pub fn rejoined<'a>(
    messages: &[(&'a ChatMessage, Option<usize>)],
    marks: &[usize],
) -> (Vec<Cow<'a, ChatMessage>>, Vec<usize>) {
    let mut out: Vec<Cow<'a, ChatMessage>> = Vec::with_capacity(messages.len());
    let mut moved = Vec::with_capacity(marks.len());
    let mut start = 0;
    while start < messages.len() {
        let item = messages[start].1;
        let end = messages[start..]
            .iter()
            .position(|(_, other)| item.is_none() || *other != item)
            .map_or(messages.len(), |len| start + len.max(1));
        let group = &messages[start..end];
        let split = group
            .iter()
            .filter(|(message, _)| message.role == "assistant")
            .count()
            > 1;
        if split {
            join_split(group, start, marks, &mut out, &mut moved);
        } else {
            moved.extend(
                marks
                    .iter()
                    .filter(|&&at| (start..end).contains(&at))
                    .map(|&at| out.len() + at - start),
            );
            out.extend(group.iter().map(|(message, _)| Cow::Borrowed(*message)));
        }
        start = end;
    }
    (out, moved)
}

/// One stored message's calls in one assistant message again, its results after.
fn join_split<'a>(
    group: &[(&'a ChatMessage, Option<usize>)],
    start: usize,
    marks: &[usize],
    out: &mut Vec<Cow<'a, ChatMessage>>,
    moved: &mut Vec<usize>,
) {
    let head = out.len();
    let mut joined: Option<ChatMessage> = None;
    let mut results = Vec::new();
    for (offset, (message, _)) in group.iter().enumerate() {
        let marked = marks.contains(&(start + offset));
        if message.role == "assistant" {
            match &mut joined {
                Some(first) => first.tool_calls.extend(message.tool_calls.iter().cloned()),
                None => joined = Some((*message).clone()),
            }
            if marked {
                moved.push(head);
            }
        } else {
            if marked {
                moved.push(head + 1 + results.len());
            }
            results.push(Cow::Borrowed(*message));
        }
    }
    out.extend(joined.map(Cow::Owned));
    out.extend(results);
}

/// The formats a request can be converted to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Anthropic,
    Responses,
}

impl Format {
    /// The format named `name` (`anthropic`, `responses`); `None` for others.
    #[must_use]
    pub fn named(name: &str) -> Option<Self> {
        match name {
            "anthropic" => Some(Format::Anthropic),
            "responses" => Some(Format::Responses),
            _ => None,
        }
    }
}

/// The `type` of a reasoning block's payload, read without keeping the parse.
#[must_use]
pub fn block_type(block: &ReasoningBlock) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Typed {
        #[serde(rename = "type")]
        kind: Option<String>,
    }
    serde_json::from_str::<Typed>(&block.payload).ok()?.kind
}

/// The reasoning blocks of `message` whose type is one of `types`, as raw JSON.
fn reasoning_of<'a>(
    message: &'a ChatMessage,
    types: &'static [&'static str],
) -> impl Iterator<Item = Node<'a>> {
    message
        .reasoning
        .iter()
        .filter(|block| block_type(block).is_some_and(|kind| types.contains(&kind.as_str())))
        .map(|block| Node::Raw(&block.payload))
}

/// A data URL of base64 bytes.
fn data_url(media_type: &str, data: &str) -> String {
    format!("data:{media_type};base64,{data}")
}

fn map<'a>(entries: Vec<(&'static str, Node<'a>)>) -> Node<'a> {
    Node::Map(entries)
}

#[cfg(test)]
mod tests;
