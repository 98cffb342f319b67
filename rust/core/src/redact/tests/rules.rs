//! Every built-in rule redacts a fake secret of its shape, names its kind, and
//! leaves the rest of the text as it was.

use super::fakes::{fake, Gen};
use super::{marker, redactor};
use crate::redact::rules;

/// Texts around the fake: prose, a config line, JSON, and the fake alone.
fn contexts(secret: &str) -> Vec<(String, String, String)> {
    [
        ("Here it is: ", " and that's all.\n"),
        ("value = \"", "\"\n"),
        ("{\"output\": \"", "\", \"ok\": true}"),
        ("", ""),
    ]
    .iter()
    .map(|(before, after)| {
        (
            format!("{before}{secret}{after}"),
            (*before).to_string(),
            (*after).to_string(),
        )
    })
    .collect()
}

#[test]
fn every_rule_redacts_its_fake_and_nothing_else() {
    let mut g = Gen(0x9E37_79B9_7F4A_7C15);
    let mut checked = 0;
    for spec in rules::all() {
        let fake = fake(spec.id, &mut g);
        let secret = &fake.text[fake.secret.clone()];
        let expected = format!(
            "{}{}{}",
            &fake.text[..fake.secret.start],
            marker(spec.kind, secret),
            &fake.text[fake.secret.end..]
        );
        for (text, before, after) in contexts(&fake.text) {
            let out = redactor().redact(&text);
            assert_eq!(
                out.text,
                format!("{before}{expected}{after}"),
                "rule {} in {text:?}",
                spec.id
            );
            assert_eq!(out.found.len(), 1, "rule {}", spec.id);
            assert_eq!(out.found[0].kind.as_ref(), spec.kind, "rule {}", spec.id);
            assert_eq!(out.found[0].count, 1, "rule {}", spec.id);
        }
        checked += 1;
    }
    assert!(checked > 70, "{checked} rules");
}

#[test]
fn every_built_in_kind_is_a_slug() {
    for kind in redactor().kinds() {
        assert!(crate::redact::marker::is_kind_slug(kind), "{kind}");
    }
}

#[test]
fn rule_ids_are_unique() {
    let mut ids: Vec<&str> = rules::all().map(|spec| spec.id).collect();
    let count = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), count);
}
