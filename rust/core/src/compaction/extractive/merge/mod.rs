//! Condensation without a model: merges summaries section by section.
//!
//! Each summary the extractive summariser wrote is read back into its
//! sections; same-titled sections are merged and the result is fitted to a
//! budget by dropping the oldest items of the lowest-priority sections first,
//! so what is cut is what matters least to an agent that works on: old
//! discoveries, not the newest state or a constraint. A summary in another form
//! (a model's, a truncation, an erasure marker) is kept whole, as written,
//! under a section of its own.

mod fit;
mod gather;
mod parse;
mod tally;
#[cfg(test)]
mod tests;

use super::{Item, SectionKind, DISPLAY_ORDER, PRIORITY_ORDER};

/// The section holding the summaries kept as written, oldest first.
const KEPT_TITLE: &str = "## Summaries kept as written";
/// What separates two summaries kept as written: a thematic break between blank
/// lines, which the extractive summariser never writes.
const KEPT_SEPARATOR: &str = "\n\n---\n\n";
/// Slot of the kept summaries, after the nine sections.
const KEPT: usize = 9;

/// Items per slot: the nine sections by [`SectionKind::index`], then the kept
/// summaries. Items are in keep order (the first to drop last); `pos` gives the
/// display order.
type Slots = [Vec<Item>; 10];

/// Slots in the order they claim the budget: the extractive summariser's
/// priorities, with the kept summaries right after the request in progress. A
/// kept summary is a whole summary (its own goal, constraints and latest
/// state), worth more than any single item of the lower sections.
fn keep_order() -> impl Iterator<Item = usize> {
    PRIORITY_ORDER.into_iter().flat_map(|kind| {
        let then_kept = (kind == SectionKind::InProgress).then_some(KEPT);
        std::iter::once(kind.index()).chain(then_kept)
    })
}

/// Whether the extractive summariser shows `slot`'s items newest first (files,
/// by their latest mention) rather than oldest first.
fn shows_newest_first(slot: usize) -> bool {
    slot == SectionKind::Files.index()
}

/// Slots in display order: the sections, then the kept summaries.
fn display_order() -> impl Iterator<Item = usize> {
    DISPLAY_ORDER
        .into_iter()
        .map(SectionKind::index)
        .chain([KEPT])
}

/// Merges `bodies` (summaries without their file-id footers, oldest first)
/// into one text of at most `max_tokens` tokens as measured by `count`.
///
/// Sections with the same title are merged in display order. A list section
/// holds every item, oldest first, an item repeated keeping only its newest
/// place. The goal is the newest summary's, with the oldest summary's before it
/// when it differs (the first instruction matters); the request in progress is
/// the newest one, unless it is that goal. When everything does not fit, the
/// oldest items of the lowest-priority sections go first (constraints last);
/// only when not even one item fits is the text truncated. `count` is called a
/// bounded number of times whatever the number of items. The same input always
/// gives the same text. No file-id footer is added.
#[must_use]
pub fn merge_summaries(
    bodies: &[&str],
    max_tokens: usize,
    count: &dyn Fn(&str) -> usize,
) -> String {
    if max_tokens == 0 {
        return String::new();
    }
    fit::fit(&gather::gather(bodies), max_tokens, count)
}
