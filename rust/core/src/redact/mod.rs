//! Redaction of high-confidence secrets before a text is stored (docs/GOVERNANCE.md,
//! "Not storing a secret").
//!
//! A secret becomes `[redacted:<kind>:<fingerprint>]`: `<kind>` is a lowercase slug
//! (`github-token`), `<fingerprint>` the first 8 hex digits of an HMAC-SHA256 of the
//! secret keyed with the database's key, so one secret gets one marker across texts
//! and databases do not share them. Only the secret is replaced: the password of a
//! URL, the value of a `KEY=value` line, a private key block from its BEGIN line to
//! its END line.
//!
//! The built-in rules are a vendored selection of the gitleaks rules plus two of the
//! project's own (`rules`). A case-insensitive automaton of the rules' keywords
//! runs over the text first, and only the rules whose keyword occurs run, at or
//! around it: a text without a keyword comes back borrowed.
//!
//! A redactor is built once (per database key) and shared: it is `Send + Sync`, and
//! the compiled built-in rules are shared by every redactor of the process.

mod checks;
mod marker;
mod rule;
mod rules;
mod scan;

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use crate::error::{Error, Result};
use marker::{is_kind_slug, Fingerprinter};
use rule::{Candidate, Rule};
use scan::Builtin;

/// The rules a redactor starts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleSet {
    /// The built-in rules.
    Defaults,
    /// No rules: only those added with [`Redactor::add_rule`].
    None,
}

/// How many secrets of one kind a text held. It never holds the secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The kind, as its markers name it.
    pub kind: Arc<str>,
    /// How many secrets of that kind were replaced.
    pub count: usize,
}

/// A text with its secrets replaced by markers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redacted<'a> {
    /// The text, borrowed when nothing was replaced.
    pub text: Cow<'a, str>,
    /// What was replaced, one entry per kind, ordered by kind.
    pub found: Vec<Finding>,
}

/// Adds the findings of one more text to `total` (both ordered by kind, as
/// [`Redacted::found`] is), so that a turn of many texts reports each kind once.
pub fn merge(total: &mut Vec<Finding>, more: &[Finding]) {
    for finding in more {
        add(total, &finding.kind, finding.count);
    }
}

fn add(total: &mut Vec<Finding>, kind: &Arc<str>, count: usize) {
    match total.binary_search_by(|probe| probe.kind.as_ref().cmp(kind.as_ref())) {
        Ok(at) => total[at].count += count,
        Err(at) => total.insert(
            at,
            Finding {
                kind: kind.clone(),
                count,
            },
        ),
    }
}

/// Replaces secrets in texts. Built once per database key and shared.
pub struct Redactor {
    fingerprints: Fingerprinter,
    builtin: Option<&'static Builtin>,
    custom: Vec<Rule>,
}

impl fmt::Debug for Redactor {
    // The key stays out of logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("defaults", &self.builtin.is_some())
            .field("custom_rules", &self.custom.len())
            .finish_non_exhaustive()
    }
}

impl Redactor {
    /// A redactor whose fingerprints are keyed with `key` (the database's key).
    pub fn new(key: &[u8; 32], rules: RuleSet) -> Self {
        Redactor {
            fingerprints: Fingerprinter::new(key),
            builtin: (rules == RuleSet::Defaults).then(scan::builtin),
            custom: Vec::new(),
        }
    }

    /// Adds a rule of the caller's: secrets matching `pattern` (a `regex` pattern)
    /// become markers of `kind`. The first capture group that matched text is the
    /// secret, or the whole match when the pattern has no group. `kind` must be a
    /// lowercase slug (`internal-token`), and the pattern must not match the empty
    /// string. The rule has no keywords, so it runs over every whole text.
    pub fn add_rule(&mut self, kind: &str, pattern: &str) -> Result<()> {
        if !is_kind_slug(kind) {
            return Err(Error::invalid(
                "kind",
                format!("{kind:?} is not a lowercase slug (letters, digits and single hyphens)"),
            ));
        }
        self.custom.push(Rule::custom(kind, pattern)?);
        Ok(())
    }

    /// The rules, as their id (the gitleaks id, the project's own id, or the kind
    /// of a caller's rule) and kind, in the order in which they win a tie.
    #[must_use]
    pub fn rules(&self) -> Vec<(&str, &str)> {
        let builtin = self.builtin.map_or(&[][..], |builtin| &builtin.rules[..]);
        builtin
            .iter()
            .chain(&self.custom)
            .map(|rule| (rule.id.as_ref(), rule.kind.as_ref()))
            .collect()
    }

    /// The kinds this redactor can report, sorted, each once.
    #[must_use]
    pub fn kinds(&self) -> Vec<&str> {
        let mut kinds: Vec<&str> = self.rules().into_iter().map(|(_, kind)| kind).collect();
        if self.builtin.is_some() {
            // Pushed one by one: `extend` would ask the borrowed kinds to be static.
            for kind in rules::named_kinds() {
                kinds.push(kind);
            }
        }
        kinds.sort_unstable();
        kinds.dedup();
        kinds
    }

    /// `text` with its secrets replaced by markers, and what was replaced.
    ///
    /// Redacting the result again changes nothing: the replacement is repeated
    /// until no rule finds anything more, as a marker can change what a rule sees
    /// next to it (a word boundary where a secret ended in a letter). The rounds
    /// after the first reuse the first one's keywords rather than scan again.
    #[must_use]
    pub fn redact<'a>(&self, text: &'a str) -> Redacted<'a> {
        let mut hits = self
            .builtin
            .map(|builtin| builtin.prefilter.hits(text, 0..text.len()))
            .unwrap_or_default();
        let mut chosen = scan::find(text, &hits, self.builtin, &self.custom);
        if chosen.is_empty() {
            return Redacted {
                text: Cow::Borrowed(text),
                found: Vec::new(),
            };
        }
        hits.sort_unstable();
        let mut found = Vec::new();
        let mut current = Cow::Borrowed(text);
        // Every round replaces at least one byte that is not in a marker by a
        // marker, so the rounds end.
        while !chosen.is_empty() {
            let (out, markers) = self.replace(&current, &chosen, &mut found);
            if let Some(builtin) = self.builtin {
                let replaced: Vec<_> = chosen.iter().map(|c| c.span.clone()).collect();
                hits = builtin
                    .prefilter
                    .moved_hits(&hits, &replaced, &out, &markers);
            }
            chosen = scan::find(&out, &hits, self.builtin, &self.custom);
            current = Cow::Owned(out);
        }
        Redacted {
            text: current,
            found,
        }
    }

    /// `text` with `chosen` (in order, disjoint) replaced by their markers, and
    /// where the markers are.
    fn replace(
        &self,
        text: &str,
        chosen: &[Candidate],
        found: &mut Vec<Finding>,
    ) -> (String, Vec<Range<usize>>) {
        let mut out = String::with_capacity(text.len() + chosen.len() * 32);
        let mut markers = Vec::with_capacity(chosen.len());
        let mut at = 0;
        for candidate in chosen {
            let span = candidate.span.clone();
            out.push_str(&text[at..span.start]);
            let start = out.len();
            self.fingerprints.write_marker(
                &mut out,
                &candidate.kind,
                text[span.clone()].as_bytes(),
            );
            markers.push(start..out.len());
            add(found, &candidate.kind, 1);
            at = span.end;
        }
        out.push_str(&text[at..]);
        (out, markers)
    }
}

#[cfg(test)]
mod tests;
