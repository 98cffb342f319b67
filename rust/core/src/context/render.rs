//! How stored rows become OpenAI-format chat messages, and what each costs in tokens.
//!
//! Costs are computed once, when a row is written, from the same strings this
//! module renders; assembly only adds the stored numbers.

use std::collections::HashMap;

use crate::model::chat::{Attachment, AttachmentSource};
use crate::parts::{CallSignature, CompactionSent, Media, Part, Rendered};
use crate::tokens::TokenCounter;

pub use crate::model::chat::{
    empty_text, non_empty, reasoning_content, truncate_chars, BlockKind, ChatMessage,
    ReasoningBlock, ToolCall,
};
pub use crate::parts::{tombstone_marker, tool_result_text};

/// Per-message framing tokens (role and separators) in the chat format.
pub const MESSAGE_OVERHEAD: usize = 4;

/// A part loaded back from the store, with its tombstone state.
#[derive(Clone, Debug)]
pub struct StoredPart {
    pub id: String,
    pub part: Part,
    /// The marker that replaced a pruned tool output.
    pub tombstone: Option<String>,
}

/// The message a summary renders as. Summaries go out as `user` messages: several
/// providers reject a conversation whose first non-system message is not a user turn.
#[must_use]
pub fn summary_message(summary_id: &str, covered: i64, text: &str) -> ChatMessage {
    ChatMessage::plain(
        "user",
        format!("[summary {summary_id} of {covered} earlier messages; expand it to read them in full]\n{text}"),
    )
}

/// Token cost of a summary as rendered by [`summary_message`].
#[must_use]
pub fn summary_tokens(counter: &TokenCounter, summary_id: &str, covered: i64, text: &str) -> usize {
    let rendered = summary_message(summary_id, covered, text);
    MESSAGE_OVERHEAD + counter.count(rendered.content.as_deref().unwrap_or(""))
}

/// What a request adds to a message's plain rendering: the reasoning blocks and
/// call signatures of the request's provider, and the attachments sent inline, by
/// reference id.
#[derive(Clone, Copy, Debug, Default)]
pub struct Extras<'a> {
    /// Whether the message goes with the reasoning its provider produced (an
    /// assistant message of the current tool loop).
    pub reasoning: bool,
    /// The attachments sent inline, by reference id: a media part whose id is here
    /// goes out beside its reference line.
    pub inline: Option<&'a HashMap<String, AttachmentSource>>,
}

/// Renders one stored message as chat messages for a request to `provider`: text
/// and file blocks in one message, tool calls on it, and one `tool` message per
/// call right after it. An image or a document is a reference line in the text of
/// its message, or of the tool result it belongs to; nothing is sent inline (see
/// [`render_message_with`]). A provider's compaction block goes beside the message
/// to the provider that made it, and as text (its readable summary) to another.
#[must_use]
pub fn render_message(
    role: &'static str,
    parts: &[StoredPart],
    provider: &str,
) -> Vec<ChatMessage> {
    render_message_with(role, parts, provider, Extras::default())
}

/// [`render_message`], with what `extras` adds: the reasoning blocks `provider`
/// produced on the first message (an assistant's only), in their stored order,
/// its calls signed as Gemini signed them, and each inline attachment on the
/// message that holds its reference line.
///
/// A turn sent with its blocks is never split at a repeated call (decision 217):
/// the providers that take blocks back name each call by its id, so nothing
/// merges identical calls, and a second half would be an assistant turn calling
/// tools without the thinking that led to them, which Anthropic refuses when it
/// is the loop's last.
#[must_use]
pub fn render_message_with(
    role: &'static str,
    parts: &[StoredPart],
    provider: &str,
    extras: Extras<'_>,
) -> Vec<ChatMessage> {
    let (blocks, signatures) = if extras.reasoning && role == "assistant" {
        replayed(parts, provider)
    } else {
        (Vec::new(), Vec::new())
    };
    // Signed calls alone are Gemini's, whose format merges identical calls: they
    // split as everywhere else (decision 35).
    let repeats = if blocks.is_empty() {
        Repeats::Split
    } else {
        Repeats::Keep
    };
    let mut messages = render_parts(role, parts, provider, repeats, extras);
    sign_calls(&mut messages, &signatures);
    // After the compaction blocks the message opens with, if any.
    messages[0].reasoning.extend(blocks);
    messages
}

/// The reasoning blocks `provider` produced among `parts`, and the signatures of
/// its calls kept apart from their ids.
fn replayed(parts: &[StoredPart], provider: &str) -> (Vec<ReasoningBlock>, Vec<CallSignature>) {
    let mut blocks = Vec::new();
    let mut signatures = Vec::new();
    for stored in parts {
        if let Part::Reasoning(reasoning) = &stored.part {
            if let Some(signature) = reasoning.signature_for(provider) {
                signatures.push(signature);
            } else if let Some(block) = reasoning.replayed_to(provider) {
                blocks.push(block);
            }
        }
    }
    (blocks, signatures)
}

/// What becomes of a call identical to an earlier one of the same message.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Repeats {
    /// It starts an assistant message of its own (decision 35, for Gemini).
    Split,
    /// It stays in the message: a turn sent back with its reasoning is one turn.
    Keep,
}

fn render_parts(
    role: &'static str,
    parts: &[StoredPart],
    provider: &str,
    repeats: Repeats,
    extras: Extras<'_>,
) -> Vec<ChatMessage> {
    let mut content = String::new();
    let mut head_attachments = Vec::new();
    let mut calls = Vec::new();
    let mut results = Vec::new();
    let mut of_results = Vec::new();
    let mut compaction = Vec::new();
    for stored in parts {
        match stored.part.render(stored.tombstone.as_deref()) {
            Rendered::Block(block) => push_block(&mut content, &block),
            Rendered::Call { call, result } => {
                results.push(ChatMessage {
                    role: "tool",
                    content: Some(result),
                    tool_calls: Vec::new(),
                    tool_call_id: Some(call.id.clone()),
                    reasoning: Vec::new(),
                    attachments: Vec::new(),
                });
                calls.push(call);
            }
            // Sent back only where its provider needs it: see `Extras::reasoning`.
            Rendered::Reasoning(_) => {}
            Rendered::Media(media) if media.call_id.is_some() => of_results.push(media),
            Rendered::Media(media) => {
                push_block(&mut content, &media.reference());
                head_attachments.extend(attachment(media, extras));
            }
            Rendered::ProviderCompaction(block) => match block.sent_to(provider) {
                Some(CompactionSent::Block(payload)) if role == "assistant" => {
                    compaction.push(ReasoningBlock {
                        payload: payload.to_string(),
                        text: None,
                        kind: BlockKind::Compaction,
                    });
                }
                Some(CompactionSent::Block(_)) | None => {}
                Some(CompactionSent::Text(text)) => push_block(&mut content, &text),
            },
        }
    }
    for media in of_results {
        let result = results
            .iter_mut()
            .rfind(|result| result.tool_call_id == media.call_id);
        // An image whose call is not in the message goes with the message itself.
        let (text, attachments) = match result {
            Some(result) => (
                result.content.get_or_insert_with(String::new),
                &mut result.attachments,
            ),
            None => (&mut content, &mut head_attachments),
        };
        push_block(text, &media.reference());
        attachments.extend(attachment(media, extras));
    }
    let mut messages = if calls.is_empty() || role != "assistant" {
        // Only assistant turns can carry tool calls in the chat format; a tool part
        // recorded on another role is shown as text so nothing is silently dropped.
        for (call, result) in calls.iter().zip(&mut results) {
            let text = format!(
                "[tool {} {}] {}\n{}",
                call.name,
                call.id,
                call.arguments,
                result.content.as_deref().unwrap_or("")
            );
            push_block(&mut content, &text);
            head_attachments.append(&mut result.attachments);
        }
        vec![ChatMessage::plain(
            role,
            non_empty(content, empty_text(role)),
        )]
    } else {
        with_calls(role, content, calls, results, repeats)
    };
    messages[0].attachments = head_attachments;
    messages[0].reasoning = compaction;
    messages
}

/// An attachment of `media`, when `extras` sends it inline.
fn attachment(media: &Media, extras: Extras<'_>) -> Option<Attachment> {
    let source = extras.inline?.get(&media.media_id)?;
    Some(Attachment {
        kind: media.kind,
        media_type: media.media_type.clone(),
        source: source.clone(),
        caption: media.label().map(str::to_string),
    })
}

/// An assistant message with its calls, and a `tool` message for each.
fn with_calls(
    role: &'static str,
    content: String,
    calls: Vec<ToolCall>,
    results: Vec<ChatMessage>,
    repeats: Repeats,
) -> Vec<ChatMessage> {
    let mut out = Vec::with_capacity(1 + results.len());
    let mut head = ChatMessage {
        role,
        content: (!content.trim().is_empty()).then_some(content),
        tool_calls: Vec::with_capacity(calls.len()),
        tool_call_id: None,
        reasoning: Vec::new(),
        attachments: Vec::new(),
    };
    let mut answers = Vec::with_capacity(results.len());
    for (call, result) in calls.into_iter().zip(results) {
        // A call identical to one before it in the message (same name and arguments)
        // starts a message of its own: Gemini's format has no call ids, and litellm
        // merges identical parallel calls into one, leaving two results for it.
        let repeated = repeats == Repeats::Split
            && head
                .tool_calls
                .iter()
                .any(|earlier| earlier.name == call.name && earlier.arguments == call.arguments);
        if repeated {
            let next = ChatMessage {
                role,
                content: None,
                tool_calls: Vec::new(),
                tool_call_id: None,
                reasoning: Vec::new(),
                attachments: Vec::new(),
            };
            out.push(std::mem::replace(&mut head, next));
            out.append(&mut answers);
        }
        head.tool_calls.push(call);
        answers.push(result);
    }
    out.push(head);
    out.append(&mut answers);
    out
}

/// Each call with a signature kept apart goes out with it in its id, as litellm
/// carries a Gemini thought signature, and its result names it so (decision 218).
fn sign_calls(messages: &mut [ChatMessage], signatures: &[CallSignature]) {
    for signature in signatures {
        let signed = signature.signed_id();
        for message in messages.iter_mut() {
            for call in &mut message.tool_calls {
                if call.id == signature.call_id {
                    call.id.clone_from(&signed);
                }
            }
            if message.tool_call_id.as_deref() == Some(signature.call_id.as_str()) {
                message.tool_call_id = Some(signed.clone());
            }
        }
    }
}

fn push_block(content: &mut String, block: &str) {
    if !content.is_empty() {
        content.push_str("\n\n");
    }
    content.push_str(block);
}

/// One line-oriented transcript entry, used as summariser input.
#[must_use]
pub fn transcript_entry(
    seq: i64,
    role: &str,
    parts: &[StoredPart],
    max_chars: Option<usize>,
) -> String {
    let mut entry = format!("[#{seq} {role}]");
    for stored in parts {
        let piece = stored.part.transcript(stored.tombstone.as_deref());
        entry.push('\n');
        entry.push_str(&piece);
    }
    if let Some(limit) = max_chars {
        truncate_chars(&mut entry, limit);
    }
    entry
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parts::{ToolCallPart, ToolStatus};

    fn nested(depth: usize) -> String {
        format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth))
    }

    #[test]
    fn a_call_with_unusable_arguments_goes_out_empty_and_is_quoted_in_its_result() {
        let tool = ToolCallPart {
            name: "read".into(),
            call_id: "call_1".into(),
            input: nested(5_000),
            output: Some("done".into()),
            status: ToolStatus::Completed,
            error: None,
        };
        let stored = StoredPart {
            id: "prt_1".into(),
            part: Part::Tool(tool),
            tombstone: None,
        };
        let messages = render_message("assistant", &[stored], "openai");
        assert_eq!(messages[0].tool_calls[0].arguments, "{}");
        let result = messages[1].content.as_deref().unwrap_or_default();
        assert!(result.starts_with("[the arguments of this call were not a JSON object"));
        assert!(result.ends_with("done"));
    }

    fn stored(n: usize, part: Part) -> StoredPart {
        StoredPart {
            id: format!("prt_{n}"),
            part,
            tombstone: None,
        }
    }

    #[test]
    fn a_turn_sent_back_with_its_blocks_keeps_a_repeated_call_in_it() {
        let thinking = r#"{"type": "thinking", "thinking": "twice", "signature": "c2ln"}"#;
        let call = |id: &str| {
            Part::Tool(ToolCallPart {
                name: "ls".into(),
                call_id: id.into(),
                input: "{}".into(),
                output: Some("a.py".into()),
                status: ToolStatus::Completed,
                error: None,
            })
        };
        let parts = [
            stored(
                0,
                Part::Reasoning(crate::parts::Reasoning {
                    provider: "anthropic".into(),
                    text: Some("twice".into()),
                    payload: Some(thinking.into()),
                }),
            ),
            stored(1, call("toolu_1")),
            stored(2, call("toolu_2")),
        ];
        let roles = |messages: &[ChatMessage]| messages.iter().map(|m| m.role).collect::<Vec<_>>();
        // Elsewhere the repeated call starts a turn of its own (decision 35).
        let plain = render_message("assistant", &parts, "anthropic");
        assert_eq!(roles(&plain), ["assistant", "tool", "assistant", "tool"]);
        assert!(plain.iter().all(|message| message.reasoning.is_empty()));
        // Sent back with its thinking, the turn stays whole, the blocks on it.
        let replay_extras = Extras {
            reasoning: true,
            inline: None,
        };
        let replay = render_message_with("assistant", &parts, "anthropic", replay_extras);
        assert_eq!(roles(&replay), ["assistant", "tool", "tool"]);
        assert_eq!(replay[0].tool_calls.len(), 2);
        assert_eq!(replay[0].reasoning.len(), 1);
        let gemini = render_message_with("assistant", &parts, "gemini", replay_extras);
        assert_eq!(roles(&gemini), ["assistant", "tool", "assistant", "tool"]);
        assert!(gemini.iter().all(|message| message.reasoning.is_empty()));
    }
}
