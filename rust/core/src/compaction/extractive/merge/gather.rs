//! Gathering: the summaries' sections merged title by title, in keep order.

use std::collections::HashSet;

use super::super::{Item, SectionKind};
use super::parse::parse;
use super::tally::Tally;
use super::{shows_newest_first, Slots, KEPT};

/// The items of `bodies` (oldest first) by slot, each in keep order.
pub(super) fn gather(bodies: &[&str]) -> Slots {
    let mut lines: [Vec<&str>; 9] = Default::default();
    let mut kept: Vec<&str> = Vec::new();
    let mut latest_request = None;
    for body in bodies {
        let Some(parsed) = parse(body) else {
            kept.push(body.trim());
            continue;
        };
        // What the summary's messages last asked: its request in progress, or else
        // its goal (the extractive summariser leaves out a request that is the goal).
        let request = parsed
            .last_line(SectionKind::InProgress)
            .or_else(|| parsed.last_line(SectionKind::Goal));
        latest_request = request.or(latest_request);
        for (kind, mut items) in parsed.sections {
            // Oldest first, whatever order the section shows them in.
            if shows_newest_first(kind.index()) {
                items.reverse();
            }
            lines[kind.index()].extend(items);
        }
        kept.extend(parsed.kept);
    }
    let mut tally = Tally::default();
    for kind in [SectionKind::Completed, SectionKind::Other] {
        lines[kind.index()].retain(|line| !tally.add(line));
    }
    let mut slots: Slots = Default::default();
    for (index, section) in lines.iter().enumerate() {
        slots[index] = newest_distinct(section);
    }
    put_first(
        &mut slots[SectionKind::Completed.index()],
        tally.tools_line().into_iter().collect(),
    );
    put_first(&mut slots[SectionKind::Other.index()], tally.other_lines());
    let goals = &lines[SectionKind::Goal.index()];
    slots[SectionKind::Goal.index()] = goal_items(goals);
    slots[SectionKind::InProgress.index()] = latest_request
        .filter(|request| goals.last() != Some(request))
        .map(|request| item(request, 0))
        .into_iter()
        .collect();
    kept.retain(|block| !block.is_empty());
    slots[KEPT] = newest_distinct(&kept);
    slots
}

/// `items` with `lines` before them, kept first and shown first.
fn put_first(items: &mut Vec<Item>, lines: Vec<String>) {
    let shift = lines.len();
    for item in items.iter_mut() {
        item.pos += shift;
    }
    let firsts = lines
        .into_iter()
        .enumerate()
        .map(|(pos, text)| Item { text, pos });
    items.splice(0..0, firsts);
}

/// The newest goal, and the oldest one before it when it differs.
fn goal_items(goals: &[&str]) -> Vec<Item> {
    let (Some(&oldest), Some(&newest)) = (goals.first(), goals.last()) else {
        return Vec::new();
    };
    let mut items = vec![item(newest, 1)];
    if oldest != newest {
        items.push(item(oldest, 0));
    }
    items
}

/// Every distinct entry, newest first; an entry seen more than once keeps the
/// display place of its newest occurrence.
fn newest_distinct(entries: &[&str]) -> Vec<Item> {
    let mut seen = HashSet::new();
    entries
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, text)| seen.insert(**text))
        .map(|(pos, text)| item(text, pos))
        .collect()
}

fn item(text: &str, pos: usize) -> Item {
    Item {
        text: text.to_owned(),
        pos,
    }
}
