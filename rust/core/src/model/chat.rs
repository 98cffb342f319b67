//! The chat format's message, and the small rules every kind's rendering keeps to.

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
    pub(crate) fn plain(role: &'static str, content: String) -> Self {
        Self {
            role,
            content: Some(content),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// `text`, or `placeholder` when it holds nothing but white space: providers
/// reject empty and blank text blocks.
#[must_use]
pub fn non_empty(text: String, placeholder: &str) -> String {
    if text.trim().is_empty() {
        placeholder.to_string()
    } else {
        text
    }
}

/// What a message with no text says in its place.
#[must_use]
pub fn empty_text(role: &str) -> &'static str {
    if role == "assistant" {
        "[empty reply]"
    } else {
        "[empty message]"
    }
}

/// Cuts `text` to at most `limit` characters, on a character boundary, marking the cut.
pub fn truncate_chars(text: &mut String, limit: usize) {
    if let Some((index, _)) = text.char_indices().nth(limit) {
        text.truncate(index);
        text.push_str(" [...]");
    }
}
