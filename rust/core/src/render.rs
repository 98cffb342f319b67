//! How stored rows become OpenAI-format chat messages, and what each costs in tokens.
//!
//! Costs are computed once, when a row is written, from the same strings this
//! module renders; assembly only adds the stored numbers.

use serde::de::IgnoredAny;

use crate::parts::{FileRef, Part, ToolCallPart, ToolStatus};
use crate::tokens::TokenCounter;

/// Per-message framing tokens (role and separators) in the chat format.
pub const MESSAGE_OVERHEAD: usize = 4;
/// Framing of one tool call: the `tool_calls` entry plus the `tool` message.
pub const TOOL_OVERHEAD: usize = 12;

/// One entry of an assistant message's `tool_calls`.
#[derive(Clone, Debug, PartialEq, Hash)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// One OpenAI chat message.
#[derive(Clone, Debug, PartialEq, Hash)]
pub struct ChatMessage {
    pub role: &'static str,
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub tool_call_id: Option<String>,
}

impl ChatMessage {
    fn plain(role: &'static str, content: String) -> Self {
        Self {
            role,
            content: Some(content),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// A part loaded back from the store, with its tombstone state.
#[derive(Clone, Debug)]
pub struct StoredPart {
    pub id: String,
    pub part: Part,
    /// The marker that replaced a pruned tool output.
    pub tombstone: Option<String>,
}

/// Characters of unusable arguments quoted back in the call's result.
const QUOTED_ARGUMENT_CHARS: usize = 1_000;

/// Deepest nesting of arguments sent on: `serde_json`'s own limit. Parsers in the
/// request's path recurse per level (litellm's `json.loads` for Anthropic and
/// Gemini, bounded by Python's recursion limit of 1,000 frames), so a deeper value
/// fails there, outside this library, on every turn that sends it.
pub const MAX_ARGUMENT_DEPTH: usize = 128;

/// Whether `text` is one JSON object, the only arguments every provider accepts
/// (Anthropic and Gemini take the arguments as an object, not as text). Nesting
/// deeper than [`MAX_ARGUMENT_DEPTH`] counts as not usable: the providers' own
/// parsers would fail on it too.
#[must_use]
pub fn is_json_object(text: &str) -> bool {
    // `serde_json` skips an `IgnoredAny` without recursion, so without its depth limit:
    // the depth is checked on its own.
    text.trim_start().starts_with('{')
        && nesting_depth(text) <= MAX_ARGUMENT_DEPTH
        && serde_json::from_str::<IgnoredAny>(text).is_ok()
}

/// The deepest nesting of objects and arrays in JSON `text`, brackets inside
/// strings left out. One pass over the bytes; on text that is not JSON the
/// number means nothing, and the parse that follows refuses the text anyway.
fn nesting_depth(text: &str) -> usize {
    let (mut depth, mut deepest) = (0_usize, 0_usize);
    let (mut in_string, mut escaped) = (false, false);
    for byte in text.bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// The arguments a call is rendered with: as stored when they are a JSON object
/// (`object`, from [`is_json_object`]), else an empty object (the stored text is
/// kept whole, and the result says so unless it was blank: no arguments at all).
fn call_arguments(tool: &ToolCallPart, object: bool) -> &str {
    if object {
        &tool.input
    } else {
        "{}"
    }
}

/// What the model reads as the result of a tool call that has no tombstone. An
/// error is shown whatever the status: it is part of what the tool said (and may
/// name file ids that must stay in the context). Arguments that are not a JSON
/// object (a call cut off by the output limit, say) are quoted here, since the call
/// itself goes out with empty arguments.
#[must_use]
pub fn tool_result_text(tool: &ToolCallPart) -> String {
    result_text(tool, is_json_object(&tool.input))
}

/// [`tool_result_text`], with whether the arguments are a JSON object already known.
fn result_text(tool: &ToolCallPart, object: bool) -> String {
    let result = match (&tool.output, &tool.error) {
        (Some(output), Some(error)) => format!("{output}\n[error] {error}"),
        (Some(output), None) => output.clone(),
        (None, Some(error)) => format!("[error] {error}"),
        (None, None) if tool.status == ToolStatus::Error => "[error] tool failed".to_string(),
        (None, None) => format!("[tool call {}: no result yet]", tool.status.as_str()),
    };
    let result = non_empty(result, "[empty output]");
    if object || tool.input.trim().is_empty() {
        return result;
    }
    let mut quoted = tool.input.clone();
    truncate_chars(&mut quoted, QUOTED_ARGUMENT_CHARS);
    format!("[the arguments of this call were not a JSON object (cut off?); as recorded: {quoted}]\n{result}")
}

/// `text`, or `placeholder` when it holds nothing but white space: providers
/// reject empty and blank text blocks.
fn non_empty(text: String, placeholder: &str) -> String {
    if text.trim().is_empty() {
        placeholder.to_string()
    } else {
        text
    }
}

/// The one-line marker that replaces a pruned tool output. It names the part so
/// the output can be recovered, and keeps every file id the output mentioned.
#[must_use]
pub fn tombstone_marker(tool_name: &str, part_id: &str, file_ids: &[String]) -> String {
    let mut marker = format!("[output of tool '{tool_name}' pruned from context; recover it with expand or grep, part {part_id}");
    if !file_ids.is_empty() {
        marker.push_str("; file ids: ");
        marker.push_str(&file_ids.join(", "));
    }
    marker.push(']');
    marker
}

/// The short block a file reference renders as.
#[must_use]
pub fn file_ref_block(file: &FileRef) -> String {
    format!(
        "[file {} {} ({}, {} tokens, kept outside the context)]\n{}\n[/file]",
        file.file_id, file.path, file.file_type, file.token_count, file.summary
    )
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

/// Token cost of one part as rendered; tool parts also report the cost of their result.
#[must_use]
pub fn part_tokens(counter: &TokenCounter, part: &Part) -> (usize, usize) {
    match part {
        // A blank text may render as a placeholder; counting it keeps the budget safe.
        Part::Text(text) if text.trim().is_empty() => (counter.count(empty_text("user")), 0),
        Part::Text(text) => (counter.count(text), 0),
        Part::Tool(tool) => {
            let object = is_json_object(&tool.input);
            let result = counter.count(&result_text(tool, object));
            let call = counter.count(&tool.name)
                + counter.count(call_arguments(tool, object))
                + TOOL_OVERHEAD;
            (call + result, result)
        }
        Part::FileRef(file) => (counter.count(&file_ref_block(file)), 0),
    }
}

/// Renders one stored message as chat messages: text and file blocks in one
/// message, tool calls on it, and one `tool` message per call right after it.
#[must_use]
pub fn render_message(role: &'static str, parts: &[StoredPart]) -> Vec<ChatMessage> {
    let mut content = String::new();
    let mut calls = Vec::new();
    let mut results = Vec::new();
    for stored in parts {
        match &stored.part {
            Part::Text(text) => push_block(&mut content, text),
            Part::FileRef(file) => push_block(&mut content, &file_ref_block(file)),
            Part::Tool(tool) => {
                let object = is_json_object(&tool.input);
                calls.push(ToolCall {
                    id: tool.call_id.clone(),
                    name: tool.name.clone(),
                    arguments: call_arguments(tool, object).to_string(),
                });
                let result = stored
                    .tombstone
                    .clone()
                    .unwrap_or_else(|| result_text(tool, object));
                results.push(ChatMessage {
                    role: "tool",
                    content: Some(result),
                    tool_calls: Vec::new(),
                    tool_call_id: Some(tool.call_id.clone()),
                });
            }
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

/// What a message with no text says in its place.
fn empty_text(role: &str) -> &'static str {
    if role == "assistant" {
        "[empty reply]"
    } else {
        "[empty message]"
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
        let piece = match &stored.part {
            Part::Text(text) => text.clone(),
            Part::FileRef(file) => file_ref_block(file),
            Part::Tool(tool) => {
                let result = stored
                    .tombstone
                    .clone()
                    .unwrap_or_else(|| tool_result_text(tool));
                format!(
                    "tool {}({}) [{}] -> {}",
                    tool.name,
                    tool.input,
                    tool.status.as_str(),
                    result
                )
            }
        };
        entry.push('\n');
        entry.push_str(&piece);
    }
    if let Some(limit) = max_chars {
        truncate_chars(&mut entry, limit);
    }
    entry
}

/// Cuts `text` to at most `limit` characters, on a character boundary, marking the cut.
pub fn truncate_chars(text: &mut String, limit: usize) {
    if let Some((index, _)) = text.char_indices().nth(limit) {
        text.truncate(index);
        text.push_str(" [...]");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> String {
        format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth))
    }

    #[test]
    fn arguments_nested_past_the_limit_are_not_usable() {
        assert!(is_json_object(&nested(MAX_ARGUMENT_DEPTH)));
        assert!(!is_json_object(&nested(MAX_ARGUMENT_DEPTH + 1)));
        assert!(!is_json_object(&nested(5_000)));
    }

    #[test]
    fn brackets_in_strings_do_not_count_as_nesting() {
        let brackets = "[{".repeat(MAX_ARGUMENT_DEPTH);
        assert!(is_json_object(&format!(r#"{{"text": "{brackets}"}}"#)));
        assert!(is_json_object(r#"{"quote": "a \" [ {", "b": [1]}"#));
        assert_eq!(nesting_depth(r#"{"a": "\\", "b": [[1]]}"#), 3);
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
