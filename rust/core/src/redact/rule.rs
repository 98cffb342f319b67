//! A compiled rule: its regex, how far around a keyword it can reach, and what a
//! match must pass; and the search of one window of a text.

use std::ops::Range;
use std::sync::Arc;

use regex_automata::meta::Regex;
use regex_automata::util::captures::Captures;
use regex_automata::util::syntax;
use regex_automata::{Anchored, Input};

use super::checks::{
    assignment_kind, assignment_name, assignment_value_is_secret, entropy, url_password_is_secret,
    NameSays,
};
use super::rules::{Check, Guard, Placement, Spec};
use crate::error::{Error, Result};

/// How far from a keyword a rule with an unbounded pattern is searched. A match
/// cut short by its window is searched again up to the end of the text (see
/// [`Rule::search`]).
const UNBOUNDED_REACH: usize = 4096;

/// In `secret-assignment`, the group of an unquoted value (groups 1 and 2 are the
/// double- and single-quoted ones).
const UNQUOTED_GROUP: usize = 3;

/// A secret found by one rule, before the overlaps between rules are settled.
#[derive(Debug)]
pub(crate) struct Candidate {
    /// The bytes of the secret in the text.
    pub span: Range<usize>,
    /// The rule's place in the redactor: the earlier rule wins a tie.
    pub order: u32,
    /// The kind its marker names.
    pub kind: Arc<str>,
}

/// Where a compiled rule is searched around a keyword (see [`Placement`]).
pub(crate) enum Around {
    /// One anchored search where the keyword starts.
    Start,
    /// The window of its reach on both sides of the keyword.
    Inside,
    /// Where [`Guard`] says.
    Guarded {
        guard: Guard,
        /// The guard's pattern.
        test: Regex,
    },
}

/// Which matches of a window a search takes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The one that starts where the window starts.
    AtStart,
    /// All, one after another.
    All,
}

/// A rule ready to search.
pub(crate) struct Rule {
    /// The gitleaks id, the project's own id, or the kind of a caller's rule.
    pub id: Box<str>,
    /// The kind its markers name, unless the check names another.
    pub kind: Arc<str>,
    /// How many bytes a match can reach from a keyword, either way.
    pub reach: usize,
    /// Where it is searched around a keyword.
    pub around: Around,
    regex: Regex,
    allow: Option<Regex>,
    check: Check,
}

impl Rule {
    /// Compiles a built-in rule. The rule tables are tested to compile, so a
    /// failure here is a bug in them.
    pub(crate) fn builtin(spec: &Spec) -> Rule {
        let config = syntax::Config::new().unicode(false).utf8(false);
        let compile = |pattern: &str| {
            Regex::builder()
                .syntax(config)
                .build(pattern)
                .unwrap_or_else(|err| panic!("rule {}: {err}", spec.id))
        };
        let bound = syntax::parse_with(spec.pattern, &config)
            .unwrap_or_else(|err| panic!("rule {}: {err}", spec.id))
            .properties()
            .maximum_len();
        let around = match spec.placement {
            Placement::Start => Around::Start,
            Placement::Inside => Around::Inside,
            Placement::Guarded(guard) => Around::Guarded {
                guard,
                test: compile(guard.pattern),
            },
        };
        Rule {
            id: spec.id.into(),
            kind: spec.kind.into(),
            reach: spec.reach.or(bound).unwrap_or(UNBOUNDED_REACH),
            around,
            regex: compile(spec.pattern),
            allow: spec.allow.map(compile),
            check: spec.check,
        }
    }

    /// Compiles a caller's rule: the whole text is its window, and nothing but the
    /// pattern decides.
    pub(crate) fn custom(kind: &str, pattern: &str) -> Result<Rule> {
        let hir =
            syntax::parse(pattern).map_err(|err| Error::invalid("pattern", err.to_string()))?;
        if hir.properties().minimum_len() == Some(0) {
            return Err(Error::invalid(
                "pattern",
                format!("{pattern:?} matches the empty string"),
            ));
        }
        let regex =
            Regex::new(pattern).map_err(|err| Error::invalid("pattern", err.to_string()))?;
        Ok(Rule {
            id: kind.into(),
            kind: kind.into(),
            reach: usize::MAX,
            around: Around::Inside,
            regex,
            allow: None,
            check: Check::None,
        })
    }

    /// Pushes the secret of the match that starts at `start`, if any, onto `out`.
    pub(crate) fn find_at(&self, text: &str, start: usize, order: u32, out: &mut Vec<Candidate>) {
        let end = start.saturating_add(self.reach).min(text.len());
        self.search(text, start..end, Mode::AtStart, order, out);
    }

    /// Pushes the secrets this rule finds in `window` of `text` onto `out`.
    pub(crate) fn find_in(
        &self,
        text: &str,
        window: Range<usize>,
        order: u32,
        out: &mut Vec<Candidate>,
    ) {
        self.search(text, window, Mode::All, order, out);
    }

    /// For a guarded rule, pushes the secret of the first match that starts in the
    /// lead or margin before the keyword at `hit` onto `out`, if the guard lets
    /// the keyword through.
    pub(crate) fn find_guarded(
        &self,
        text: &str,
        hit: Range<usize>,
        order: u32,
        out: &mut Vec<Candidate>,
    ) {
        let Around::Guarded { guard, test } = &self.around else {
            return;
        };
        let hay = text.as_bytes();
        let input = Input::new(hay).range(hit.end..).anchored(Anchored::Yes);
        let Some(passed) = test.search(&input) else {
            return;
        };
        let is_lead = |b: &u8| b.is_ascii_alphanumeric() || guard.lead_bytes.as_bytes().contains(b);
        let lead = hay[..hit.start]
            .iter()
            .rev()
            .take(guard.lead_max)
            .take_while(|b| is_lead(b))
            .count();
        let lead_start = hit.start - lead;
        let end = passed.end().saturating_add(guard.tail).min(hay.len());
        // An anchored search at each place a match can start: in the margin, or
        // where a word starts in the lead. The first that matches is the one.
        for start in lead_start.saturating_sub(guard.margin)..=hit.start {
            let inside_word = start > lead_start && hay[start - 1].is_ascii_alphanumeric();
            if !inside_word && self.search(text, start..end, Mode::AtStart, order, out) {
                break;
            }
        }
    }

    /// The search behind the `find` methods; whether it matched at all.
    /// Look-around (`\b`, `$`) sees the text outside the window.
    fn search(
        &self,
        text: &str,
        window: Range<usize>,
        mode: Mode,
        order: u32,
        out: &mut Vec<Candidate>,
    ) -> bool {
        let regex = &self.regex;
        let hay = text.as_bytes();
        let anchored = if mode == Mode::AtStart {
            Anchored::Yes
        } else {
            Anchored::No
        };
        // Made on the first match: most searches find none.
        let mut caps = None;
        let mut matched = false;
        let mut at = window.start;
        let mut end = window.end;
        while at < end {
            let input = Input::new(hay).range(at..end).anchored(anchored);
            let Some(found) = regex.search(&input) else {
                break;
            };
            matched = true;
            if found.end() == end && end < hay.len() {
                // The window may have cut the match short: search on to the end.
                end = hay.len();
                continue;
            }
            let candidate = if self.turned_away(&hay[found.range()]) {
                None
            } else {
                // The groups, found again on the match alone (as the meta regex
                // does), after the cheap test above.
                let caps = caps.get_or_insert_with(|| regex.create_captures());
                let exact = Input::new(hay).range(found.range()).anchored(Anchored::Yes);
                regex.search_captures(&exact, caps);
                self.candidate(text, caps, order)
            };
            if mode == Mode::AtStart {
                out.extend(candidate);
                break;
            }
            // A match that is not a secret does not hide the matches that start
            // inside it (a quoted sentence holding a `KEY=value`).
            at = if candidate.is_some() {
                found.end().max(found.start() + 1)
            } else {
                found.start() + 1
            };
            out.extend(candidate);
            end = end.min(window.end.max(at));
        }
        matched
    }

    /// Whether a match is no secret whatever its groups: a variable whose name
    /// says it holds none (a page token).
    fn turned_away(&self, matched: &[u8]) -> bool {
        self.check == Check::Assignment
            && assignment_kind(assignment_name(matched)) == NameSays::NoSecret
    }

    /// The secret of one match, if it passes the rule's allowlist and check.
    fn candidate(&self, text: &str, caps: &Captures, order: u32) -> Option<Candidate> {
        let whole = caps.get_match()?.range();
        let (group, span) = secret_group(caps)?;
        let span = widen_to_chars(text, span);
        let secret = &text[span.clone()];
        if self
            .allow
            .as_ref()
            .is_some_and(|allow| allow.is_match(secret.as_bytes()))
        {
            return None;
        }
        let kind = match self.check {
            Check::None => self.kind.clone(),
            Check::Entropy(bits) => {
                (entropy(secret.as_bytes()) > bits).then(|| self.kind.clone())?
            }
            Check::UrlPassword => url_password_is_secret(secret).then(|| self.kind.clone())?,
            Check::Assignment => {
                if !assignment_value_is_secret(secret, group != UNQUOTED_GROUP) {
                    return None;
                }
                match assignment_kind(assignment_name(&text.as_bytes()[whole])) {
                    NameSays::NoSecret => return None,
                    NameSays::Secret => self.kind.clone(),
                    NameSays::SecretOf(kind) => Arc::from(kind),
                }
            }
        };
        Some(Candidate { span, order, kind })
    }
}

/// The secret of a match and the group it came from: the first group that matched
/// some text, or the whole match (group 0) when the pattern has no group.
fn secret_group(caps: &Captures) -> Option<(usize, Range<usize>)> {
    let groups = caps.group_len();
    if groups <= 1 {
        return caps.get_match().map(|found| (0, found.range()));
    }
    (1..groups).find_map(|group| {
        caps.get_group(group)
            .filter(|span| !span.is_empty())
            .map(|span| (group, span.range()))
    })
}

/// `span` grown to whole characters: a rule working on bytes may start or end a
/// match inside a character, and the secret is better cut too wide than too narrow.
fn widen_to_chars(text: &str, span: Range<usize>) -> Range<usize> {
    let mut start = span.start;
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = span.end;
    while !text.is_char_boundary(end) {
        end += 1;
    }
    start..end
}
