//! Properties over generated texts: a planted secret never survives, redaction is
//! idempotent, a text without keywords comes back borrowed, and fingerprints follow
//! the secret and the key.

use std::borrow::Cow;

use proptest::prelude::*;

use super::fakes::{fake, Gen};
use super::{marker, redactor};
use crate::redact::{rules, scan, Redactor, RuleSet};

const WORDS: &[&str] = &[
    "the", "model", "reads", "a", "file", "token", "password", "key", "secret", "=", ":", "\"",
    "{", "}", "fn", "let", "x", "42", "https://", "user", "@", "host", "ok", "é", "日本",
];

const SEPARATORS: &[&str] = &[" ", "\n", "\t", "\"", "'", " = ", ": ", ", ", ""];

/// The ids of the built-in rules.
fn rule_ids() -> Vec<&'static str> {
    rules::all().map(|spec| spec.id).collect()
}

/// Text of words and separators, some of them keywords.
fn filler() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (
            prop::sample::select(WORDS),
            prop::sample::select(SEPARATORS),
        ),
        0..30,
    )
    .prop_map(|pieces| pieces.into_iter().flat_map(|(w, s)| [w, s]).collect())
}

/// A fake secret of any built-in rule: (the fake as written, the secret in it).
fn planted() -> impl Strategy<Value = (String, String)> {
    (prop::sample::select(rule_ids()), any::<u64>()).prop_map(|(id, seed)| {
        let fake = fake(id, &mut Gen(seed | 1));
        let secret = fake.text[fake.secret.clone()].to_string();
        (fake.text, secret)
    })
}

/// Whether `text` holds any rule's keyword, as the prefilter compares them.
fn has_keyword(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    rules::all().any(|spec| spec.keywords.iter().any(|k| lower.contains(k)))
}

/// Delimiters that end a secret for every rule.
const DELIMITERS: &[&str] = &[" ", "\n", "\"", "'", "\t"];

proptest! {
    #[test]
    fn a_planted_secret_never_survives(
        before in filler(),
        (text, secret) in planted(),
        after in filler(),
        open in prop::sample::select(DELIMITERS),
        close in prop::sample::select(DELIMITERS),
    ) {
        let whole = format!("{before}{open}{text}{close}{after}");
        let out = redactor().redact(&whole);
        prop_assert!(!out.text.contains(&secret), "{whole:?} -> {:?}", out.text);
    }

    #[test]
    fn redaction_is_idempotent(
        pieces in prop::collection::vec((filler(), planted(), prop::sample::select(SEPARATORS)), 1..4),
    ) {
        let text: String = pieces
            .iter()
            .flat_map(|(filler, (fake, _), sep)| [filler.as_str(), sep, fake.as_str()])
            .collect();
        let once = redactor().redact(&text);
        let twice = redactor().redact(&once.text);
        prop_assert!(matches!(twice.text, Cow::Borrowed(_)));
        prop_assert_eq!(&twice.text, &once.text);
        prop_assert!(twice.found.is_empty());
    }

    #[test]
    fn text_without_keywords_is_borrowed(text in any::<String>().prop_filter("no keyword", |t| !has_keyword(t))) {
        let out = redactor().redact(&text);
        prop_assert!(matches!(out.text, Cow::Borrowed(_)));
        prop_assert_eq!(out.text.as_ref(), text.as_str());
        prop_assert!(out.found.is_empty());
    }

    #[test]
    fn one_secret_has_one_fingerprint(
        seed in any::<u64>(),
        first in filler(),
        second in filler(),
    ) {
        let token = fake("github-pat", &mut Gen(seed | 1)).text;
        let marker = marker("github-token", &token);
        for context in [first, second] {
            let text = format!("{context} {token} {context}");
            let out = redactor().redact(&text);
            prop_assert!(out.text.contains(&marker), "{:?}", out.text);
        }
    }

    #[test]
    fn another_key_gives_another_fingerprint(seed in any::<u64>(), key in any::<[u8; 32]>()) {
        prop_assume!(key != super::KEY);
        let token = fake("github-pat", &mut Gen(seed | 1)).text;
        let ours = redactor().redact(&token).text.into_owned();
        let theirs = Redactor::new(&key, RuleSet::Defaults).redact(&token).text.into_owned();
        prop_assert_ne!(ours, theirs);
    }
}

proptest! {
    #[test]
    fn moved_hits_are_the_hits_of_the_new_text(
        pieces in prop::collection::vec((filler(), planted(), prop::sample::select(SEPARATORS)), 1..4),
    ) {
        let text: String = pieces
            .iter()
            .flat_map(|(filler, (fake, _), sep)| [filler.as_str(), sep, fake.as_str()])
            .collect();
        let builtin = scan::builtin();
        let mut hits = builtin.prefilter.hits(&text, 0..text.len());
        hits.sort_unstable();
        let chosen = scan::find(&text, &hits, Some(builtin), &[]);
        let (out, markers) = redactor().replace(&text, &chosen, &mut Vec::new());
        let replaced: Vec<_> = chosen.iter().map(|c| c.span.clone()).collect();
        let moved = builtin.prefilter.moved_hits(&hits, &replaced, &out, &markers);
        let mut fresh = builtin.prefilter.hits(&out, 0..out.len());
        fresh.sort_unstable();
        prop_assert_eq!(moved, fresh);
    }
}
