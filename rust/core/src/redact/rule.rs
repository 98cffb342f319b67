//! A compiled rule: its regex, how far around a keyword it can reach, and what a
//! match must pass; and the search of one window of a text.

use std::ops::Range;
use std::sync::Arc;

use regex_automata::meta::Regex;
use regex_automata::util::captures::Captures;
use regex_automata::util::syntax;
use regex_automata::Input;

use super::checks::{
    assignment_kind, assignment_name, assignment_value_is_secret, entropy, url_password_is_secret,
    NameSays,
};
use super::rules::{Check, Spec};
use crate::error::{Error, Result};

/// How far around a keyword a rule with an unbounded pattern is searched. A match
/// cut by the window is searched again to the end of the text (see [`Rule::find`]).
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

/// A rule ready to search.
pub(crate) struct Rule {
    /// The gitleaks id, the project's own id, or the kind of a caller's rule.
    pub id: Box<str>,
    /// The kind its markers name, unless the check names another.
    pub kind: Arc<str>,
    /// How many bytes before and after a keyword a match can reach.
    pub reach: usize,
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
        Rule {
            id: spec.id.into(),
            kind: spec.kind.into(),
            reach: spec.reach.or(bound).unwrap_or(UNBOUNDED_REACH),
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
            regex,
            allow: None,
            check: Check::None,
        })
    }

    /// Pushes the secrets this rule finds in `window` of `text` onto `out`.
    /// Look-around (`\b`, `$`) sees the text outside the window.
    pub(crate) fn find(
        &self,
        text: &str,
        window: Range<usize>,
        order: u32,
        out: &mut Vec<Candidate>,
    ) {
        let hay = text.as_bytes();
        let mut caps = self.regex.create_captures();
        let mut at = window.start;
        let mut end = window.end;
        while at < end {
            self.regex
                .search_captures(&Input::new(hay).range(at..end), &mut caps);
            let Some(found) = caps.get_match() else {
                break;
            };
            if found.end() == end && end < hay.len() {
                // The window may have cut the match short: search on to the end.
                end = hay.len();
                continue;
            }
            if let Some(candidate) = self.candidate(text, &caps, order) {
                out.push(candidate);
            }
            at = found.end().max(found.start() + 1);
            end = end.min(window.end.max(at));
        }
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
                match assignment_kind(assignment_name(&text.as_bytes()[whole.start..span.start])) {
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
