//! The chat format's message, and the small rules every kind's rendering keeps to.

/// One entry of an assistant message's `tool_calls`.
#[derive(Clone, Debug, PartialEq, Hash)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// A provider's block sent back beside an assistant message: its reasoning, or
/// its compaction of the conversation before it.
#[derive(Clone, Debug, PartialEq, Hash)]
pub struct ReasoningBlock {
    /// The block as JSON text, exactly as the provider sent it.
    pub payload: String,
    /// Its readable reasoning, if any (sent along as `reasoning_content`).
    pub text: Option<String>,
    /// Where litellm takes it back.
    pub kind: BlockKind,
}

/// Where litellm takes a provider's block back on an assistant message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockKind {
    /// `thinking_blocks`: Anthropic's (and Bedrock's) thinking.
    Thinking,
    /// `reasoning_items`: the Responses API's reasoning items.
    ReasoningItem,
    /// `provider_specific_fields.compaction_blocks`: Anthropic's compaction.
    Compaction,
}

/// An image or a document a message carries beside its text.
#[derive(Clone, Debug, PartialEq, Hash)]
pub struct Attachment {
    /// Whether it is an image or a document.
    pub kind: AttachmentKind,
    /// Its MIME type: `image/png`, `image/jpeg`, `image/gif`, `image/webp`, `application/pdf`.
    pub media_type: String,
    /// Where its bytes are: inline as base64, or at a URL that is never fetched.
    pub source: AttachmentSource,
    /// The caption or alt text it came with, if any.
    pub caption: Option<String>,
}

/// What an attachment is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttachmentKind {
    Image,
    Document,
}

/// Where an attachment's bytes are.
#[derive(Clone, Debug, PartialEq, Hash)]
pub enum AttachmentSource {
    /// The bytes, base64-encoded.
    Base64(std::sync::Arc<str>),
    /// A URL, sent as it is.
    Url(String),
}

/// One OpenAI chat message.
#[derive(Clone, Debug, PartialEq, Hash)]
pub struct ChatMessage {
    pub role: &'static str,
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub tool_call_id: Option<String>,
    /// Provider blocks sent back with an assistant message, in the order the
    /// provider sent them: its compaction blocks, to the provider that made them,
    /// and its reasoning (litellm's `thinking_blocks`), only within the tool loop
    /// that produced it, to the provider that produced it.
    pub reasoning: Vec<ReasoningBlock>,
    pub attachments: Vec<Attachment>,
}

impl ChatMessage {
    pub(crate) fn plain(role: &'static str, content: String) -> Self {
        Self {
            role,
            content: Some(content),
            tool_calls: Vec::new(),
            tool_call_id: None,
            reasoning: Vec::new(),
            attachments: Vec::new(),
        }
    }
}

/// The readable text of `blocks`, joined as a message's `reasoning_content`; `None`
/// when none has any.
#[must_use]
pub fn reasoning_content(blocks: &[ReasoningBlock]) -> Option<String> {
    let texts: Vec<&str> = blocks
        .iter()
        .filter(|block| block.kind != BlockKind::Compaction)
        .filter_map(|block| block.text.as_deref())
        .filter(|text| !text.is_empty())
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n\n"))
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
