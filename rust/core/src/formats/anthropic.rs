//! Chat messages as an Anthropic Messages request: the system text apart, turns of
//! content blocks in alternating roles.
//!
//! Leading system messages become the `system` text blocks; a later one goes out
//! as user text marked `[system]` (Anthropic has no system turn). An assistant
//! message's reasoning blocks open its turn exactly as stored, then its text, then
//! a `tool_use` block per call; a tool message becomes a `tool_result` block.
//! Consecutive messages of one role share a turn, as Anthropic requires: tool
//! results and the user text after them go in one user turn, results first. The
//! message at each cache mark ends with `cache_control` on its last block.

use super::{map, reasoning_of, Node};
use crate::model::chat::{Attachment, AttachmentKind, AttachmentSource, ChatMessage};

/// The provider blocks Anthropic takes back on an assistant turn: its compaction
/// blocks (first, as stored) and its thinking.
const REASONING_TYPES: &[&str] = &["compaction", "thinking", "redacted_thinking"];

/// A request's `system` and `messages`.
#[derive(Debug, Default)]
pub struct Request<'a> {
    pub system: Vec<Node<'a>>,
    pub messages: Vec<Node<'a>>,
}

/// One turn being built: its role, its blocks, and how many of them lead with
/// reasoning (a merged message's reasoning goes after them, still first).
struct Turn<'a> {
    role: &'static str,
    blocks: Vec<Node<'a>>,
    reasoning: usize,
}

/// `messages` as an Anthropic request, with `cache_control` on the last block of
/// each message whose index is in `marks`.
#[must_use]
pub fn request<'a>(messages: &[&'a ChatMessage], marks: &[usize]) -> Request<'a> {
    let mut system = Vec::new();
    let mut turns: Vec<Turn<'a>> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let marked = marks.contains(&index);
        if message.role == "system" && turns.is_empty() {
            system.push(text_block(message.content.as_deref().unwrap_or_default()));
            if marked {
                mark_last(&mut system);
            }
            continue;
        }
        let role = if message.role == "assistant" {
            "assistant"
        } else {
            "user"
        };
        if turns.last().is_none_or(|turn| turn.role != role) {
            turns.push(Turn {
                role,
                blocks: Vec::new(),
                reasoning: 0,
            });
        }
        let turn = turns.last_mut().expect("a turn was just ensured");
        add_message(turn, message);
        if marked {
            mark_last(&mut turn.blocks);
        }
    }
    if let Some(turn) = turns.last_mut().filter(|turn| turn.role == "assistant") {
        trim_final_text(&mut turn.blocks);
    }
    let messages = turns
        .into_iter()
        .map(|turn| {
            map(vec![
                ("role", Node::text(turn.role)),
                ("content", Node::List(turn.blocks)),
            ])
        })
        .collect();
    Request { system, messages }
}

fn add_message<'a>(turn: &mut Turn<'a>, message: &'a ChatMessage) {
    match message.role {
        "assistant" => {
            let reasoning: Vec<Node<'a>> = reasoning_of(message, REASONING_TYPES).collect();
            let at = turn.reasoning;
            turn.reasoning += reasoning.len();
            turn.blocks.splice(at..at, reasoning);
            if let Some(text) = message.content.as_deref().filter(|text| !text.is_empty()) {
                turn.blocks.push(text_block(text));
            }
            turn.blocks.extend(message.tool_calls.iter().map(|call| {
                map(vec![
                    ("type", Node::text("tool_use")),
                    ("id", Node::text(&call.id)),
                    ("name", Node::text(&call.name)),
                    ("input", Node::Raw(&call.arguments)),
                ])
            }));
        }
        "tool" => turn.blocks.push(tool_result(message)),
        "system" => {
            let text = message.content.as_deref().unwrap_or_default();
            turn.blocks
                .push(text_block_owned(format!("[system] {text}")));
        }
        _ => {
            if let Some(text) = message.content.as_deref().filter(|text| !text.is_empty()) {
                turn.blocks.push(text_block(text));
            }
            turn.blocks
                .extend(message.attachments.iter().map(attachment));
        }
    }
}

/// A tool message as a `tool_result` block: its text, or its text and its
/// attachments as blocks.
fn tool_result(message: &ChatMessage) -> Node<'_> {
    let text = message.content.as_deref().unwrap_or_default();
    let content = if message.attachments.is_empty() {
        Node::text(text)
    } else {
        let mut blocks = Vec::with_capacity(1 + message.attachments.len());
        if !text.is_empty() {
            blocks.push(text_block(text));
        }
        blocks.extend(message.attachments.iter().map(attachment));
        Node::List(blocks)
    };
    map(vec![
        ("type", Node::text("tool_result")),
        (
            "tool_use_id",
            Node::text(message.tool_call_id.as_deref().unwrap_or_default()),
        ),
        ("content", content),
    ])
}

fn text_block(text: &str) -> Node<'_> {
    map(vec![
        ("type", Node::text("text")),
        ("text", Node::text(text)),
    ])
}

fn text_block_owned<'a>(text: String) -> Node<'a> {
    map(vec![
        ("type", Node::text("text")),
        ("text", Node::owned(text)),
    ])
}

/// An attachment as an `image` or `document` block; a document's caption is its
/// title.
fn attachment(attachment: &Attachment) -> Node<'_> {
    let source = match &attachment.source {
        AttachmentSource::Base64(data) => map(vec![
            ("type", Node::text("base64")),
            ("media_type", Node::text(&attachment.media_type)),
            ("data", Node::text(data)),
        ]),
        AttachmentSource::Url(url) => {
            map(vec![("type", Node::text("url")), ("url", Node::text(url))])
        }
    };
    let mut entries = vec![
        (
            "type",
            Node::text(match attachment.kind {
                AttachmentKind::Image => "image",
                AttachmentKind::Document => "document",
            }),
        ),
        ("source", source),
    ];
    if let (AttachmentKind::Document, Some(caption)) = (attachment.kind, &attachment.caption) {
        entries.push(("title", Node::text(caption)));
    }
    map(entries)
}

/// Anthropic refuses a request ending in an assistant turn (a prefill) whose text
/// ends in white space: the last text block of that turn loses its trailing white
/// space, as litellm's transformation does.
fn trim_final_text(blocks: &mut [Node<'_>]) {
    let Some(Node::Map(entries)) = blocks.last_mut() else {
        return;
    };
    let is_text = entries
        .iter()
        .any(|(key, value)| *key == "type" && matches!(value, Node::Text(kind) if kind == "text"));
    if !is_text {
        return;
    }
    for (key, value) in entries.iter_mut() {
        if let (&mut "text", Node::Text(text)) = (key, value) {
            if text.trim_end().len() != text.len() && !text.trim().is_empty() {
                *text = std::borrow::Cow::Owned(text.trim_end().to_string());
            }
        }
    }
}

/// Puts an ephemeral `cache_control` on the last of `blocks`. A reasoning block
/// (raw, as stored) never gets one: Anthropic does not let it carry one, and it is
/// last only in a message of nothing else.
fn mark_last(blocks: &mut [Node<'_>]) {
    if let Some(Node::Map(entries)) = blocks.last_mut() {
        entries.push((
            "cache_control",
            map(vec![("type", Node::text("ephemeral"))]),
        ));
    }
}
