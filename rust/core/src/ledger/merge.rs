//! Folding found items into the live ledger: a value of a subject already live
//! replaces it (and says it changed); one that repeats it changes nothing.

use std::collections::HashMap;

use super::{Found, Item, Kind};

/// Share of a "use X instead" sentence's subject words an earlier item must hold
/// for the sentence to replace it.
const INSTEAD_OVERLAP: f64 = 0.6;

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
        let changed = before.is_some() && (kind.is_stable() || kind == Kind::Goal);
        changes.push(Change {
            kind,
            subject: subject.clone(),
            text: item.text.clone(),
            seq: item.seq,
            changed,
        });
        let order = live.len() + offset;
        current.insert(
            subject,
            Current {
                kind,
                text: item.text.clone(),
                order,
            },
        );
    }
    changes
}

/// The subject an item is stored under: the one holding the value it says it
/// replaces, the one a "use X instead" mostly repeats, or its own.
fn resolve(current: &HashMap<String, Current>, item: &Found) -> String {
    if current.contains_key(&item.subject) {
        return item.subject.clone();
    }
    let newest = |test: &dyn Fn(&str, &Current) -> bool| {
        current
            .iter()
            .filter(|(subject, value)| value.kind.is_stable() && test(subject, value))
            .max_by_key(|(_, value)| value.order)
            .map(|(subject, _)| subject.clone())
    };
    if let Some(replaced) = &item.replaces {
        if let Some(subject) = newest(&|_, value| value.text.contains(replaced.as_str())) {
            return subject;
        }
    }
    if item.instead {
        let words: Vec<&str> = item.subject.split(' ').collect();
        let overlap = |subject: &str| {
            let held: Vec<&str> = subject.split(' ').collect();
            let shared = words.iter().filter(|word| held.contains(word)).count();
            shared as f64 / words.len().max(1) as f64
        };
        if let Some(subject) = newest(&|subject, _| overlap(subject) >= INSTEAD_OVERLAP) {
            return subject;
        }
    }
    item.subject.clone()
}
