//! Vendored rules: payments and other services, private keys and JWTs.
//!
//! Copied from the gitleaks default configuration (`config/gitleaks.toml`, commit
//! `b58d3f102cf3a2c84cb7f923d05c25c9b1aed84b`), MIT licence, in `LICENSE-gitleaks` beside this file. Each entry keeps its
//! gitleaks id, keywords, pattern and entropy threshold; changes are marked
//! "Adapted" with the reason.

use super::{rule, Spec};

/// Payment and other service keys with a fixed prefix.
pub(super) const SERVICES: &[Spec] = &[
    rule(
        "stripe-access-token",
        "stripe-key",
        &["sk_test", "sk_live", "sk_prod", "rk_test", "rk_live", "rk_prod"],
        r#"\b((?:sk|rk)_(?:test|live|prod)_[a-zA-Z0-9]{10,99})(?:[\x60'"\s;]|\\[nr]|$)"#,
    )
    .entropy(2.0),
    rule(
        "sendgrid-api-token",
        "sendgrid-api-key",
        &["sg."],
        r#"\b(SG\.(?i)[a-z0-9=_\-\.]{66})(?:[\x60'"\s;]|\\[nr]|$)"#,
    )
    .entropy(2.0),
    rule(
        "sendinblue-api-token",
        "sendinblue-api-key",
        &["xkeysib-"],
        r#"\b(xkeysib-[a-f0-9]{64}\-(?i)[a-z0-9]{16})(?:[\x60'"\s;]|\\[nr]|$)"#,
    )
    .entropy(2.0),
    rule(
        "shopify-access-token",
        "shopify-token",
        &["shpat_"],
        r"shpat_[a-fA-F0-9]{32}",
    )
    .entropy(2.0),
    rule(
        "shopify-custom-access-token",
        "shopify-token",
        &["shpca_"],
        r"shpca_[a-fA-F0-9]{32}",
    )
    .entropy(2.0),
    rule(
        "shopify-private-app-access-token",
        "shopify-token",
        &["shppa_"],
        r"shppa_[a-fA-F0-9]{32}",
    )
    .entropy(2.0),
    rule(
        "shopify-shared-secret",
        "shopify-token",
        &["shpss_"],
        r"shpss_[a-fA-F0-9]{32}",
    )
    .entropy(2.0),
    rule(
        "linear-api-key",
        "linear-api-key",
        &["lin_api_"],
        r"lin_api_(?i)[a-z0-9]{40}",
    )
    .entropy(2.0),
    rule(
        "notion-api-token",
        "notion-token",
        &["ntn_"],
        r#"\b(ntn_[0-9]{11}[A-Za-z0-9]{32}[A-Za-z0-9]{3})(?:[\x60'"\s;]|\\[nr]|$)"#,
    )
    .entropy(4.0),
    rule(
        "grafana-api-key",
        "grafana-token",
        &["eyjrijoi"],
        r#"(?i)\b(eyJrIjoi[A-Za-z0-9]{70,400}={0,3})(?:[\x60'"\s;]|\\[nr]|$)"#,
    )
    .entropy(3.0),
    rule(
        "grafana-cloud-api-token",
        "grafana-token",
        &["glc_"],
        r#"(?i)\b(glc_[A-Za-z0-9+/]{32,400}={0,3})(?:[\x60'"\s;]|\\[nr]|$)"#,
    )
    .entropy(3.0),
    rule(
        "grafana-service-account-token",
        "grafana-token",
        &["glsa_"],
        r#"(?i)\b(glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})(?:[\x60'"\s;]|\\[nr]|$)"#,
    )
    .entropy(3.0),
    rule(
        "dynatrace-api-token",
        "dynatrace-token",
        &["dt0c01."],
        r"dt0c01\.(?i)[a-z0-9]{24}\.[a-z0-9]{64}",
    )
    .entropy(4.0),
    rule(
        "sentry-user-token",
        "sentry-token",
        &["sntryu_"],
        r#"\b(sntryu_[a-f0-9]{64})(?:[\x60'"\s;]|\\[nr]|$)"#,
    )
    .entropy(3.5),
    rule(
        "sentry-org-token",
        "sentry-token",
        &["sntrys_eyjpyxqio"],
        // Adapted: the token is a group, so the byte after it is not redacted with it.
        r"\b(sntrys_eyJpYXQiO[a-zA-Z0-9+/]{10,200}(?:LCJyZWdpb25fdXJs|InJlZ2lvbl91cmwi|cmVnaW9uX3VybCI6)[a-zA-Z0-9+/]{10,200}={0,2}_[a-zA-Z0-9+/]{43})(?:[^a-zA-Z0-9+/]|\z)",
    )
    .entropy(4.5),
    rule(
        "postman-api-token",
        "postman-token",
        &["pmak-"],
        r#"\b(PMAK-(?i)[a-f0-9]{24}\-[a-f0-9]{34})(?:[\x60'"\s;]|\\[nr]|$)"#,
    )
    .entropy(3.0),
    rule(
        "prefect-api-token",
        "prefect-token",
        &["pnu_"],
        r#"\b(pnu_[a-zA-Z0-9]{36})(?:[\x60'"\s;]|\\[nr]|$)"#,
    )
    .entropy(2.0),
];

/// Private key blocks and JSON Web Tokens, whoever issued them.
pub(super) const KEYS: &[Spec] = &[
    rule(
        "private-key",
        "private-key",
        &["-----begin"],
        r"(?i)-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S-]{64,}?KEY(?: BLOCK)?-----",
    )
    // The body has no upper bound; 64 KiB holds a 16384-bit RSA key several times.
    .reach(64 * 1024),
    rule(
        "jwt",
        "jwt",
        // Adapted: the keyword `ey` (in "key", "they") becomes `eyj`, how every compact
        // JSON header (`{"`) starts; a header with a space after its brace (`eyA`) is
        // left out.
        &["eyj"],
        r#"\b(ey[a-zA-Z0-9]{17,}\.ey[a-zA-Z0-9\/\\_-]{17,}\.(?:[a-zA-Z0-9\/\\_-]{10,}={0,2})?)(?:[\x60'"\s;]|\\[nr]|$)"#,
    )
    .entropy(3.0),
];
