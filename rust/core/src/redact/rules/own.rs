//! The project's own rules, for two shapes gitleaks leaves to its entropy-based
//! `generic-api-key`: a password inside a URL, and the value of a variable whose
//! name says it holds a secret. Both replace only the value, and both reject
//! placeholders (see `checks`).

use super::{rule, Check, Guard, Spec};

/// The two rules of the project's own.
pub(super) const OWN: &[Spec] = &[
    // `scheme://user:PASSWORD@host`: the userinfo of RFC 3986, with the user
    // possibly empty (`redis://:PASSWORD@host`). Only the password is the secret.
    rule(
        "url-password",
        "url-password",
        &["://"],
        r#"(?i)\b[a-z][a-z0-9+.\-]{1,31}://[^\s:/?#@"'<>\[\]\\]*:([^\s/?#@"'<>\\]+)@"#,
    )
    .check(Check::UrlPassword)
    // The scheme is the run of scheme bytes before `://`; the guard checks for the
    // user, `:`, password and `@` after it, where the match ends. The repetitions
    // here and below are unbounded rather than counted: the windows bound them,
    // and counted ones make the automaton, and each search for groups, larger.
    .guarded(Guard {
        lead_bytes: "+.-",
        lead_max: 32,
        margin: 0,
        pattern: r#"[^\s:/?#@"'<>\[\]\\]*:[^\s/?#@"'<>\\]+@"#,
        tail: 0,
    }),
    // `NAME=value`, `NAME: value`, `"NAME": "value"`, `NAME := value`, also with the
    // quotes escaped as in JSON inside JSON. NAME is one identifier that ends in a
    // secret word: `password`, `passwd`, `passphrase`, `secret`, `token`, `api_key`,
    // `access_key` or `secret_key`, alone or after a prefix ending in `_`, `-` or
    // `.` (`DATABASE_PASSWORD`, `--api-key`, `spring.datasource.password`), or in
    // camel case (`clientSecret`, `openaiApiKey`), with at most 61 bytes before the
    // secret word (the guard's lead). A plural (`max_tokens`) or a
    // longer name (`GITHUB_TOKEN_PATH`) is not one. The value runs to its closing
    // quote, or unquoted to a space, quote, comma, semicolon or backslash. An
    // unquoted value that runs into a bracket (`get_password()`, `tokens[0]`,
    // `Option<String>`) or starts with `$ % & * @ !` (a reference, a pointer, a
    // decorator, a YAML tag) is code, and does not match.
    rule(
        "secret-assignment",
        "secret-assignment",
        &[
            "password",
            "passwd",
            "passphrase",
            "secret",
            "token",
            "api_key",
            "api-key",
            "apikey",
            "access_key",
            "access-key",
            "accesskey",
        ],
        concat!(
            r#"(?:^|[^A-Za-z0-9_.\-])(?:\\?["'])?"#,
            r"(?:(?i:(?:[a-z0-9_.\-]*[_.\-])?",
            r"(?:password|passwd|passphrase|secret|token|api[_\-]?key|access[_\-]?key|secret[_\-]?key))",
            r"|(?:[A-Za-z][A-Za-z0-9]*)?",
            r"(?:Password|Passwd|Passphrase|Secret|Token|ApiKey|AccessKey|SecretKey)",
            r"|apiKey|accessKey|secretKey)",
            r#"(?:\\?["'])?[ \t]*(?::=|=|:)[ \t]*"#,
            r#"(?:\\?"([^"\\\r\n]+)\\?"|\\?'([^'\\\r\n]+)\\?'"#,
            r#"|([^\s"'`,;=\\(){}\[\]<>$%&*@!][^\s"'`,;\\(){}\[\]<>]*)(?:[\s"'`,;\\]|$))"#,
        ),
    )
    .check(Check::Assignment)
    // The keyword ends the name (but for a `key` after `secret`), whose prefix is
    // the run of name bytes before it, after a bounding byte and a quote that may
    // be escaped. The guard asks for the separator; the value follows it.
    .guarded(Guard {
        lead_bytes: "_.-",
        lead_max: 61,
        margin: 3,
        pattern: r#"(?i)(?:[_\-]?key)?(?:\\?["'])?[ \t]*(?::=|=|:)"#,
        // Room for a quoted value of 256 bytes; a longer one is followed on.
        tail: 16 + 2 + 256 + 2,
    }),
];

/// Names (lowercase, without `_`, `-` and `.`) that end in a secret word but hold
/// none: the page tokens of paginated APIs and the special tokens of a tokenizer.
pub(crate) const NOT_SECRET_NAMES: &[&str] = &[
    "pagetoken",
    "nexttoken",
    "continuationtoken",
    "synctoken",
    "resumetoken",
    "bostoken",
    "eostoken",
    "padtoken",
    "unktoken",
    "septoken",
    "clstoken",
    "masktoken",
];

/// Variables whose value is reported under the kind of what they hold rather than
/// `secret-assignment`, keyed like [`NOT_SECRET_NAMES`].
const NAMED_KINDS: &[(&str, &str)] = &[
    ("awssecretaccesskey", "aws-secret-access-key"),
    ("openaiapikey", "openai-api-key"),
    ("anthropicapikey", "anthropic-api-key"),
    ("githubtoken", "github-token"),
    ("ghtoken", "github-token"),
    ("gitlabtoken", "gitlab-token"),
    ("slacktoken", "slack-token"),
    ("slackbottoken", "slack-token"),
    ("stripesecretkey", "stripe-key"),
    ("stripeapikey", "stripe-key"),
    ("googleapikey", "google-api-key"),
    ("geminiapikey", "google-api-key"),
    ("hftoken", "huggingface-token"),
    ("npmtoken", "npm-token"),
];

/// The kind of a well-known variable, from its key (see [`NOT_SECRET_NAMES`]).
pub(crate) fn named_kind(key: &str) -> Option<&'static str> {
    NAMED_KINDS
        .iter()
        .find(|(name, _)| *name == key)
        .map(|(_, kind)| *kind)
}

/// The kinds [`named_kind`] can give.
pub(crate) fn named_kinds() -> impl Iterator<Item = &'static str> {
    NAMED_KINDS.iter().map(|(_, kind)| *kind)
}
