//! Finding the secrets of a text: one case-insensitive automaton of every rule's
//! keywords finds where rules can match, each rule runs only in the windows around
//! its keywords, and overlapping finds are settled.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, MatchKind};

use super::marker::marker_spans;
use super::rule::{Candidate, Rule};
use super::rules;

/// The built-in rules, compiled once per process and shared by every redactor:
/// they do not depend on the key.
pub(crate) struct Builtin {
    /// In table order.
    pub rules: Vec<Rule>,
    prefilter: Prefilter,
}

/// The built-in rules.
pub(crate) fn builtin() -> &'static Builtin {
    static BUILTIN: OnceLock<Builtin> = OnceLock::new();
    BUILTIN.get_or_init(|| {
        let specs: Vec<_> = rules::all().collect();
        Builtin {
            rules: specs.iter().map(|spec| Rule::builtin(spec)).collect(),
            prefilter: Prefilter::new(specs.iter().map(|spec| spec.keywords)),
        }
    })
}

/// The keywords of every rule in one automaton, and which rules each belongs to.
struct Prefilter {
    automaton: AhoCorasick,
    /// By keyword, the indices of the rules that have it.
    rules_of: Vec<Vec<u32>>,
}

impl Prefilter {
    fn new<'k>(keywords_by_rule: impl Iterator<Item = &'k [&'k str]>) -> Self {
        let mut keywords: Vec<&str> = Vec::new();
        let mut rules_of: Vec<Vec<u32>> = Vec::new();
        for (rule, rule_keywords) in keywords_by_rule.enumerate() {
            for &keyword in rule_keywords {
                let at = keywords
                    .iter()
                    .position(|&k| k == keyword)
                    .unwrap_or_else(|| {
                        keywords.push(keyword);
                        rules_of.push(Vec::new());
                        keywords.len() - 1
                    });
                rules_of[at].push(rule as u32);
            }
        }
        // Overlapping matches, so that a keyword inside another (`xoxb` in
        // `xoxe.xoxb-`) still wakes its rules.
        let automaton = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .build(&keywords)
            .expect("the keywords are few and short");
        Prefilter {
            automaton,
            rules_of,
        }
    }

    /// By rule, the merged windows around its keywords in `text`; empty, without
    /// allocating, when no keyword occurs.
    fn windows(&self, text: &str, rules: &[Rule]) -> Vec<Vec<Range<usize>>> {
        let mut windows: Vec<Vec<Range<usize>>> = Vec::new();
        for hit in self.automaton.find_overlapping_iter(text) {
            if windows.is_empty() {
                windows.resize_with(rules.len(), Vec::new);
            }
            for &rule in &self.rules_of[hit.pattern().as_usize()] {
                let reach = rules[rule as usize].reach;
                let window = hit.end().saturating_sub(reach)
                    ..hit.start().saturating_add(reach).min(text.len());
                add_window(&mut windows[rule as usize], window);
            }
        }
        windows
    }
}

/// Adds `window` to a rule's windows, merged with the last one where they touch.
/// Hits come in the order of their ends, so the windows' starts never go back.
fn add_window(windows: &mut Vec<Range<usize>>, window: Range<usize>) {
    match windows.last_mut() {
        Some(last) if window.start <= last.end => last.end = last.end.max(window.end),
        _ => windows.push(window),
    }
}

/// The secrets to redact in `text`, in order, none overlapping another or a marker.
pub(crate) fn find(text: &str, builtin: Option<&Builtin>, custom: &[Rule]) -> Vec<Candidate> {
    let mut found = Vec::new();
    let mut first_custom = 0;
    if let Some(builtin) = builtin {
        let windows = builtin.prefilter.windows(text, &builtin.rules);
        for (order, (rule, rule_windows)) in builtin.rules.iter().zip(&windows).enumerate() {
            for window in rule_windows {
                rule.find(text, window.clone(), order as u32, &mut found);
            }
        }
        first_custom = builtin.rules.len();
    }
    for (order, rule) in custom.iter().enumerate() {
        rule.find(
            text,
            0..text.len(),
            (first_custom + order) as u32,
            &mut found,
        );
    }
    settle(text, found)
}

/// Keeps, of overlapping candidates, the longest, then the earliest, then the one
/// of the earlier rule; and drops any that overlaps a marker already in the text.
fn settle(text: &str, mut candidates: Vec<Candidate>) -> Vec<Candidate> {
    if candidates.is_empty() {
        return candidates;
    }
    candidates.sort_by(|a, b| {
        b.span
            .len()
            .cmp(&a.span.len())
            .then(a.span.start.cmp(&b.span.start))
            .then(a.order.cmp(&b.order))
    });
    // Start to end of every span taken so far; they never overlap.
    let mut taken: BTreeMap<usize, usize> = marker_spans(text)
        .into_iter()
        .map(|span| (span.start, span.end))
        .collect();
    let mut chosen = Vec::new();
    for candidate in candidates {
        let span = &candidate.span;
        // Of the disjoint spans starting before this one ends, the last ends last.
        let clashes = taken
            .range(..span.end)
            .next_back()
            .is_some_and(|(_, &end)| end > span.start);
        if !clashes {
            taken.insert(span.start, span.end);
            chosen.push(candidate);
        }
    }
    chosen.sort_by_key(|candidate| candidate.span.start);
    chosen
}
