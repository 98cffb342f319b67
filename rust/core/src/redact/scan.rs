//! Finding the secrets of a text: one case-insensitive automaton of every rule's
//! keywords finds where rules can match, each rule runs only there, and
//! overlapping finds are settled.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

use super::marker::marker_spans;
use super::rule::{Around, Candidate, Rule};
use super::rules;

/// The built-in rules, compiled once per process and shared by every redactor:
/// they do not depend on the key.
pub(crate) struct Builtin {
    /// In table order.
    pub rules: Vec<Rule>,
    /// Their keywords.
    pub prefilter: Prefilter,
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

/// Where a keyword occurs in a text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Hit {
    /// Where the keyword starts.
    pub start: usize,
    /// Where it ends.
    pub end: usize,
    /// Which keyword it is.
    keyword: u32,
}

/// The keywords of every rule in one automaton, and which rules each belongs to.
pub(crate) struct Prefilter {
    automaton: AhoCorasick,
    /// By keyword, the indices of the rules that have it.
    rules_of: Vec<Vec<u32>>,
    /// The length of the longest keyword.
    longest: usize,
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
        // Every occurrence of every keyword (overlapping matches), so that the set
        // of hits depends on the bytes around each alone, and a keyword inside
        // another (`xoxb` in `xoxe.xoxb-`) still wakes its rules. A DFA: with case
        // insensitivity and a hundred keywords no prefilter applies, and it is the
        // fastest automaton byte for byte.
        let automaton = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::DFA))
            .build(&keywords)
            .expect("the keywords are few and short");
        Prefilter {
            automaton,
            rules_of,
            longest: keywords.iter().map(|k| k.len()).max().unwrap_or(0),
        }
    }

    /// Every keyword in `range` of `text`, in the order of their ends; empty,
    /// without allocating, when none occurs.
    pub(crate) fn hits(&self, text: &str, range: Range<usize>) -> Vec<Hit> {
        let input = aho_corasick::Input::new(text).range(range);
        self.automaton
            .find_overlapping_iter(input)
            .map(|found| Hit {
                start: found.start(),
                end: found.end(),
                keyword: found.pattern().as_u32(),
            })
            .collect()
    }

    /// The hits of `text` after `replaced` (in order, disjoint) became the markers
    /// at `markers` in `out`, computed without scanning all of `out`: the hits
    /// clear of the replaced spans move with the text, and the hits that overlap a
    /// marker are looked for around it. The result is what [`Prefilter::hits`]
    /// over `out` gives, in another order.
    pub(crate) fn moved_hits(
        &self,
        hits: &[Hit],
        replaced: &[Range<usize>],
        out: &str,
        markers: &[Range<usize>],
    ) -> Vec<Hit> {
        let mut moved = Vec::with_capacity(hits.len());
        let mut next = 0;
        let mut shift: isize = 0;
        for hit in hits {
            while next < replaced.len() && replaced[next].end <= hit.start {
                shift += markers[next].len() as isize - replaced[next].len() as isize;
                next += 1;
            }
            if next < replaced.len() && replaced[next].start < hit.end {
                continue;
            }
            let at = |offset: usize| offset.checked_add_signed(shift).expect("within the text");
            moved.push(Hit {
                start: at(hit.start),
                end: at(hit.end),
                ..*hit
            });
        }
        let reach = self.longest.saturating_sub(1);
        for marker in markers {
            let around = marker.start.saturating_sub(reach)..(marker.end + reach).min(out.len());
            moved.extend(
                self.hits(out, around)
                    .into_iter()
                    .filter(|hit| hit.start < marker.end && hit.end > marker.start),
            );
        }
        // A hit across two neighbouring markers is found from both.
        moved.sort_unstable();
        moved.dedup();
        moved
    }
}

/// The secrets to redact in `text`, whose keywords are at `hits`, in order, none
/// overlapping another or a marker.
pub(crate) fn find(
    text: &str,
    hits: &[Hit],
    builtin: Option<&Builtin>,
    custom: &[Rule],
) -> Vec<Candidate> {
    let mut found = Vec::new();
    let mut first_custom = 0;
    if let Some(builtin) = builtin {
        search_around(text, hits, builtin, &mut found);
        first_custom = builtin.rules.len();
    }
    for (order, rule) in custom.iter().enumerate() {
        rule.find_in(
            text,
            0..text.len(),
            (first_custom + order) as u32,
            &mut found,
        );
    }
    settle(text, found)
}

/// Runs the built-in rules where their keywords are: at each keyword for the rules
/// that know where it sits in a match, in the merged windows around the keywords
/// for the others. The result does not depend on the order of `hits`.
fn search_around(text: &str, hits: &[Hit], builtin: &Builtin, found: &mut Vec<Candidate>) {
    let mut windows: Vec<(u32, Range<usize>)> = Vec::new();
    for hit in hits {
        for &order in &builtin.prefilter.rules_of[hit.keyword as usize] {
            let rule = &builtin.rules[order as usize];
            match &rule.around {
                Around::Start => rule.find_at(text, hit.start, order, found),
                Around::Guarded { .. } => rule.find_guarded(text, hit.start..hit.end, order, found),
                Around::Inside => {
                    let start = hit.end.saturating_sub(rule.reach);
                    let end = hit.start.saturating_add(rule.reach).min(text.len());
                    windows.push((order, start..end));
                }
            }
        }
    }
    windows.sort_unstable_by_key(|(order, window)| (*order, window.start));
    let mut windows = windows.into_iter().peekable();
    while let Some((order, mut window)) = windows.next() {
        while let Some((_, next)) = windows.next_if(|(o, w)| *o == order && w.start <= window.end) {
            window.end = window.end.max(next.end);
        }
        builtin.rules[order as usize].find_in(text, window, order, found);
    }
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
