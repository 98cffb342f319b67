//! Chat messages as OpenAI Responses input items.
//!
//! A system, user or assistant message is a `message` item (system and user text
//! as `input_text` parts beside their attachments; assistant text as the message's
//! string content, decision 214), an assistant's calls are `function_call` items
//! after it, and its reasoning items, exactly as stored, come before both. A tool
//! message is a `function_call_output` whose `output` is its text, or a list of
//! `input_text`, `input_image` and `input_file` parts when it carries attachments.

use super::{data_url, map, reasoning_of, Node};
use crate::model::chat::{Attachment, AttachmentKind, AttachmentSource, ChatMessage};

/// The provider items OpenAI takes back: its compaction items and its reasoning.
const REASONING_TYPES: &[&str] = &["compaction", "reasoning"];

/// `messages` as Responses input items.
#[must_use]
pub fn input<'a>(messages: &[&'a ChatMessage]) -> Vec<Node<'a>> {
    let mut items = Vec::with_capacity(messages.len());
    for message in messages {
        match message.role {
            "assistant" => assistant(&mut items, message),
            "tool" => items.push(call_output(message)),
            role => items.push(map(vec![
                ("type", Node::text("message")),
                ("role", Node::text(role)),
                ("content", Node::List(input_parts(message))),
            ])),
        }
    }
    items
}

fn assistant<'a>(items: &mut Vec<Node<'a>>, message: &'a ChatMessage) {
    items.extend(reasoning_of(message, REASONING_TYPES));
    if let Some(text) = message.content.as_deref().filter(|text| !text.is_empty()) {
        items.push(map(vec![
            ("type", Node::text("message")),
            ("role", Node::text("assistant")),
            ("content", Node::text(text)),
        ]));
    }
    items.extend(message.tool_calls.iter().map(|call| {
        map(vec![
            ("type", Node::text("function_call")),
            ("call_id", Node::text(&call.id)),
            ("name", Node::text(&call.name)),
            ("arguments", Node::text(&call.arguments)),
        ])
    }));
}

fn call_output(message: &ChatMessage) -> Node<'_> {
    let output = if message.attachments.is_empty() {
        Node::text(message.content.as_deref().unwrap_or_default())
    } else {
        Node::List(input_parts(message))
    };
    map(vec![
        ("type", Node::text("function_call_output")),
        (
            "call_id",
            Node::text(message.tool_call_id.as_deref().unwrap_or_default()),
        ),
        ("output", output),
    ])
}

/// A message's text as an `input_text` part, then its attachments.
fn input_parts(message: &ChatMessage) -> Vec<Node<'_>> {
    let mut parts = Vec::with_capacity(1 + message.attachments.len());
    if let Some(text) = message.content.as_deref().filter(|text| !text.is_empty()) {
        parts.push(map(vec![
            ("type", Node::text("input_text")),
            ("text", Node::text(text)),
        ]));
    }
    parts.extend(message.attachments.iter().map(attachment));
    parts
}

/// An attachment as an `input_image` or `input_file` part. A base64 file needs a
/// file name: its caption, else `document` with the extension of its type.
fn attachment(attachment: &Attachment) -> Node<'_> {
    match (attachment.kind, &attachment.source) {
        (AttachmentKind::Image, source) => map(vec![
            ("type", Node::text("input_image")),
            ("image_url", url_of(&attachment.media_type, source)),
            ("detail", Node::text("auto")),
        ]),
        (AttachmentKind::Document, AttachmentSource::Url(url)) => map(vec![
            ("type", Node::text("input_file")),
            ("file_url", Node::text(url)),
        ]),
        (AttachmentKind::Document, AttachmentSource::Base64(data)) => {
            let filename = attachment.caption.clone().unwrap_or_else(|| {
                let extension = attachment.media_type.rsplit('/').next().unwrap_or("bin");
                format!("document.{extension}")
            });
            map(vec![
                ("type", Node::text("input_file")),
                (
                    "file_data",
                    Node::owned(data_url(&attachment.media_type, data)),
                ),
                ("filename", Node::owned(filename)),
            ])
        }
    }
}

fn url_of<'a>(media_type: &str, source: &'a AttachmentSource) -> Node<'a> {
    match source {
        AttachmentSource::Base64(data) => Node::owned(data_url(media_type, data)),
        AttachmentSource::Url(url) => Node::text(url),
    }
}
