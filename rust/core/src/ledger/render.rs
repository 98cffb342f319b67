//! The ledger as text, under a cap: the stable kinds for the system message, goals,
//! state and the tools' records next to the newest user message. Over its cap it
//! keeps rules and constraints first and says what it left out.

use super::{Item, Kind};
use crate::arena::render::fenced;

/// The line that opens the stable part.
const STABLE_HEADING: &str = "Session ledger (kept through every compaction; each subject \
                              shows its newest value, earlier ones stay stored):";
/// The line that opens the volatile part.
const VOLATILE_HEADING: &str = "Work in progress (from the session ledger):";
/// What a changed item says (its earlier values stay stored).
const CHANGED: &str = " (updated)";
/// Tokens kept for the note on what was left out.
const NOTE_TOKENS: usize = 32;
/// Newest records of each kind shown: older ones are in the summaries.
const SHOWN_COMMANDS: usize = 8;
const SHOWN_FILES: usize = 24;
const SHOWN_OPEN_ERRORS: usize = 10;
const SHOWN_RESOLVED_ERRORS: usize = 3;

/// The rendered ledger and what did not fit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rendered {
    /// Rules, constraints, facts, decisions and preferences; empty when none.
    pub stable: String,
    /// Goals, state, errors, commands and files; empty when none.
    pub volatile: String,
    /// Items left out for room, per kind.
    pub left_out: Vec<(Kind, usize)>,
}

/// Renders the live `items`: the stable part within `stable_cap` tokens and the
/// volatile part within `volatile_cap`, as `count` measures.
#[must_use]
pub fn render(
    items: &[Item],
    (stable_cap, volatile_cap): (usize, usize),
    count: &dyn Fn(&str) -> usize,
) -> Rendered {
    let (stable, volatile): (Vec<&Item>, Vec<&Item>) =
        items.iter().partition(|item| item.kind.is_stable());
    let mut left_out = Vec::new();
    let stable = part(STABLE_HEADING, &stable, stable_cap, count, &mut left_out);
    let volatile = part(
        VOLATILE_HEADING,
        &shown_records(volatile),
        volatile_cap,
        count,
        &mut left_out,
    );
    Rendered {
        stable,
        volatile,
        left_out,
    }
}

/// The records worth showing: every goal and the state, open errors, and the
/// newest resolved errors, commands and files.
fn shown_records(mut items: Vec<&Item>) -> Vec<&Item> {
    items.sort_by_key(|item| std::cmp::Reverse(item.ord));
    let mut counts = [0usize; 4];
    items.retain(|item| {
        let (slot, limit) = match item.kind {
            Kind::Error if item.text.starts_with("resolved:") => (0, SHOWN_RESOLVED_ERRORS),
            Kind::Error => (1, SHOWN_OPEN_ERRORS),
            Kind::Command => (2, SHOWN_COMMANDS),
            Kind::File => (3, SHOWN_FILES),
            _ => return true,
        };
        counts[slot] += 1;
        counts[slot] <= limit
    });
    items
}

/// One part: the items that fit `cap` (by kind, newest first), shown by kind in
/// the order their subjects were first seen, and a note on the rest.
fn part(
    heading: &str,
    items: &[&Item],
    cap: usize,
    count: &dyn Fn(&str) -> usize,
    left_out: &mut Vec<(Kind, usize)>,
) -> String {
    if items.is_empty() || cap == 0 {
        note_all(items, left_out);
        return String::new();
    }
    let mut order: Vec<&Item> = items.to_vec();
    order.sort_by_key(|item| (item.kind.rank(), std::cmp::Reverse(item.ord)));
    let mut room = cap.saturating_sub(count(heading) + NOTE_TOKENS);
    let mut kept: Vec<&Item> = Vec::new();
    let mut dropped: Vec<&Item> = Vec::new();
    let mut headed = [false; Kind::ALL.len()];
    for item in order {
        let heading_cost = if headed[item.kind.rank()] {
            0
        } else {
            count(item.kind.heading()) + 1
        };
        let cost = count(&line(item)) + 1 + heading_cost;
        if cost <= room {
            room -= cost;
            headed[item.kind.rank()] = true;
            kept.push(item);
        } else {
            dropped.push(item);
        }
    }
    if kept.is_empty() {
        note_all(items, left_out);
        return String::new();
    }
    kept.sort_by_key(|item| (item.kind.rank(), item.first_seq, item.ord));
    let mut text = heading.to_string();
    let mut kind = None;
    for item in &kept {
        if kind != Some(item.kind) {
            kind = Some(item.kind);
            text.push('\n');
            text.push_str(item.kind.heading());
            text.push(':');
        }
        text.push_str("\n- ");
        text.push_str(&line(item));
    }
    let before = left_out.len();
    note_all(&dropped, left_out);
    if left_out.len() > before {
        text.push('\n');
        text.push_str(&note(&left_out[before..]));
    }
    text
}

/// An item as its line: the tools' records are escaped like other tool text.
fn line(item: &Item) -> String {
    let text = match item.kind {
        Kind::Error | Kind::Command | Kind::File => fenced(&item.text).into_owned(),
        _ => item.text.clone(),
    };
    // A restatement already says what it replaces.
    if item.changed && !text.contains("(replaces: ") {
        format!("{text}{CHANGED}")
    } else {
        text
    }
}

/// Counts `items` per kind into `left_out`.
fn note_all(items: &[&Item], left_out: &mut Vec<(Kind, usize)>) {
    for kind in Kind::ALL {
        let n = items.iter().filter(|item| item.kind == kind).count();
        if n > 0 {
            left_out.push((kind, n));
        }
    }
}

/// "Left out for room: 3 facts, 1 preference (they stay stored)."
fn note(left_out: &[(Kind, usize)]) -> String {
    let listed: Vec<String> = left_out
        .iter()
        .map(|(kind, n)| format!("{n} {}", kind.as_str()))
        .collect();
    format!(
        "Left out for room: {} (they stay stored).",
        listed.join(", ")
    )
}
