//! Folding found items into the live ledger: a value of a subject already live
//! replaces it (and says it changed); one that repeats it changes nothing.

use std::collections::HashMap;

use super::cues::{bit, cue_bits, LEADERS, SUBJECT_STOPWORDS};
use super::subject::words;
use super::{Found, Item, Kind};

/// Share of a restatement's subject words an earlier item's subject must hold for
/// the restatement to replace it ("the protected branch changed to X" replaces
/// "Never push to the branch Y").
const RESTATED_OVERLAP: f64 = 0.5;

/// A new value of a subject, to be stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub kind: Kind,
    pub subject: String,
    pub text: String,
    pub seq: i64,
    /// It replaces an earlier value of its subject.
    pub changed: bool,
}

/// The live value of a subject while merging.
struct Current {
    kind: Kind,
    text: String,
    /// When it was last set, to find the newest item.
    order: usize,
}

/// The changes `found` (oldest first) makes to the `live` items.
#[must_use]
pub fn merge(live: &[Item], found: &[Found]) -> Vec<Change> {
    let mut current: HashMap<String, Current> = live
        .iter()
        .enumerate()
        .map(|(order, item)| {
            let value = Current {
                kind: item.kind,
                text: item.text.clone(),
                order,
            };
            (item.subject.clone(), value)
        })
        .collect();
    let mut written = Vec::new();
    for (offset, item) in found.iter().enumerate() {
        let subject = resolve(&current, item);
        let before = current.get(&subject);
        if item.only_if_live && before.is_none_or(|open| open.text.starts_with("resolved:")) {
            continue;
        }
        if before.is_some_and(|before| before.text == item.text) {
            continue;
        }
        // A restatement gives a new value, not a new kind: a goal stays a goal.
        let kind = before.map_or(item.kind, |before| {
            if item.restates {
                before.kind
            } else {
                before.kind.stronger(item.kind)
            }
        });
        let text = match before {
            Some(before) if item.restates => updated_text(&before.text, &item.text),
            _ => item.text.clone(),
        };
        if before.is_some_and(|before| before.text == text) {
            continue;
        }
        let changed = before.is_some() && (kind.is_stable() || kind == Kind::Goal);
        written.push(Change {
            kind,
            subject: subject.clone(),
            text: text.clone(),
            seq: item.seq,
            changed,
        });
        let order = live.len() + offset;
        current.insert(subject, Current { kind, text, order });
    }
    written
}

/// The subject an item is stored under: the one holding the value it says it
/// replaces, the one a "use X instead" mostly repeats, or its own.
fn resolve(current: &HashMap<String, Current>, item: &Found) -> String {
    if current.contains_key(&item.subject) {
        return item.subject.clone();
    }
    let replaceable = |value: &Current| value.kind.is_stable() || value.kind == Kind::Goal;
    if let Some(replaced) = &item.replaces {
        let holder = current
            .iter()
            .filter(|(_, value)| replaceable(value) && value.text.contains(replaced.as_str()))
            .max_by_key(|(_, value)| value.order);
        if let Some((subject, _)) = holder {
            return subject.clone();
        }
    }
    if item.restates {
        let words: Vec<&str> = item.subject.split(' ').collect();
        // A shape counts only when one item alone has it: two hosts, two branches
        // say nothing of which one changed.
        let new_shapes = value_shapes(&item.text);
        let shapes: Vec<&String> = new_shapes
            .iter()
            .filter(|shape| {
                let holders = current
                    .values()
                    .filter(|value| replaceable(value) && value_shapes(&value.text).contains(shape))
                    .count();
                holders == 1
            })
            .collect();
        let any_shapes = all_shapes(&item.text);
        let hinted = kind_hint(&words);
        let said = content_words(&item.text);
        let score = |subject: &str, value: &Current| {
            let held: Vec<&str> = subject.split(' ').map(singular).collect();
            let shared = words
                .iter()
                .filter(|word| held.contains(&singular(word)))
                .count();
            let overlap = shared as f64 / words.len().max(1) as f64;
            // A new value shaped like an item's ("db-7976.internal" and
            // "db-3287.internal") is most likely that item's new value; one shaped
            // like none of its values (a version for a date) is most likely not.
            let same_shape = value_shapes(&value.text)
                .iter()
                .any(|shape| shapes.contains(&shape));
            let held_shapes = all_shapes(&value.text);
            let other_shape = !any_shapes.is_empty()
                && !held_shapes.is_empty()
                && !held_shapes.iter().any(|shape| any_shapes.contains(shape));
            // "the latency target" is a goal's, "the memory limit" a constraint's:
            // of an item that shares a word or a shape with it, not of any of them.
            let related = same_shape
                || content_words(&value.text)
                    .iter()
                    .any(|word| said.contains(word));
            let kind_named = related && hinted.is_some_and(|kind| kind == value.kind);
            overlap + if same_shape { SHAPE_WEIGHT } else { 0.0 }
                - if other_shape { SHAPE_WEIGHT } else { 0.0 }
                + if kind_named { SHAPE_WEIGHT } else { 0.0 }
        };
        let named = current
            .iter()
            .filter(|(_, value)| replaceable(value))
            .map(|(subject, value)| (score(subject, value), value.order, subject))
            .filter(|(score, ..)| *score >= RESTATED_OVERLAP)
            .max_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        if let Some((.., subject)) = named {
            return subject.clone();
        }
    }
    item.subject.clone()
}

/// What a restated item's text says it replaces.
const REPLACES: &str = " (replaces: ";

/// The text of an item after a restatement: the restatement, then what it replaces
/// with the old values taken out ("Update: the protected branch changed to
/// release-9. (replaces: Never push to the branch ….)"), so what the rule says stays
/// and no stale value reads as current. A later restatement keeps the same note.
fn updated_text(old: &str, restated: &str) -> String {
    let note = match old.find(REPLACES) {
        Some(at) => old[at..].to_string(),
        None => format!("{REPLACES}{})", masked(old)),
    };
    format!("{restated}{note}")
}

/// `text` with each of its values written as `…`.
fn masked(text: &str) -> String {
    let mut out = text.to_string();
    let mut from = 0;
    for word in words(text).iter().filter(|word| word.value) {
        if let Some(at) = out[from..].find(word.raw) {
            let at = from + at;
            out.replace_range(at..at + word.raw.len(), "…");
            from = at + "…".len();
        }
    }
    out
}

/// Fewest symbols of a value's shape that tell it apart: a bare number or word
/// ("9", "a") is the shape of too many values.
const MIN_SHAPE_SYMBOLS: usize = 3;
/// What a shared value shape adds to a restatement's word overlap: enough alone,
/// less than words shared with another item and a shape.
const SHAPE_WEIGHT: f64 = 0.6;

/// Words of a restatement's subject that name the kind of item it restates.
const GOAL_HINTS: &[&str] = &["target", "goal", "objective", "aim", "milestone"];
const CONSTRAINT_HINTS: &[&str] = &[
    "limit", "cap", "budget", "quota", "deadline", "maximum", "minimum", "ceiling",
];

/// The kind a restatement's subject words name, if any.
fn kind_hint(words: &[&str]) -> Option<Kind> {
    if words.iter().any(|word| GOAL_HINTS.contains(word)) {
        Some(Kind::Goal)
    } else if words.iter().any(|word| CONSTRAINT_HINTS.contains(word)) {
        Some(Kind::Constraint)
    } else {
        None
    }
}

/// The words of `text` that say what it is about: no values, no words that tell
/// no subjects apart, none that only announce a change; plurals folded.
fn content_words(text: &str) -> Vec<String> {
    words(text)
        .iter()
        .filter(|word| !word.value && word.lower.chars().count() >= 2)
        .filter(|word| {
            let lower = word.lower.as_str();
            !SUBJECT_STOPWORDS.contains(&lower)
                && !LEADERS.contains(&lower)
                && cue_bits(lower) & (bit::RESTATE | bit::RULE | bit::LIMIT) == 0
                && !CHANGE_WORDS.contains(&lower)
        })
        .map(|word| singular(&word.lower).to_string())
        .collect()
}

/// Words of a restatement that say it changes something, not what.
const CHANGE_WORDS: &[&str] = &[
    "use", "changed", "change", "instead", "set", "moved", "earlier",
];

/// A word without a plural `s`, so "credits" and "credit" are one word.
fn singular(word: &str) -> &str {
    match word.strip_suffix('s') {
        Some(stem) if stem.len() >= 3 && !stem.ends_with('s') => stem,
        _ => word,
    }
}

/// The shapes of every value of `text`, distinctive or not.
fn all_shapes(text: &str) -> Vec<String> {
    words(text)
        .iter()
        .filter(|word| word.value)
        .map(|word| shape(word.raw))
        .collect()
}

/// The shapes of the values of `text` that are distinctive: letters as `a`, digits
/// as `9`, runs collapsed, other characters kept ("corrik-db-7976.internal" is
/// `a-a-9.a`).
fn value_shapes(text: &str) -> Vec<String> {
    words(text)
        .iter()
        .filter(|word| word.value)
        .map(|word| shape(word.raw))
        // Both letters and digits: "9.9.9" (any version) or "$9" (any amount)
        // would tie unrelated items.
        .filter(|shape| {
            shape.chars().count() >= MIN_SHAPE_SYMBOLS && shape.contains('a') && shape.contains('9')
        })
        .collect()
}

fn shape(value: &str) -> String {
    let mut shape = String::new();
    for c in value.chars() {
        let symbol = if c.is_alphabetic() {
            'a'
        } else if c.is_ascii_digit() {
            '9'
        } else {
            c
        };
        if !(shape.ends_with(symbol) && matches!(symbol, 'a' | '9')) {
            shape.push(symbol);
        }
    }
    shape
}
