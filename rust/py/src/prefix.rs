//! Prints of requests, to count the tokens a request shares with the previous one.

use lossless_core::prefix::{self, Block, Unit};
use lossless_core::store::Assembled;
use pyo3::prelude::*;

/// The view items of one assembly as units of a request's print, and which of them
/// holds the newest user message.
#[pyclass(frozen, module = "lossless._native")]
pub struct ItemUnits {
    units: Vec<Unit>,
    newest_user: Option<usize>,
    summary_end: i64,
}

impl ItemUnits {
    pub fn of(assembled: &Assembled) -> Self {
        let (mut newest_user, mut summary_end, mut messages) = (None, -1, 0_i64);
        for (at, item) in assembled.items.iter().enumerate() {
            if item.messages.iter().any(|message| message.role == "user") {
                newest_user = Some(at);
            }
            messages += item.messages.len() as i64;
            if item.id.starts_with("sum_") {
                summary_end = messages - 1;
            }
        }
        Self {
            units: assembled.units().collect(),
            newest_user,
            summary_end,
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
    #[pyo3(signature = (items, tools, tool_tokens, system, system_tokens, block, block_tokens, merged))]
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
        let block = (!block.is_empty()).then(|| Block {
            unit: Unit {
                hash: prefix::stable_hash(block),
                tokens: block_tokens,
            },
            after_item: items.newest_user,
            merged,
        });
        Self {
            inner: prefix::RequestPrint::new(&head, &items.units, block),
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
