//! Fake secrets in the shape of each rule, built from a seeded generator so that no
//! secret-looking literal sits in the source.

use std::ops::Range;

pub(super) const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
pub(super) const LOWER: &str = "abcdefghijklmnopqrstuvwxyz";
pub(super) const DIGITS: &str = "0123456789";
const HEX: &str = "0123456789abcdef";

/// Marsaglia's xorshift: deterministic fakes without a random-number dependency.
pub(super) struct Gen(pub u64);

impl Gen {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// `len` characters drawn from the concatenation of `alphabets`.
    pub(super) fn pick(&mut self, alphabets: &[&str], len: usize) -> String {
        let alphabet: Vec<char> = alphabets.concat().chars().collect();
        (0..len)
            .map(|_| alphabet[(self.next() % alphabet.len() as u64) as usize])
            .collect()
    }

    fn alnum(&mut self, len: usize) -> String {
        self.pick(&[UPPER, LOWER, DIGITS], len)
    }

    fn hex(&mut self, len: usize) -> String {
        self.pick(&[HEX], len)
    }

    fn digits(&mut self, len: usize) -> String {
        self.pick(&[DIGITS], len)
    }

    fn lower_alnum(&mut self, len: usize) -> String {
        self.pick(&[LOWER, DIGITS], len)
    }

    fn base64(&mut self, len: usize) -> String {
        self.pick(&[UPPER, LOWER, DIGITS, "+/"], len)
    }

    fn uuid(&mut self) -> String {
        [
            self.hex(8),
            self.hex(4),
            self.hex(4),
            self.hex(4),
            self.hex(12),
        ]
        .join("-")
    }
}

/// A fake secret as it would be written, and the part of it a marker replaces.
pub(super) struct Fake {
    pub text: String,
    pub secret: Range<usize>,
}

impl Fake {
    fn whole(text: String) -> Fake {
        let secret = 0..text.len();
        Fake { text, secret }
    }

    /// `kept` stays in the text; `secret` is replaced.
    fn after(kept: &str, secret: &str, tail: &str) -> Fake {
        Fake {
            text: format!("{kept}{secret}{tail}"),
            secret: kept.len()..kept.len() + secret.len(),
        }
    }
}

/// A fake for the rule `id`; every built-in rule has one.
pub(super) fn fake(id: &str, g: &mut Gen) -> Fake {
    if let Some(fake) = provider_fake(id, g).or_else(|| platform_fake(id, g)) {
        return fake;
    }
    service_fake(id, g).unwrap_or_else(|| panic!("no fake for rule {id}"))
}

fn provider_fake(id: &str, g: &mut Gen) -> Option<Fake> {
    let text = match id {
        "openai-api-key" => format!("sk-proj-{}T3BlbkFJ{}", g.alnum(74), g.alnum(74)),
        "anthropic-api-key" => format!("sk-ant-api03-{}-{}AA", g.alnum(60), g.alnum(32)),
        "anthropic-admin-api-key" => format!("sk-ant-admin01-{}_{}AA", g.alnum(40), g.alnum(52)),
        "huggingface-access-token" => format!("hf_{}", g.pick(&[UPPER, LOWER], 34)),
        "huggingface-organization-api-token" => format!("api_org_{}", g.pick(&[LOWER], 34)),
        "perplexity-api-key" => format!("pplx-{}", g.alnum(48)),
        "aws-access-token" => format!("AKIA{}", g.pick(&[UPPER, "234567"], 16)),
        "aws-amazon-bedrock-api-key-long-lived" => format!("ABSK{}", g.base64(120)),
        "gcp-api-key" => format!("AIza{}", g.alnum(35)),
        "digitalocean-pat" => format!("dop_v1_{}", g.hex(64)),
        "digitalocean-access-token" => format!("doo_v1_{}", g.hex(64)),
        "digitalocean-refresh-token" => format!("dor_v1_{}", g.hex(64)),
        "databricks-api-token" => format!("dapi{}", g.hex(32)),
        "flyio-access-token" => format!("fo1_{}", g.alnum(43)),
        "hashicorp-tf-api-token" => {
            format!("{}.atlasv1.{}", g.lower_alnum(14), g.alnum(64))
        }
        "vault-service-token" => format!("hvs.{}", g.alnum(100)),
        "vault-batch-token" => format!("hvb.{}", g.alnum(150)),
        "pulumi-api-token" => format!("pul-{}", g.hex(40)),
        "doppler-api-token" => format!("dp.pt.{}", g.alnum(43)),
        "planetscale-api-token" => format!("pscale_tkn_{}", g.alnum(43)),
        "planetscale-oauth-token" => format!("pscale_oauth_{}", g.alnum(43)),
        "planetscale-password" => format!("pscale_pw_{}", g.alnum(43)),
        "1password-service-account-token" => format!("ops_eyJ{}", g.base64(260)),
        "age-secret-key" => format!(
            "AGE-SECRET-KEY-1{}",
            g.pick(&["QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"], 58)
        ),
        _ => return None,
    };
    Some(Fake::whole(text))
}

fn platform_fake(id: &str, g: &mut Gen) -> Option<Fake> {
    let text = match id {
        "github-pat" => format!("ghp_{}", g.alnum(36)),
        "github-fine-grained-pat" => format!("github_pat_{}_{}", g.alnum(22), g.alnum(59)),
        "github-oauth" => format!("gho_{}", g.alnum(36)),
        "github-app-token" => format!("ghs_{}", g.alnum(36)),
        "github-refresh-token" => format!("ghr_{}", g.alnum(36)),
        "gitlab-pat" => format!("glpat-{}", g.alnum(20)),
        "gitlab-pat-routable" => format!("glpat-{}.01{}", g.alnum(36), g.lower_alnum(7)),
        "gitlab-ptt" => format!("glptt-{}", g.hex(40)),
        "gitlab-rrt" => format!("GR1348941{}", g.alnum(20)),
        "gitlab-runner-authentication-token" => format!("glrt-{}", g.alnum(20)),
        "gitlab-runner-authentication-token-routable" => {
            format!("glrt-t1_{}.01{}", g.alnum(30), g.lower_alnum(7))
        }
        "gitlab-deploy-token" => format!("gldt-{}", g.alnum(20)),
        "gitlab-feed-token" => format!("glft-{}", g.alnum(20)),
        "gitlab-incoming-mail-token" => format!("glimt-{}", g.alnum(25)),
        "gitlab-kubernetes-agent-token" => format!("glagent-{}", g.alnum(50)),
        "gitlab-oauth-app-secret" => format!("gloas-{}", g.alnum(64)),
        "gitlab-scim-token" => format!("glsoat-{}", g.alnum(20)),
        "gitlab-cicd-job-token" => format!("glcbt-{}_{}", g.alnum(5), g.alnum(20)),
        "gitlab-feature-flag-client-token" => format!("glffct-{}", g.alnum(20)),
        "npm-access-token" => format!("npm_{}", g.alnum(36)),
        "pypi-upload-token" => format!("pypi-AgEIcHlwaS5vcmc{}", g.alnum(70)),
        "rubygems-api-token" => format!("rubygems_{}", g.hex(48)),
        "clojars-api-token" => format!("CLOJARS_{}", g.lower_alnum(60)),
        "slack-bot-token" => format!("xoxb-{}-{}-{}", g.digits(12), g.digits(12), g.alnum(24)),
        "slack-user-token" => format!(
            "xoxp-{}-{}-{}-{}",
            g.digits(12),
            g.digits(12),
            g.digits(12),
            g.alnum(32)
        ),
        "slack-app-token" => format!(
            "xapp-1-A{}-{}-{}",
            g.pick(&[UPPER, DIGITS], 10),
            g.digits(13),
            g.lower_alnum(64)
        ),
        "slack-config-access-token" => {
            format!("xoxe.xoxp-1-{}", g.pick(&[UPPER, DIGITS], 164))
        }
        "slack-config-refresh-token" => format!("xoxe-1-{}", g.pick(&[UPPER, DIGITS], 146)),
        "slack-legacy-bot-token" => format!("xoxb-{}-Q{}", g.digits(10), g.alnum(23)),
        "slack-legacy-token" => format!(
            "xoxs-{}-{}-{}-{}",
            g.digits(10),
            g.digits(10),
            g.digits(10),
            g.hex(64)
        ),
        "slack-legacy-workspace-token" => format!("xoxa-2-{}", g.alnum(40)),
        "slack-webhook-url" => {
            let path = format!(
                "T{}/B{}/{}",
                g.pick(&[UPPER, DIGITS], 8),
                g.pick(&[UPPER, DIGITS], 10),
                g.alnum(24)
            );
            return Some(Fake::after("https://hooks.slack.com/services/", &path, ""));
        }
        "microsoft-teams-webhook" => {
            let host = format!("https://{}.webhook.office.com/", g.lower_alnum(8));
            let path = format!(
                "webhookb2/{}@{}/IncomingWebhook/{}/{}",
                g.uuid(),
                g.uuid(),
                g.lower_alnum(32),
                g.uuid()
            );
            return Some(Fake::after(&host, &path, ""));
        }
        _ => return None,
    };
    Some(Fake::whole(text))
}

fn service_fake(id: &str, g: &mut Gen) -> Option<Fake> {
    let text = match id {
        "stripe-access-token" => format!("sk_live_{}", g.alnum(24)),
        "sendgrid-api-token" => format!("SG.{}.{}", g.alnum(22), g.alnum(43)),
        "sendinblue-api-token" => format!("xkeysib-{}-{}", g.hex(64), g.alnum(16)),
        "shopify-access-token" => format!("shpat_{}", g.hex(32)),
        "shopify-custom-access-token" => format!("shpca_{}", g.hex(32)),
        "shopify-private-app-access-token" => format!("shppa_{}", g.hex(32)),
        "shopify-shared-secret" => format!("shpss_{}", g.hex(32)),
        "linear-api-key" => format!("lin_api_{}", g.alnum(40)),
        "notion-api-token" => format!("ntn_{}{}", g.digits(11), g.alnum(35)),
        "grafana-api-key" => format!("eyJrIjoi{}", g.alnum(80)),
        "grafana-cloud-api-token" => format!("glc_{}", g.alnum(40)),
        "grafana-service-account-token" => format!("glsa_{}_{}", g.alnum(32), g.hex(8)),
        "dynatrace-api-token" => format!("dt0c01.{}.{}", g.pick(&[UPPER, DIGITS], 24), g.alnum(64)),
        "sentry-user-token" => format!("sntryu_{}", g.hex(64)),
        "sentry-org-token" => format!(
            "sntrys_eyJpYXQiO{}LCJyZWdpb25fdXJs{}_{}",
            g.base64(20),
            g.base64(20),
            g.base64(43)
        ),
        "postman-api-token" => format!("PMAK-{}-{}", g.hex(24), g.hex(34)),
        "prefect-api-token" => format!("pnu_{}", g.alnum(36)),
        "private-key" => {
            let body: Vec<String> = (0..6).map(|_| g.base64(64)).collect();
            format!(
                "-----BEGIN RSA PRIVATE KEY-----\n{}\n{}==\n-----END RSA PRIVATE KEY-----",
                body.join("\n"),
                g.base64(22)
            )
        }
        "jwt" => format!("eyJ{}.eyJ{}.{}", g.alnum(30), g.alnum(60), g.alnum(43)),
        "url-password" => {
            return Some(Fake::after(
                "postgres://app:",
                &g.alnum(16),
                "@db.internal:5432/app",
            ));
        }
        "secret-assignment" => {
            let value = format!("{}!{}", g.alnum(10), g.alnum(8));
            return Some(Fake::after("DATABASE_PASSWORD=", &value, ""));
        }
        _ => return None,
    };
    Some(Fake::whole(text))
}
