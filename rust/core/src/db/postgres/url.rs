//! `postgresql://` URLs: telling one from a file path, and naming one without its
//! password.
//!
//! Every error about a server names its URL, and errors end up in logs: the name is
//! always [`redact`]ed. Redaction errs towards hiding: it works on the text as
//! given, without parsing it first, so a password with unescaped `@`, `/` or `?` in
//! it is hidden whole rather than cut at the wrong place.

/// The schemes the PostgreSQL backend answers to (libpq accepts both).
const SCHEMES: [&str; 2] = ["postgresql://", "postgres://"];

/// What stands where a password was.
const HIDDEN: &str = "***";

/// Whether `db` names a PostgreSQL database rather than a SQLite file.
#[must_use]
pub fn is_postgres_url(db: &str) -> bool {
    SCHEMES
        .iter()
        .any(|scheme| db.len() >= scheme.len() && db[..scheme.len()].eq_ignore_ascii_case(scheme))
}

/// `url` with its password hidden: in the user information (`user:secret@`) and in
/// a `password=` query parameter (and libpq's `sslpassword=`, a client key's).
/// Text that is not a URL is returned as it is.
#[must_use]
pub fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|at| at + 3) else {
        return url.to_string();
    };
    // The query parameter first: a password there may hold an `@`, which would
    // otherwise read as the end of the user information.
    let url = redact_query(url);
    let (scheme, rest) = url.split_at(scheme_end);
    // The user information ends at the last `@`: a password may hold any other
    // character unescaped. With a `:` before it, all after that `:` is hidden.
    let Some(at) = rest.rfind('@') else {
        return url;
    };
    let Some(colon) = rest[..at].find(':') else {
        return url;
    };
    format!("{scheme}{}{HIDDEN}{}", &rest[..=colon], &rest[at..])
}

/// `url` with the value of every `password` query parameter hidden.
fn redact_query(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(found) = find_password_parameter(rest) {
        let value_start = found + "password=".len();
        out.push_str(&rest[..value_start]);
        out.push_str(HIDDEN);
        let value_end = rest[value_start..]
            .find('&')
            .map_or(rest.len(), |end| value_start + end);
        rest = &rest[value_end..];
    }
    out.push_str(rest);
    out
}

/// Where the next `password=` parameter (after a `?` or `&`, or after `ssl` that
/// follows one) starts in `text`: the value follows its `password=`.
fn find_password_parameter(text: &str) -> Option<usize> {
    let lower = text.to_ascii_lowercase();
    let starts_parameter = |at: usize| at > 0 && matches!(text.as_bytes()[at - 1], b'?' | b'&');
    let mut from = 0;
    while let Some(found) = lower[from..].find("password=").map(|at| from + at) {
        let after_ssl = found >= 3 && &lower[found - 3..found] == "ssl";
        if starts_parameter(found) || (after_ssl && starts_parameter(found - 3)) {
            return Some(found);
        }
        from = found + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn urls_are_told_from_paths() {
        assert!(is_postgres_url("postgresql://u@h/db"));
        assert!(is_postgres_url("postgres://h/db"));
        assert!(is_postgres_url("PostgreSQL://h/db"));
        assert!(!is_postgres_url("/var/lib/lossless.db"));
        assert!(!is_postgres_url("postgresql.db"));
        assert!(!is_postgres_url(":memory:"));
        assert!(!is_postgres_url("p"));
    }

    #[test]
    fn the_password_is_hidden_and_the_rest_kept() {
        assert_eq!(
            redact("postgresql://app:s3cret@db.internal:5433/lossless?sslmode=require"),
            "postgresql://app:***@db.internal:5433/lossless?sslmode=require"
        );
        assert_eq!(redact("postgresql://app@h/db"), "postgresql://app@h/db");
        assert_eq!(redact("postgresql://h/db"), "postgresql://h/db");
        assert_eq!(
            redact("postgresql:///db?host=/run/pg&password=hunter2&user=app"),
            "postgresql:///db?host=/run/pg&password=***&user=app"
        );
        assert_eq!(redact("not a url"), "not a url");
        assert_eq!(
            redact("postgresql://h/db?sslmode=verify-full&sslpassword=k3y&sslkey=c.key"),
            "postgresql://h/db?sslmode=verify-full&sslpassword=***&sslkey=c.key"
        );
    }

    #[test]
    fn a_password_with_separators_in_it_is_hidden_whole() {
        assert_eq!(
            redact("postgresql://app:a/b@c?d@127.0.0.1/db"),
            "postgresql://app:***@127.0.0.1/db"
        );
        assert_eq!(
            redact("postgresql://h:5432/db?password=a@b&user=app"),
            "postgresql://h:5432/db?password=***&user=app"
        );
    }

    proptest! {
        #[test]
        fn no_password_survives_redaction(
            user in "[a-z]{1,8}",
            password in "[!-~]{4,24}",
            host in "[a-z]{1,8}",
            db in "[a-z]{1,8}",
        ) {
            prop_assume!(!format!("postgresql://{user}:***@{host}:5432/{db}").contains(&password));
            let url = format!("postgresql://{user}:{password}@{host}:5432/{db}");
            let shown = redact(&url);
            prop_assert!(!shown.contains(&password), "{shown}");
            let prefix = format!("postgresql://{user}:");
            prop_assert!(shown.starts_with(&prefix), "{}", shown);
            // In a query string, `&` separates parameters: a password holding one is
            // written percent-encoded.
            let escaped = password.replace('&', "%26");
            let query = format!("postgresql://{host}/{db}?password={escaped}");
            let shown = redact(&query);
            prop_assert!(!shown.contains(&escaped), "{shown}");
        }
    }
}
