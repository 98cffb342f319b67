//! The built-in rule set: high-confidence rules vendored from gitleaks, and the two
//! rules of the project's own (a password inside a URL, the value of a well-known
//! secret variable).
//!
//! The vendored patterns are RE2 syntax, which, like the `regex` engines here, has no
//! look-around, so they compile as written. They run byte-wise with Unicode off, which
//! gives `\w`, `\s`, `\b` and `(?i)` the ASCII meaning they have in RE2.

mod own;
mod platforms;
mod providers;
mod services;

/// What a match must also pass to count as a secret.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Check {
    /// Nothing beyond the pattern.
    None,
    /// gitleaks' Shannon entropy threshold: the secret's entropy in bits per byte
    /// must be above it.
    Entropy(f32),
    /// The password of a URL must not be a placeholder.
    UrlPassword,
    /// The value of a secret variable must not be a placeholder, a reference or code.
    Assignment,
}

/// Where a rule's keyword sits in its matches, which decides where it is searched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// Every match starts where one of the keywords starts, as in most vendored
    /// rules (`ghp_`, `xoxb`): one anchored search at each keyword.
    Start,
    /// A keyword can be anywhere in a match: the window of the pattern's reach on
    /// both sides of it is searched.
    Inside,
    /// A keyword is at a known place in a short match, and a cheap test after it
    /// turns most keywords away (a `token` not followed by `=` or `:`).
    Guarded(Guard),
}

/// How a guarded rule is searched around a keyword: only where the guard,
/// anchored where the keyword ends, matches; then with an anchored search at each
/// place a match can start (in the `margin` before the run of lead bytes that ends
/// at the keyword, or where a word starts in that run), up to `tail` bytes past
/// the guard's match, until one matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Guard {
    /// Besides ASCII letters and digits, the bytes that can come before the keyword
    /// in a match (the rest of a name, a scheme).
    pub lead_bytes: &'static str,
    /// The most lead bytes a match can have.
    pub lead_max: usize,
    /// The bytes a match can start with before its lead (a bounding byte, quotes).
    pub margin: usize,
    /// The pattern that must match where the keyword ends.
    pub pattern: &'static str,
    /// How far past the guard's match a match can end.
    pub tail: usize,
}

/// One rule as written in the tables.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spec {
    /// The gitleaks rule id, or the project's own id.
    pub id: &'static str,
    /// The kind named in the marker.
    pub kind: &'static str,
    /// Lowercase literals of which one occurs in every match; the rule runs only
    /// around them.
    pub keywords: &'static [&'static str],
    /// The pattern. The first capture group that matched text is the secret, or the
    /// whole match when the pattern has no group.
    pub pattern: &'static str,
    /// What a match must also pass.
    pub check: Check,
    /// A pattern that, matching the secret, says it is a known example.
    pub allow: Option<&'static str>,
    /// How far around a keyword a match can reach, where the pattern's own bound is
    /// missing or too large to be useful.
    pub reach: Option<usize>,
    /// Where the keyword sits in a match.
    pub placement: Placement,
}

/// A rule whose matches start at a keyword, with no check, no allowlist and the
/// pattern's own reach.
pub(crate) const fn rule(
    id: &'static str,
    kind: &'static str,
    keywords: &'static [&'static str],
    pattern: &'static str,
) -> Spec {
    Spec {
        id,
        kind,
        keywords,
        pattern,
        check: Check::None,
        allow: None,
        reach: None,
        placement: Placement::Start,
    }
}

impl Spec {
    /// With gitleaks' entropy threshold.
    pub(crate) const fn entropy(self, bits: f32) -> Spec {
        Spec {
            check: Check::Entropy(bits),
            ..self
        }
    }

    /// With another check.
    pub(crate) const fn check(self, check: Check) -> Spec {
        Spec { check, ..self }
    }

    /// With a pattern of known example secrets.
    pub(crate) const fn allow(self, pattern: &'static str) -> Spec {
        Spec {
            allow: Some(pattern),
            ..self
        }
    }

    /// With its keywords anywhere in a match.
    pub(crate) const fn inside(self) -> Spec {
        Spec {
            placement: Placement::Inside,
            ..self
        }
    }

    /// With its keywords where `guard` says.
    pub(crate) const fn guarded(self, guard: Guard) -> Spec {
        Spec {
            placement: Placement::Guarded(guard),
            ..self
        }
    }

    /// With a reach of its own.
    pub(crate) const fn reach(self, bytes: usize) -> Spec {
        Spec {
            reach: Some(bytes),
            ..self
        }
    }
}

/// Every built-in rule, vendored ones first: where two rules find the same secret,
/// the earlier one names its kind.
pub(crate) fn all() -> impl Iterator<Item = &'static Spec> {
    [
        providers::AI_PROVIDERS,
        providers::CLOUD,
        platforms::FORGES,
        platforms::CHAT,
        services::SERVICES,
        services::KEYS,
        own::OWN,
    ]
    .into_iter()
    .flatten()
}

pub(crate) use own::{named_kind, named_kinds, NOT_SECRET_NAMES};
