//! Folding found items into the live ledger: a value of a subject already live
//! replaces it (and says it changed); one that repeats it changes nothing.

use std::collections::HashMap;

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
    let mut changes = Vec::new();
    for (offset, item) in found.iter().enumerate() {
        let subject = resolve(&current, item);
        let before = current.get(&subject);
        if item.only_if_live && before.is_none_or(|open| open.text.starts_with("resolved:")) {
            continue;
        }
        if before.is_some_and(|before| before.text == item.text) {
            continue;
        }
        let kind = before.map_or(item.kind, |before| before.kind.stronger(item.kind));
        let text = match before {
            Some(before) if item.restates => updated_text(&before.text, &item.text),
            _ => item.text.clone(),
        };
        if before.is_some_and(|before| before.text == text) {
            continue;
        }
        let changed = before.is_some() && (kind.is_stable() || kind == Kind::Goal);
        changes.push(Change {
            kind,
            subject: subject.clone(),
            text: text.clone(),
            seq: item.seq,
            changed,
        });
        let order = live.len() + offset;
        current.insert(subject, Current { kind, text, order });
    }
    changes
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
        let overlap = |subject: &str| {
            let held: Vec<&str> = subject.split(' ').collect();
            let shared = words.iter().filter(|word| held.contains(word)).count();
            shared as f64 / words.len().max(1) as f64
        };
        let named = current
            .iter()
            .filter(|(_, value)| replaceable(value))
            .map(|(subject, value)| (overlap(subject), value.order, subject))
            .filter(|(share, ..)| *share >= RESTATED_OVERLAP)
            .max_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        if let Some((.., subject)) = named {
            return subject.clone();
        }
    }
    item.subject.clone()
}

/// The text of an item after a restatement: its own sentence with the new value in
/// place of the old one ("Never push to the branch release-7" restated as "the
/// protected branch changed to release-9"), so what the rule says stays; the
/// restatement itself when either holds more than one value.
fn updated_text(old: &str, restated: &str) -> String {
    match (single_value(old), single_value(restated)) {
        (Some(before), Some(after)) => old.replacen(&before, &after, 1),
        _ => restated.to_string(),
    }
}

/// The one value of `text` as written (a run of value words), if it holds one.
fn single_value(text: &str) -> Option<String> {
    let words = words(text);
    let mut runs = words
        .iter()
        .enumerate()
        .filter(|(at, word)| word.value && (*at == 0 || !words[at - 1].value))
        .map(|(at, _)| at);
    let start = runs.next()?;
    if runs.next().is_some() {
        return None;
    }
    let run: Vec<&str> = words[start..]
        .iter()
        .take_while(|word| word.value)
        .map(|word| word.raw)
        .collect();
    let value = run.join(" ");
    text.contains(&value).then_some(value)
}
