//! The types the store's view is made of: what a view item points at, the item
//! itself, the view's sizes and one item rendered as chat messages. Types only: the
//! pure rules (`plan`, `request`) and the store both use them, and neither owns them.

pub mod chat;

use std::sync::atomic::{AtomicU64, Ordering};

use crate::parts::Role;
use crate::prefix;
use chat::ChatMessage;

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
/// until the item changes; its generation names this rendering.
#[derive(Debug)]
pub struct RenderedItem {
    pub id: String,
    pub messages: Vec<ChatMessage>,
    /// A hash of `messages`, taken once when rendered: what a request's prefix is
    /// compared by (see [`crate::prefix`]).
    pub fingerprint: u64,
    /// New for every rendering: what the binding keeps its Python copy by.
    pub generation: Generation,
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
            generation: Generation::next(),
        }
    }
}

/// Names one value of a cache for the life of the process: equal generations are
/// the same value, and a value made anew always gets a new one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Generation(pub u64);

static NEXT_GENERATION: AtomicU64 = AtomicU64::new(1);

impl Generation {
    /// A generation no value had before.
    #[must_use]
    pub fn next() -> Self {
        Self(NEXT_GENERATION.fetch_add(1, Ordering::Relaxed))
    }
}
