//! What a match must also pass to count as a secret: gitleaks' entropy threshold,
//! and, for the project's own rules, that the value is not a placeholder, a
//! reference to another variable, or a piece of code.

use super::rules::{named_kind, NOT_SECRET_NAMES};

/// Shannon entropy in bits per byte, as gitleaks computes it (per character; the
/// secrets the rules match are ASCII, where the two agree).
pub(crate) fn entropy(secret: &[u8]) -> f32 {
    if secret.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &byte in secret {
        counts[usize::from(byte)] += 1;
    }
    let len = secret.len() as f32;
    counts
        .iter()
        .filter(|&&count| count > 0)
        .map(|&count| {
            let share = count as f32 / len;
            -share * share.log2()
        })
        .sum()
}

/// Words that stand for a secret in examples and templates, compared lowercase
/// with the whole value.
const PLACEHOLDER_WORDS: &[&str] = &[
    "pass",
    "passwd",
    "password",
    "pwd",
    "secret",
    "token",
    "changeme",
    "none",
    "null",
    "nil",
    "undefined",
    "example",
    "test",
    "dummy",
    "redacted",
    "placeholder",
    "todo",
];

/// Parts that mark a value as a template to fill in, compared lowercase.
const PLACEHOLDER_PARTS: &[&str] = &[
    "changeme",
    "change_me",
    "change-me",
    "example",
    "placeholder",
    "your_",
    "your-",
    "yourpass",
    "dummy",
    "redacted",
    "xxxx",
    "****",
];

/// A value written in place of a secret: empty, one repeated character (`xxx`,
/// `***`), a reference (`$VAR`, `${VAR}`, `%VAR%`, `%(name)s`), a template
/// (`<your-key>`, `{{ secret }}`, `[PASSWORD]`), or one of the usual words.
pub(crate) fn is_placeholder(value: &str) -> bool {
    let bytes = value.as_bytes();
    let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) else {
        return true;
    };
    let wrapped = matches!((first, last), (b'<', b'>') | (b'{', b'}') | (b'[', b']'));
    if wrapped || bytes.iter().all(|&b| b == first) || matches!(first, b'$' | b'%') {
        return true;
    }
    let lower = value.to_ascii_lowercase();
    PLACEHOLDER_WORDS.contains(&lower.as_str())
        || PLACEHOLDER_PARTS.iter().any(|part| lower.contains(part))
}

/// The password of a URL is a secret unless it is a placeholder.
pub(crate) fn url_password_is_secret(password: &str) -> bool {
    !is_placeholder(password)
}

/// The shortest value of a secret variable taken as a secret: shorter ones are
/// mostly flags, type names and examples (`str`, `true`, `abc`).
const MIN_VALUE_LEN: usize = 6;

/// Whether the value of a secret variable is a secret. `quoted` says it was
/// written between quotes, where code cannot stand.
pub(crate) fn assignment_value_is_secret(value: &str, quoted: bool) -> bool {
    let bytes = value.as_bytes();
    if bytes.len() < MIN_VALUE_LEN || is_placeholder(value) {
        return false;
    }
    let number = bytes.iter().all(u8::is_ascii_digit);
    // A path or a URL names where a secret is, not the secret.
    let located = matches!(first_two(bytes), [b'/', _] | [b'.' | b'~', b'/'])
        || value.starts_with("../")
        || value.contains("://");
    let spaced = bytes.iter().any(u8::is_ascii_whitespace);
    !(is_wordlike(value) || number || located || spaced || (!quoted && is_code(value)))
}

/// Words and identifiers rather than a secret (`Optional`, `SecretString`,
/// `self.password`, `DB_PASSWORD`, `getApiKey`): letters in parts joined by `_`,
/// `.` or `-`, each part lowercase, uppercase, or camel case (no two capitals in a
/// row, ending lowercase). A random string of letters is rarely any of these.
fn is_wordlike(value: &str) -> bool {
    value.split(['_', '.', '-']).all(|part| {
        let bytes = part.as_bytes();
        let letters = bytes.iter().all(u8::is_ascii_alphabetic);
        let lower = bytes.iter().all(u8::is_ascii_lowercase);
        let upper = bytes.iter().all(u8::is_ascii_uppercase);
        let camel = !bytes
            .windows(2)
            .any(|pair| pair.iter().all(u8::is_ascii_uppercase))
            && bytes.last().is_some_and(u8::is_ascii_lowercase);
        letters && (lower || upper || camel)
    })
}

fn first_two(bytes: &[u8]) -> [u8; 2] {
    [
        bytes.first().copied().unwrap_or(0),
        bytes.get(1).copied().unwrap_or(0),
    ]
}

/// An unquoted value that is an expression rather than a literal: a path
/// (`std::env::VAR`) or a dotted name (`os.environ`, `settings.SECRET_KEY2`). The
/// pattern itself leaves out calls, indexes, generic types and references.
fn is_code(value: &str) -> bool {
    if value.contains("::") {
        return true;
    }
    value.contains('.')
        && value.split('.').all(|part| {
            part.as_bytes()
                .first()
                .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
                && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        })
}

/// The variable's name in a match of `secret-assignment`: the first run of name
/// bytes, after the byte that bounds it and any quote.
pub(crate) fn assignment_name(matched: &[u8]) -> &[u8] {
    let is_name = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-');
    let start = matched.iter().position(is_name).unwrap_or(matched.len());
    let rest = &matched[start..];
    let len = rest.iter().position(|b| !is_name(b)).unwrap_or(rest.len());
    &rest[..len]
}

/// A name reduced for comparison: lowercase, without `_`, `-` and `.`.
fn name_key(name: &[u8]) -> String {
    name.iter()
        .filter(|b| !matches!(b, b'_' | b'-' | b'.'))
        .map(|b| char::from(b.to_ascii_lowercase()))
        .collect()
}

/// What a variable's name says about its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NameSays {
    /// It holds no secret, whatever it ends in (a page token).
    NoSecret,
    /// It holds a secret of the rule's own kind.
    Secret,
    /// It holds a secret of this well-known kind.
    SecretOf(&'static str),
}

/// What `name` says about the value assigned to it.
pub(crate) fn assignment_kind(name: &[u8]) -> NameSays {
    let key = name_key(name);
    if NOT_SECRET_NAMES.iter().any(|not| key.ends_with(not)) {
        return NameSays::NoSecret;
    }
    named_kind(&key).map_or(NameSays::Secret, NameSays::SecretOf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entropy_agrees_with_gitleaks_on_simple_strings() {
        assert!(entropy(b"").abs() < f32::EPSILON);
        assert!(entropy(b"aaaa").abs() < f32::EPSILON);
        assert!((entropy(b"abab") - 1.0).abs() < 1e-6);
        assert!((entropy(b"abcd") - 2.0).abs() < 1e-6);
    }

    #[test]
    fn placeholders_are_recognised() {
        for value in [
            "",
            "changeme",
            "xxx",
            "***",
            "${VAR}",
            "$DB_PASS",
            "<your-key>",
            "{{ token }}",
            "%(password)s",
            "your_api_key_here",
            "Password",
            "[PASSWORD]",
        ] {
            assert!(is_placeholder(value), "{value:?}");
        }
        assert!(!is_placeholder("hunter2x"));
    }

    #[test]
    fn code_and_words_are_not_secret_values() {
        for (value, quoted) in [
            ("os.environ", false),
            ("std::env::VAR2", false),
            ("settings.SECRET_KEY2", false),
            ("Optional", false),
            ("128000", false),
            ("/run/secrets/db", false),
            ("Please enter your password", true),
            ("https://example.org/x", true),
        ] {
            assert!(!assignment_value_is_secret(value, quoted), "{value:?}");
        }
        assert!(assignment_value_is_secret("hunter22", false));
        assert!(assignment_value_is_secret("jkbNTwQovltdsfHofrPN", false));
        assert!(!assignment_value_is_secret("getApiKey", false));
        assert!(!assignment_value_is_secret("SecretString", false));
        assert!(assignment_value_is_secret("s3cr3t(pw)", true));
    }

    #[test]
    fn the_name_decides_the_kind() {
        assert_eq!(
            assignment_name(b" \"DATABASE_PASSWORD\": "),
            b"DATABASE_PASSWORD"
        );
        assert_eq!(assignment_kind(b"next_page_token"), NameSays::NoSecret);
        assert_eq!(assignment_kind(b"nextPageToken"), NameSays::NoSecret);
        assert_eq!(
            assignment_kind(b"AWS_SECRET_ACCESS_KEY"),
            NameSays::SecretOf("aws-secret-access-key")
        );
        assert_eq!(assignment_kind(b"DATABASE_PASSWORD"), NameSays::Secret);
    }
}
