//! How stored rows become OpenAI-format chat messages, and what each costs in tokens.
//!
//! Costs are computed once, when a row is written, from the same strings this
//! module renders; assembly only adds the stored numbers.

use crate::parts::{Part, Rendered};
use crate::tokens::TokenCounter;

pub use crate::model::chat::{
    empty_text, non_empty, reasoning_content, truncate_chars, ChatMessage, ReasoningBlock, ToolCall,
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

/// Renders one stored message as chat messages: text and file blocks in one
/// message, tool calls on it, and one `tool` message per call right after it.
#[must_use]
pub fn render_message(role: &'static str, parts: &[StoredPart]) -> Vec<ChatMessage> {
    let mut content = String::new();
    let mut calls = Vec::new();
    let mut results = Vec::new();
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
            // Sent back only where its provider needs it: see `render_replay`.
            Rendered::Reasoning(_) => {}
        }
    }
    if calls.is_empty() || role != "assistant" {
        // Only assistant turns can carry tool calls in the chat format; a tool part
        // recorded on another role is shown as text so nothing is silently dropped.
        for (call, result) in calls.iter().zip(&results) {
            let text = format!(
                "[tool {} {}] {}\n{}",
                call.name,
                call.id,
                call.arguments,
                result.content.as_deref().unwrap_or("")
            );
            push_block(&mut content, &text);
        }
        return vec![ChatMessage::plain(
            role,
            non_empty(content, empty_text(role)),
        )];
    }
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
        let repeated = head
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

/// The message as a request sends it to `provider` within the tool loop that
/// produced it: [`render_message`] with the reasoning blocks `provider` produced on
/// its first message, in their stored order. `None` when there are none to send
/// (then it renders as [`render_message`] does), and for a message other than an
/// assistant's: only an assistant turn carries reasoning.
#[must_use]
pub fn render_replay(
    role: &'static str,
    parts: &[StoredPart],
    provider: &str,
) -> Option<Vec<ChatMessage>> {
    if role != "assistant" {
        return None;
    }
    let blocks: Vec<ReasoningBlock> = parts
        .iter()
        .filter_map(|stored| match &stored.part {
            Part::Reasoning(reasoning) => reasoning.replayed_to(provider),
            _ => None,
        })
        .collect();
    if blocks.is_empty() {
        return None;
    }
    let mut messages = render_message(role, parts);
    messages[0].reasoning = blocks;
    Some(messages)
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
        let messages = render_message("assistant", &[stored]);
        assert_eq!(messages[0].tool_calls[0].arguments, "{}");
        let result = messages[1].content.as_deref().unwrap_or_default();
        assert!(result.starts_with("[the arguments of this call were not a JSON object"));
        assert!(result.ends_with("done"));
    }
}
