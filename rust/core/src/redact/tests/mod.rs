//! Tests of the redactor: every rule on a fake secret, no false positives on
//! ordinary text, the caller's rules, and properties over generated texts.

mod fakes;
mod negatives;
mod props;
mod rules;

use super::marker::Fingerprinter;
use super::*;

pub(super) const KEY: [u8; 32] = [0x5a; 32];

pub(super) fn redactor() -> &'static Redactor {
    static REDACTOR: std::sync::OnceLock<Redactor> = std::sync::OnceLock::new();
    REDACTOR.get_or_init(|| Redactor::new(&KEY, RuleSet::Defaults))
}

/// The marker `KEY` gives `secret` of `kind`.
pub(super) fn marker(kind: &str, secret: &str) -> String {
    let mut out = String::new();
    Fingerprinter::new(&KEY).write_marker(&mut out, kind, secret.as_bytes());
    out
}

fn kinds_of(found: &[Finding]) -> Vec<(&str, usize)> {
    found.iter().map(|f| (f.kind.as_ref(), f.count)).collect()
}

#[test]
fn a_redactor_is_shared_between_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<Redactor>();
    shared::<Arc<Redactor>>();
}

#[test]
fn a_marker_names_the_kind_and_eight_hex_digits() {
    let secret = ["ghp_", &"aB3dE5gH7jK9".repeat(3)].concat();
    let out = redactor().redact(&secret);
    let text = out.text.as_ref();
    assert!(text.starts_with("[redacted:github-token:") && text.ends_with(']'));
    let digits = &text["[redacted:github-token:".len()..text.len() - 1];
    assert_eq!(digits.len(), 8);
    assert!(digits
        .bytes()
        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    assert_eq!(kinds_of(&out.found), [("github-token", 1)]);
}

#[test]
fn the_fingerprint_follows_the_secret_and_the_key() {
    let secret = ["ghp_", &"Zx9Yw8Vu7Ts6".repeat(3)].concat();
    let text = format!("first {secret} then {secret}");
    let out = redactor().redact(&text);
    let marker = marker("github-token", &secret);
    assert_eq!(out.text, format!("first {marker} then {marker}"));
    assert_eq!(kinds_of(&out.found), [("github-token", 2)]);
    let other = Redactor::new(&[0x33; 32], RuleSet::Defaults).redact(&text);
    assert_ne!(other.text, out.text);
}

#[test]
fn text_without_keywords_is_borrowed() {
    let text = "Nothing to see here: just prose, a number 42 and a path src/lib.rs.";
    let out = redactor().redact(text);
    assert!(matches!(out.text, Cow::Borrowed(_)));
    assert!(out.found.is_empty());
}

#[test]
fn only_the_secret_is_replaced() {
    let password = ["Tr0ub4dor", "-3x"].concat();
    let url = format!("connect to postgres://app:{password}@db:5432/main now");
    let out = redactor().redact(&url);
    let marker = marker("url-password", &password);
    assert_eq!(
        out.text,
        format!("connect to postgres://app:{marker}@db:5432/main now")
    );
}

#[test]
fn secret_variables_are_found_in_each_notation() {
    let value = ["q8Zr", "-51xk", "PwT"].concat();
    for (line, kind) in [
        (format!("DATABASE_PASSWORD={value}"), "secret-assignment"),
        (format!("export API_TOKEN=\"{value}\""), "secret-assignment"),
        (format!("client_secret: {value}"), "secret-assignment"),
        (format!("{{\"apiKey\": \"{value}\"}}"), "secret-assignment"),
        (
            format!(r#"{{\"password\": \"{value}\"}}"#),
            "secret-assignment",
        ),
        (format!("--api-key={value} --verbose"), "secret-assignment"),
        (
            format!("AWS_SECRET_ACCESS_KEY={value}"),
            "aws-secret-access-key",
        ),
        (
            format!("spring.datasource.password = '{value}'"),
            "secret-assignment",
        ),
        (format!("token := \"{value}\""), "secret-assignment"),
    ] {
        let out = redactor().redact(&line);
        assert_eq!(
            out.text,
            line.replace(&value, &marker(kind, &value)),
            "{line}"
        );
    }
}

#[test]
fn a_provider_rule_names_the_kind_of_a_secret_variable() {
    // Both rules find the same bytes; the vendored rule comes first and wins.
    let token = ["ghp_", &"Zx9Yw8Vu7Ts6".repeat(3)].concat();
    let text = format!("DEPLOY_TOKEN={token}\n");
    let out = redactor().redact(&text);
    assert_eq!(
        out.text,
        format!("DEPLOY_TOKEN={}\n", marker("github-token", &token))
    );
}

#[test]
fn redacting_twice_changes_nothing() {
    let token = ["ghp_", &"Qw3rTy7uIo9p".repeat(3)].concat();
    let text = format!("GITHUB_TOKEN={token}\nDATABASE_PASSWORD=hunter22x\n");
    let once = redactor().redact(&text);
    let twice = redactor().redact(&once.text);
    assert_eq!(twice.text, once.text);
    assert!(matches!(twice.text, Cow::Borrowed(_)));
    assert!(twice.found.is_empty());
}

#[test]
fn a_marker_beside_a_secret_does_not_hide_it() {
    // The first pass redacts the GitHub token; the Google key after it only has a
    // word boundary once the token is a marker, and the second round takes it.
    let github = ["ghp_", &"Qw3rTy7uIo9p".repeat(3)].concat();
    let google = fakes::fake("gcp-api-key", &mut fakes::Gen(7)).text;
    let text = format!("{github}{google} ");
    let once = redactor().redact(&text);
    assert!(!once.text.contains(&google), "{}", once.text);
    assert_eq!(redactor().redact(&once.text).text, once.text);
}

#[test]
fn secrets_at_the_edges_and_in_escaped_json_are_found() {
    let mut g = fakes::Gen(11);
    let github = fakes::fake("github-pat", &mut g).text;
    let key = fakes::fake("private-key", &mut g).text;
    let escaped = key.replace('\n', "\\n");
    for text in [
        github.clone(),
        format!("{github}\n{github}"),
        format!("{{\"output\": \"{escaped}\\n\"}}"),
    ] {
        let out = redactor().redact(&text);
        assert!(!out.text.contains(&github), "{}", out.text);
        assert!(!out.text.contains("PRIVATE KEY-----\\n"), "{}", out.text);
        assert!(!out.found.is_empty());
    }
}

#[test]
fn guarded_rules_find_their_start() {
    let value = ["Zq7", "-w2Lp", "9x"].concat();
    for (text, kind) in [
        (
            format!("git+ssh://deploy:{value}@git.internal/repo.git"),
            "url-password",
        ),
        (format!("x-scheme://:{value}@host"), "url-password"),
        (
            format!("{{\"db_password\":\"{value}\"}}"),
            "secret-assignment",
        ),
        (format!("\tSECRET_TOKEN = {value};"), "secret-assignment"),
        (format!("clientSecret: '{value}'"), "secret-assignment"),
    ] {
        let out = redactor().redact(&text);
        assert_eq!(
            out.text,
            text.replace(&value, &marker(kind, &value)),
            "{text}"
        );
    }
    // A name is at most 61 bytes before its secret word.
    let long = format!("{}_PASSWORD={value}", "A".repeat(70));
    assert!(matches!(redactor().redact(&long).text, Cow::Borrowed(_)));
}

#[test]
fn custom_rules_are_checked_and_run() {
    let mut redactor = Redactor::new(&KEY, RuleSet::None);
    let invalid = |result: Result<()>, field: &str| {
        assert!(matches!(result, Err(Error::InvalidInput { field: f, .. }) if f == field));
    };
    invalid(
        redactor.add_rule("Internal Token", "itk_[0-9a-f]{8}"),
        "kind",
    );
    invalid(
        redactor.add_rule("internal-token", "itk_[0-9a-f"),
        "pattern",
    );
    invalid(redactor.add_rule("internal-token", "x*"), "pattern");
    redactor
        .add_rule("internal-token", r"id=(itk_[0-9a-f]{8})")
        .unwrap();
    let secret = ["itk_", "0a1b2c3d"].concat();
    let text = format!("id={secret};");
    let out = redactor.redact(&text);
    assert_eq!(
        out.text,
        format!("id={};", marker("internal-token", &secret))
    );
    assert_eq!(redactor.kinds(), ["internal-token"]);
    // Without the defaults, a provider key is left alone.
    let github = ["ghp_", &"Qw3rTy7uIo9p".repeat(3)].concat();
    assert!(matches!(redactor.redact(&github).text, Cow::Borrowed(_)));
}

#[test]
fn findings_merge_by_kind() {
    let mut total = Vec::new();
    let finding = |kind: &str, count| Finding {
        kind: kind.into(),
        count,
    };
    merge(&mut total, &[finding("jwt", 1), finding("url-password", 2)]);
    merge(&mut total, &[finding("github-token", 1), finding("jwt", 3)]);
    assert_eq!(
        kinds_of(&total),
        [("github-token", 1), ("jwt", 4), ("url-password", 2)]
    );
}
