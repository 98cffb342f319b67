//! Vendored rules: AI providers and cloud credentials.
//!
//! Copied from the gitleaks default configuration (`config/gitleaks.toml`, commit
//! `b58d3f102cf3a2c84cb7f923d05c25c9b1aed84b`), MIT licence, in `LICENSE-gitleaks` beside this file. Each entry keeps its
//! gitleaks id, keywords, pattern and entropy threshold; changes are marked
//! "Adapted" with the reason.

use super::{rule, Spec};

/// API keys of model providers.
pub(super) const AI_PROVIDERS: &[Spec] = &[
    rule(
        "openai-api-key",
        "openai-api-key",
        &["t3blbkfj"],
        r#"\b(sk-(?:proj|svcacct|admin)-(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})T3BlbkFJ(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})\b|sk-[a-zA-Z0-9]{20}T3BlbkFJ[a-zA-Z0-9]{20})(?:[\x60'"\s;]|\\[nr]|$)"#,
    )
    .entropy(3.0)
    .inside(),
    rule(
        "anthropic-api-key",
        "anthropic-api-key",
        &["sk-ant-api03"],
        r#"\b(sk-ant-api03-[a-zA-Z0-9_\-]{93}AA)(?:[\x60'"\s;]|\\[nr]|$)"#,
    ),
    rule(
        "anthropic-admin-api-key",
        "anthropic-admin-api-key",
        &["sk-ant-admin01"],
        r#"\b(sk-ant-admin01-[a-zA-Z0-9_\-]{93}AA)(?:[\x60'"\s;]|\\[nr]|$)"#,
    ),
    rule(
        "huggingface-access-token",
        "huggingface-token",
        &["hf_"],
        r#"\b(hf_(?i:[a-z]{34}))(?:[\x60'"\s;]|\\[nr]|$)"#,
    )
    .entropy(2.0),
    rule(
        "huggingface-organization-api-token",
        "huggingface-token",
        &["api_org_"],
        r#"\b(api_org_(?i:[a-z]{34}))(?:[\x60'"\s;]|\\[nr]|$)"#,
    )
    .entropy(2.0),
    rule(
        "perplexity-api-key",
        "perplexity-api-key",
        &["pplx-"],
        r#"\b(pplx-[a-zA-Z0-9]{48})(?:[\x60'"\s;]|\\[nr]|$|\b)"#,
    )
    .entropy(4.0),
];

/// Cloud, infrastructure and secret-manager credentials.
pub(super) const CLOUD: &[Spec] = &[
    rule(
        "aws-access-token",
        "aws-access-key-id",
        &["a3t", "akia", "asia", "abia", "acca"],
        r"\b((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\b",
    )
    .entropy(3.0)
    // As upstream: the documentation's example keys end in EXAMPLE.
    .allow(r".+EXAMPLE$"),
    rule(
        "aws-amazon-bedrock-api-key-long-lived",
        "aws-bedrock-api-key",
        &["absk"],
        r#"\b(ABSK[A-Za-z0-9+/]{109,269}={0,2})(?:[\x60'"\s;]|\\[nr]|$)"#,
    )
    .entropy(3.0),
    rule(
        "gcp-api-key",
        "google-api-key",
        &["aiza"],
        r#"\b(AIza[\w-]{35})(?:[\x60'"\s;]|\\[nr]|$)"#,
    )
    .entropy(4.0),
    rule(
        "digitalocean-pat",
        "digitalocean-token",
        &["dop_v1_"],
        r#"\b(dop_v1_[a-f0-9]{64})(?:[\x60'"\s;]|\\[nr]|$)"#,
    )
    .entropy(3.0),
    rule(
        "digitalocean-access-token",
        "digitalocean-token",
        &["doo_v1_"],
        r#"\b(doo_v1_[a-f0-9]{64})(?:[\x60'"\s;]|\\[nr]|$)"#,
    )
    .entropy(3.0),
    rule(
        "digitalocean-refresh-token",
        "digitalocean-token",
        &["dor_v1_"],
        r#"(?i)\b(dor_v1_[a-f0-9]{64})(?:[\x60'"\s;]|\\[nr]|$)"#,
    ),
    rule(
        "databricks-api-token",
        "databricks-token",
        &["dapi"],
        r#"\b(dapi[a-f0-9]{32}(?:-\d)?)(?:[\x60'"\s;]|\\[nr]|$)"#,
    )
    .entropy(3.0),
    rule(
        "flyio-access-token",
        "flyio-token",
        &["fo1_", "fm1", "fm2_"],
        r#"\b((?:fo1_[\w-]{43}|fm1[ar]_[a-zA-Z0-9+\/]{100,}={0,3}|fm2_[a-zA-Z0-9+\/]{100,}={0,3}))(?:[\x60'"\s;]|\\[nr]|$)"#,
    )
    .entropy(4.0),
    rule(
        "hashicorp-tf-api-token",
        "terraform-token",
        &["atlasv1"],
        r"(?i)[a-z0-9]{14}\.(?-i:atlasv1)\.[a-z0-9\-_=]{60,70}",
    )
    .entropy(3.5)
    .inside(),
    rule(
        "vault-service-token",
        "vault-token",
        // Adapted: the legacy `s.` form (Vault before 1.10) is left out; its two-byte
        // keyword ends most sentences.
        &["hvs."],
        r#"\b(hvs\.[\w-]{90,120})(?:[\x60'"\s;]|\\[nr]|$)"#,
    )
    .entropy(3.5),
    rule(
        "vault-batch-token",
        "vault-token",
        &["hvb."],
        r#"\b(hvb\.[\w-]{138,300})(?:[\x60'"\s;]|\\[nr]|$)"#,
    )
    .entropy(4.0),
    rule(
        "pulumi-api-token",
        "pulumi-token",
        &["pul-"],
        r#"\b(pul-[a-f0-9]{40})(?:[\x60'"\s;]|\\[nr]|$)"#,
    )
    .entropy(2.0),
    rule(
        "doppler-api-token",
        "doppler-token",
        &["dp.pt."],
        r"dp\.pt\.(?i)[a-z0-9]{43}",
    )
    .entropy(2.0),
    rule(
        "planetscale-api-token",
        "planetscale-token",
        &["pscale_tkn_"],
        r#"\b(pscale_tkn_(?i)[\w=\.-]{32,64})(?:[\x60'"\s;]|\\[nr]|$)"#,
    )
    .entropy(3.0),
    rule(
        "planetscale-oauth-token",
        "planetscale-token",
        &["pscale_oauth_"],
        r#"\b(pscale_oauth_[\w=\.-]{32,64})(?:[\x60'"\s;]|\\[nr]|$)"#,
    )
    .entropy(3.0),
    rule(
        "planetscale-password",
        "planetscale-password",
        &["pscale_pw_"],
        r#"(?i)\b(pscale_pw_(?i)[\w=\.-]{32,64})(?:[\x60'"\s;]|\\[nr]|$)"#,
    )
    .entropy(3.0),
    rule(
        "1password-service-account-token",
        "1password-token",
        &["ops_"],
        r"ops_eyJ[a-zA-Z0-9+/]{250,}={0,3}",
    )
    .entropy(4.0),
    rule(
        "age-secret-key",
        "age-secret-key",
        &["age-secret-key-1"],
        r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
    ),
];
