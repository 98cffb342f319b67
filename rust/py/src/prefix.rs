//! Prints of requests, to count the tokens a request shares with the previous one.

use std::sync::Arc;

use lossless_core::prefix::{self, Block, Unit};
use lossless_core::store::{Assembled, RenderedItem};
use pyo3::prelude::*;

/// The view items of one assembly as units of a request's print, and where its
/// user messages are.
#[pyclass(frozen, module = "lossless._native")]
pub struct ItemUnits {
    units: Vec<Unit>,
    newest_user: Option<usize>,
    summary_end: i64,
    /// Each item holding a user message: its id, its index among the items and the
    /// index of its last message among the assembled messages.
    users: Vec<(String, usize, usize)>,
    /// The renderings themselves (shared, not copied): what a request in another
    /// format is converted from (see `formats.rs`).
    pub(crate) items: Vec<Arc<RenderedItem>>,
}

impl ItemUnits {
    pub fn of(assembled: &Assembled) -> Self {
        let (mut summary_end, mut messages) = (-1, 0_i64);
        let mut users = Vec::new();
        for (at, item) in assembled.items.iter().enumerate() {
            messages += item.messages.len() as i64;
            if item.messages.iter().any(|message| message.role == "user") {
                users.push((item.id.clone(), at, (messages - 1) as usize));
            }
            if item.id.starts_with("sum_") {
                summary_end = messages - 1;
            }
        }
        Self {
            units: assembled.units().collect(),
            newest_user: users.last().map(|&(_, at, _)| at),
            summary_end,
            users,
            items: assembled.items.clone(),
        }
    }
}

#[pymethods]
impl ItemUnits {
    /// The index of the last summary's message among the assembled messages; -1
    /// when the view holds no summary.
    #[getter]
    fn summary_end(&self) -> i64 {
        self.summary_end
    }

    /// How many chat messages the items render as.
    #[getter]
    fn message_count(&self) -> usize {
        self.items.iter().map(|item| item.messages.len()).sum()
    }

    /// The id of the item holding the newest user message, if any.
    #[getter]
    fn newest_user_id(&self) -> Option<&str> {
        self.users.last().map(|(id, _, _)| id.as_str())
    }

    /// Where the user message `id` is: its index among the items and among the
    /// assembled messages; None when it is not in this assembly.
    fn user_place(&self, id: &str) -> Option<(usize, usize)> {
        self.users
            .iter()
            .find(|(user, _, _)| user == id)
            .map(|&(_, item, message)| (item, message))
    }
}

/// A request as its provider's cache sees it: the tool definitions, the system
/// message, the view items and the arena's block, each hashed with its tokens.
#[pyclass(frozen, module = "lossless._native")]
pub struct RequestPrint {
    inner: prefix::RequestPrint,
}

#[pymethods]
impl RequestPrint {
    #[new]
    #[pyo3(signature = (items, tools, tool_tokens, system, system_tokens, block, block_tokens, merged, earlier = Vec::new()))]
    #[expect(clippy::too_many_arguments, reason = "one value per part of a request")]
    fn new(
        items: &ItemUnits,
        tools: &str,
        tool_tokens: i64,
        system: &str,
        system_tokens: i64,
        block: &str,
        block_tokens: i64,
        merged: bool,
        earlier: Vec<(usize, String, i64)>,
    ) -> Self {
        let head = [
            Unit {
                hash: prefix::stable_hash(tools),
                tokens: tool_tokens,
            },
            Unit {
                hash: prefix::stable_hash(system),
                tokens: system_tokens,
            },
        ];
        let placed = |text: &str, tokens: i64, after_item: Option<usize>| Block {
            unit: Unit {
                hash: prefix::stable_hash(text),
                tokens,
            },
            after_item,
            merged,
        };
        let mut blocks: Vec<Block> = earlier
            .into_iter()
            .map(|(item, text, tokens)| placed(&text, tokens, Some(item)))
            .collect();
        if !block.is_empty() {
            blocks.push(placed(block, block_tokens, items.newest_user));
        }
        Self {
            inner: prefix::RequestPrint::new(&head, &items.units, &blocks),
        }
    }

    /// Every token of the request.
    #[getter]
    fn tokens(&self) -> i64 {
        self.inner.tokens()
    }

    /// Tokens from the start of this request that `other` has too, in the same places.
    fn common_prefix_tokens(&self, other: &RequestPrint) -> i64 {
        self.inner.common_prefix_tokens(&other.inner)
    }

    /// Tokens of this request past its common prefix with `next`.
    fn invalidated_by(&self, next: &RequestPrint) -> i64 {
        self.inner.invalidated_by(&next.inner)
    }
}
