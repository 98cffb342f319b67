//! Budget fitting of a merge: the extractive summariser's rounds of select,
//! render and count, over its sections and the kept summaries.

use std::fmt::Write as _;

use super::super::fit::{rate_of, truncate_to_fit};
use super::super::{Item, DEFAULT_TOKENS_PER_BYTE, DISPLAY_ORDER, MAX_FIT_ROUNDS};
use super::{
    display_order, keep_order, shows_newest_first, Slots, KEPT, KEPT_SEPARATOR, KEPT_TITLE,
};

/// Each round aims this much lower than the last, which did not fit.
const ROUND_SHRINK: f64 = 0.97;

fn title(slot: usize) -> &'static str {
    DISPLAY_ORDER
        .get(slot)
        .map_or(KEPT_TITLE, |kind| kind.title())
}

/// What comes before each item of `slot` but the first.
fn separator(slot: usize) -> &'static str {
    if slot == KEPT {
        KEPT_SEPARATOR
    } else {
        "\n"
    }
}

fn marker(slot: usize) -> &'static str {
    match DISPLAY_ORDER.get(slot) {
        Some(kind) if kind.is_list() => "- ",
        _ => "",
    }
}

/// Renders the first `take[slot]` items (in keep order) of each slot.
fn render(slots: &Slots, take: &[usize; 10]) -> String {
    let mut out = String::new();
    for slot in display_order() {
        let chosen_count = take[slot];
        if chosen_count == 0 {
            continue;
        }
        let mut chosen: Vec<&Item> = slots[slot][..chosen_count].iter().collect();
        chosen.sort_by_key(|item| item.pos);
        if shows_newest_first(slot) {
            chosen.reverse();
        }
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(title(slot));
        out.push('\n');
        for (index, item) in chosen.into_iter().enumerate() {
            if index > 0 {
                out.push_str(separator(slot));
            }
            let _ = write!(out, "{}{}", marker(slot), item.text);
        }
    }
    out
}

/// The newest items of each slot, in priority order, whose estimated cost fits
/// `target`. A slot stops at its first item that does not fit (so an older item
/// never stays in place of a newer one), and the next slot is tried: one large
/// summary kept as written does not shut out every section below it.
fn select(slots: &Slots, tokens_per_byte: f64, target: f64) -> [usize; 10] {
    let mut take = [0usize; 10];
    let mut used = 0.0;
    for slot in keep_order() {
        for (index, item) in slots[slot].iter().enumerate() {
            let mut bytes = item.text.len() + separator(slot).len() + marker(slot).len();
            if index == 0 {
                bytes += title(slot).len() + 2;
            }
            let cost = bytes as f64 * tokens_per_byte;
            if used + cost > target {
                break;
            }
            used += cost;
            take[slot] = index + 1;
        }
    }
    take
}

pub(super) fn fit(slots: &Slots, max_tokens: usize, count: &dyn Fn(&str) -> usize) -> String {
    let all: [usize; 10] = std::array::from_fn(|slot| slots[slot].len());
    let full = render(slots, &all);
    let budget = max_tokens as f64;
    let mut rate = DEFAULT_TOKENS_PER_BYTE;
    // As the extractive summariser: count the whole only when it might fit.
    if full.len() as f64 * rate <= 2.0 * budget {
        let tokens = count(&full);
        if tokens <= max_tokens {
            return full;
        }
        rate = rate_of(tokens, &full);
    }
    let mut target = budget;
    let mut last = String::new();
    for _ in 0..MAX_FIT_ROUNDS {
        let take = select(slots, rate, target);
        if take.iter().all(|&taken| taken == 0) {
            break;
        }
        let out = render(slots, &take);
        let tokens = count(&out);
        if tokens <= max_tokens {
            return grow(slots, &take, out, tokens, max_tokens, count);
        }
        rate = rate_of(tokens, &out).max(rate);
        target *= ROUND_SHRINK;
        last = out;
    }
    if last.is_empty() {
        last = top_item(slots);
    }
    truncate_to_fit(&last, max_tokens, count)
}

/// After a round that fits with room to spare, one more with the rate measured
/// on it; keeps whichever larger selection fits.
fn grow(
    slots: &Slots,
    take: &[usize; 10],
    out: String,
    tokens: usize,
    max_tokens: usize,
    count: &dyn Fn(&str) -> usize,
) -> String {
    if tokens as f64 >= 0.9 * max_tokens as f64 || tokens == 0 {
        return out;
    }
    let bigger = select(slots, rate_of(tokens, &out), max_tokens as f64);
    if bigger.iter().sum::<usize>() <= take.iter().sum::<usize>() {
        return out;
    }
    let candidate = render(slots, &bigger);
    if count(&candidate) <= max_tokens {
        candidate
    } else {
        out
    }
}

/// The newest item of the highest-priority slot that has one, with its title.
fn top_item(slots: &Slots) -> String {
    let mut take = [0usize; 10];
    if let Some(slot) = keep_order().find(|&slot| !slots[slot].is_empty()) {
        take[slot] = 1;
    }
    render(slots, &take)
}
