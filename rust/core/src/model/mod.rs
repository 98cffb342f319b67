//! The types the store's view is made of: what a view item points at, the item
//! itself, the view's sizes and one item rendered as chat messages. Types only: the
//! pure rules (`plan`, `request`) and the store both use them, and neither owns them.

use crate::parts::Role;
use crate::prefix;
use crate::render::ChatMessage;

/// What a view item points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemKind {
    Message,
    Summary,
}

impl ItemKind {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::Message => "message",
            ItemKind::Summary => "summary",
        }
    }
}

/// One entry of a session's context view.
#[derive(Clone, Debug)]
pub struct ViewItem {
    pub position: i64,
    pub kind: ItemKind,
    pub id: String,
    pub tokens: i64,
    /// The message's role; `None` for summaries.
    pub role: Option<Role>,
    /// The message's sequence number; 0 for summaries.
    pub seq: i64,
}

/// Sizes of a session's view.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ViewStats {
    pub items: i64,
    pub message_items: i64,
    pub summary_items: i64,
    pub tokens: i64,
    pub summary_tokens: i64,
    pub version: i64,
    /// Tokens of the newest user message (the instruction every request keeps); 0
    /// without one.
    pub instruction_tokens: i64,
}

/// One view item rendered as chat messages. Assemblies share it (the same `Arc`)
/// until the item changes, so its address identifies one rendering.
#[derive(Debug)]
pub struct RenderedItem {
    pub id: String,
    pub messages: Vec<ChatMessage>,
    /// A hash of `messages`, taken once when rendered: what a request's prefix is
    /// compared by (see [`crate::prefix`]).
    pub fingerprint: u64,
}

impl RenderedItem {
    /// The rendering `messages` of the item `id`, fingerprinted.
    #[must_use]
    pub fn new(id: String, messages: Vec<ChatMessage>) -> Self {
        let fingerprint = prefix::stable_hash(&messages);
        Self {
            id,
            messages,
            fingerprint,
        }
    }
}
