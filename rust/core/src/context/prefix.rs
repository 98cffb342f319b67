//! How much of a request repeats the beginning of the one before it.
//!
//! Providers cache the longest unchanged prefix of a request, so the tokens a
//! request shares with the previous one from its start are the tokens a provider
//! can serve from cache. A request is compared as a list of units (the tool
//! definitions, the system message, each view item's rendering, the arena's
//! block), each a hash of what it renders and its token cost: hashing each
//! rendering once, when it is rendered, makes a turn's comparison a walk over
//! integers, never over text.

use std::hash::{DefaultHasher, Hash, Hasher};

/// One piece of a request: the hash of what it renders, and its tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unit {
    pub hash: u64,
    pub tokens: i64,
}

/// A hash of `value`, the same in every process: `DefaultHasher::new` uses fixed
/// keys, so a fingerprint never depends on a random seed.
#[must_use]
pub fn stable_hash<T: Hash + ?Sized>(value: &T) -> u64 {
    let mut hasher = DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

/// What a request is made of, in order, as [`Unit`]s.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestPrint {
    units: Vec<Unit>,
}

/// Where an arena block sits in a request, and how (see `Session._place_block`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    pub unit: Unit,
    /// The view item holding the user message the block follows (the newest one for
    /// the current block, an earlier one for a block kept where it was sent); the
    /// last unit when there is none.
    pub after_item: Option<usize>,
    /// Whether the block is merged into that message (profiles that need
    /// alternating roles) rather than sent as a message of its own.
    pub merged: bool,
}

impl RequestPrint {
    /// The print of a request: `head` (tool definitions, system message) first,
    /// then `items` (the view items' units, in order) with each of `blocks` placed
    /// after its item.
    #[must_use]
    pub fn new(head: &[Unit], items: &[Unit], blocks: &[Block]) -> Self {
        let mut units = Vec::with_capacity(head.len() + items.len() + blocks.len());
        units.extend_from_slice(head);
        let mut blocks = blocks.to_vec();
        blocks.sort_by_key(|block| {
            block
                .after_item
                .map_or(usize::MAX, |at| at.min(items.len()))
        });
        let mut placed = blocks.iter().peekable();
        for (at, item) in items.iter().enumerate() {
            units.push(*item);
            let last = at + 1 == items.len();
            while let Some(block) = placed.next_if(|block| {
                block
                    .after_item
                    .is_some_and(|b| b == at || (last && b > at))
            }) {
                place(&mut units, block);
            }
        }
        for block in placed {
            place(&mut units, block);
        }
        Self { units }
    }

    /// Every token of the request.
    #[must_use]
    pub fn tokens(&self) -> i64 {
        self.units.iter().map(|unit| unit.tokens).sum()
    }

    /// The units, in order.
    #[must_use]
    pub fn units(&self) -> &[Unit] {
        &self.units
    }

    /// Tokens of the longest run of units from the start that `other` has too,
    /// in the same places.
    #[must_use]
    pub fn common_prefix_tokens(&self, other: &RequestPrint) -> i64 {
        self.units
            .iter()
            .zip(&other.units)
            .take_while(|(mine, theirs)| mine == theirs)
            .map(|(unit, _)| unit.tokens)
            .sum()
    }

    /// Tokens of this request that a provider's cache of it can no longer serve
    /// once `next` is sent instead: everything after their common prefix.
    #[must_use]
    pub fn invalidated_by(&self, next: &RequestPrint) -> i64 {
        self.tokens() - self.common_prefix_tokens(next)
    }
}

/// Adds `block` after the last unit: as a unit of its own, or merged into that
/// unit when the block is merged into its user message.
fn place(units: &mut Vec<Unit>, block: &Block) {
    match units.last_mut() {
        Some(last) if block.merged && block.after_item.is_some() => {
            last.hash = stable_hash(&(last.hash, block.unit.hash));
            last.tokens += block.unit.tokens;
        }
        _ => units.push(block.unit),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(hash: u64, tokens: i64) -> Unit {
        Unit { hash, tokens }
    }

    #[test]
    fn the_common_prefix_ends_at_the_first_unit_that_differs() {
        let head = [unit(1, 10)];
        let before = RequestPrint::new(&head, &[unit(2, 5), unit(3, 7)], &[]);
        let after = RequestPrint::new(&head, &[unit(2, 5), unit(3, 7), unit(4, 9)], &[]);
        assert_eq!(after.common_prefix_tokens(&before), 22);
        let rewritten = RequestPrint::new(&head, &[unit(9, 5), unit(3, 7)], &[]);
        assert_eq!(rewritten.common_prefix_tokens(&before), 10);
        assert_eq!(before.invalidated_by(&rewritten), 12);
        assert_eq!(before.invalidated_by(&after), 0);
    }

    #[test]
    fn the_block_follows_the_newest_user_item_or_merges_into_it() {
        let items = [unit(2, 5), unit(3, 7), unit(4, 1)];
        let block = Block {
            unit: unit(8, 3),
            after_item: Some(1),
            merged: false,
        };
        let placed = RequestPrint::new(&[], &items, &[block]);
        let hashes: Vec<u64> = placed.units().iter().map(|u| u.hash).collect();
        assert_eq!(hashes, vec![2, 3, 8, 4]);
        let merged = RequestPrint::new(
            &[],
            &items,
            &[Block {
                merged: true,
                ..block
            }],
        );
        assert_eq!(merged.units().len(), 3);
        assert_eq!(merged.tokens(), 16);
        assert_ne!(merged.units()[1].hash, 3);
        let trailing = RequestPrint::new(
            &[],
            &items,
            &[Block {
                after_item: None,
                ..block
            }],
        );
        assert_eq!(trailing.units().last(), Some(&unit(8, 3)));
    }

    #[test]
    fn earlier_blocks_stay_after_their_items_in_any_order_given() {
        let items = [unit(2, 5), unit(3, 7), unit(4, 1), unit(5, 2)];
        let newest = Block {
            unit: unit(8, 3),
            after_item: Some(2),
            merged: false,
        };
        let earlier = Block {
            unit: unit(7, 4),
            after_item: Some(0),
            ..newest
        };
        let placed = RequestPrint::new(&[unit(1, 1)], &items, &[newest, earlier]);
        let hashes: Vec<u64> = placed.units().iter().map(|u| u.hash).collect();
        assert_eq!(hashes, vec![1, 2, 7, 3, 4, 8, 5]);
        assert_eq!(placed.tokens(), 1 + 5 + 7 + 1 + 2 + 3 + 4);
        // Past the last item: after it.
        let beyond = Block {
            after_item: Some(9),
            ..earlier
        };
        let hashes: Vec<u64> = RequestPrint::new(&[], &items[..2], &[beyond])
            .units()
            .iter()
            .map(|u| u.hash)
            .collect();
        assert_eq!(hashes, vec![2, 3, 7]);
    }

    #[test]
    fn hashes_do_not_depend_on_the_process() {
        assert_eq!(stable_hash("system"), stable_hash("system"));
        assert_ne!(stable_hash("system"), stable_hash("system "));
    }
}
