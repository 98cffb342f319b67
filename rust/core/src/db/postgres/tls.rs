//! TLS to the server, configured from the URL as libpq reads it: `sslmode`
//! (`disable`, `allow`, `prefer`, `require`, `verify-ca`, `verify-full`),
//! `sslrootcert`, `sslcert` and `sslkey`.
//!
//! The `postgres` crate's own configuration knows only `disable`, `prefer` and
//! `require`, and refuses the certificate parameters: they are taken out of the
//! URL here, and the connector (OpenSSL, the library SQLCipher's ciphers come
//! from) is set up for the mode. As libpq: `require` encrypts without checking the
//! server's certificate (unless a root certificate is given, which makes it
//! `verify-ca`), `verify-ca` checks the chain to the root certificate, `verify-full`
//! the chain and the host name. Without `sslmode` the mode is `prefer`, libpq's
//! and the crate's default: TLS where the server offers it, else plain, with no
//! certificate checked; a plain server works as before. Unix sockets never use TLS.

use openssl::ssl::{SslConnector, SslFiletype, SslMethod, SslVerifyMode};
use percent_encoding::percent_decode_str;
use postgres_openssl::MakeTlsConnector;

use crate::error::{Error, Result};

/// How hard the connection insists on TLS and checks the server (libpq's `sslmode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    /// Never TLS.
    Disable,
    /// Plain first; TLS (unchecked) only if the server refuses a plain connection.
    Allow,
    /// TLS (unchecked) if the server offers it, else plain.
    Prefer,
    /// TLS, the certificate unchecked (checked as `VerifyCa` when a root certificate is given).
    Require,
    /// TLS, the certificate's chain checked against the root certificate.
    VerifyCa,
    /// TLS, the chain and the host name checked.
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> Option<Self> {
        Some(match value {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return None,
        })
    }

    /// The mode the `postgres` crate is told: it only decides whether TLS is
    /// tried and whether it is required; the checks are the connector's.
    #[must_use]
    pub fn client_mode(self) -> postgres::config::SslMode {
        match self {
            SslMode::Disable | SslMode::Allow => postgres::config::SslMode::Disable,
            SslMode::Prefer => postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                postgres::config::SslMode::Require
            }
        }
    }
}

/// What is checked of the server's certificate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Check {
    Nothing,
    Chain,
    ChainAndHost,
}

/// The TLS parameters of a URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsSettings {
    pub mode: SslMode,
    /// `sslrootcert`: a PEM file of trusted roots; `system` for the system's store.
    pub root_cert: Option<String>,
    /// `sslcert` and `sslkey`: the client's certificate and its private key (PEM).
    pub cert: Option<String>,
    pub key: Option<String>,
}

const PARAMETERS: [&str; 4] = ["sslmode", "sslrootcert", "sslcert", "sslkey"];

/// `url` without its TLS parameters, which the `postgres` crate would refuse, and
/// those parameters. `shown` (the URL without its password) names it in errors.
pub fn split(url: &str, shown: &str) -> Result<(String, TlsSettings)> {
    let mut settings = TlsSettings {
        mode: SslMode::Prefer,
        root_cert: None,
        cert: None,
        key: None,
    };
    let Some(start) = query_start(url) else {
        return Ok((url.to_string(), settings));
    };
    let mut kept: Vec<&str> = Vec::new();
    let mut mode_given = false;
    for pair in url[start + 1..].split('&') {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let name = percent_decode_str(name).decode_utf8_lossy();
        if !PARAMETERS.contains(&name.as_ref()) {
            kept.push(pair);
            continue;
        }
        let value = percent_decode_str(value).decode_utf8_lossy().into_owned();
        match name.as_ref() {
            "sslmode" => {
                mode_given = true;
                settings.mode = SslMode::parse(&value).ok_or_else(|| {
                    Error::invalid(
                        "db",
                        format!(
                            "{shown}: sslmode={value} is not one of disable, allow, prefer, \
                             require, verify-ca, verify-full"
                        ),
                    )
                })?;
            }
            "sslrootcert" => settings.root_cert = Some(value),
            "sslcert" => settings.cert = Some(value),
            _ => settings.key = Some(value),
        }
    }
    settings.system_roots(mode_given, shown)?;
    let mut plain = url[..start].to_string();
    if !kept.is_empty() {
        plain.push('?');
        plain.push_str(&kept.join("&"));
    }
    Ok((plain, settings))
}

/// Where the query of `url` starts (its `?`), found as the `postgres` crate finds
/// it: the user information ends at the first `@`, the host at the next `/` or
/// `?`, the database name at the next `?`.
fn query_start(url: &str) -> Option<usize> {
    let mut at = url.find("://")? + 3;
    if let Some(end) = url[at..].find('@') {
        at += end + 1;
    }
    at += url[at..].find(['/', '?'])?;
    if url[at..].starts_with('/') {
        at += url[at..].find('?')?;
    }
    Some(at)
}

impl TlsSettings {
    /// The system's roots trust any public authority's certificate, for any name:
    /// as libpq, they go with `verify-full` only, which `sslrootcert=system` implies
    /// when no `sslmode` is given. `verify-ca` needs a root certificate of its own.
    fn system_roots(&mut self, mode_given: bool, shown: &str) -> Result<()> {
        let system = self.root_cert.as_deref() == Some("system");
        if system && !mode_given {
            self.mode = SslMode::VerifyFull;
        }
        let refused = match self.mode {
            SslMode::VerifyFull => None,
            SslMode::VerifyCa if self.root_cert.is_none() || system => {
                Some("sslmode=verify-ca needs sslrootcert, a file of the roots to trust")
            }
            _ if system => Some("sslrootcert=system needs sslmode=verify-full"),
            _ => None,
        };
        match refused {
            Some(reason) => Err(Error::invalid(
                "db",
                format!("{shown}: {reason} (the system's roots would take any public authority's certificate for any host)"),
            )),
            None => Ok(()),
        }
    }

    /// The check the mode asks for: `require` with a root certificate checks the
    /// chain, as libpq's does.
    fn check(&self) -> Check {
        match self.mode {
            SslMode::VerifyFull => Check::ChainAndHost,
            SslMode::VerifyCa => Check::Chain,
            SslMode::Require if self.root_cert.is_some() => Check::Chain,
            _ => Check::Nothing,
        }
    }

    /// The connector for these settings: the roots to check the server against,
    /// the client's certificate, and whether the host name is checked.
    pub fn connector(&self, shown: &str) -> Result<MakeTlsConnector> {
        let setup = |reason: String| Error::invalid("db", format!("{shown}: {reason}"));
        let mut builder = SslConnector::builder(SslMethod::tls_client())
            .map_err(|err| setup(format!("TLS could not be set up: {err}")))?;
        let check = self.check();
        if check == Check::Nothing {
            builder.set_verify(SslVerifyMode::NONE);
        } else {
            builder.set_verify(SslVerifyMode::PEER);
            match self.root_cert.as_deref() {
                None | Some("system") => builder
                    .set_default_verify_paths()
                    .map_err(|err| setup(format!("the system's roots cannot be read: {err}")))?,
                Some(path) => {
                    readable("sslrootcert", path).map_err(setup)?;
                    builder.set_ca_file(path).map_err(|_| {
                        setup(format!(
                            "sslrootcert {path}: not a PEM file of certificates"
                        ))
                    })?;
                }
            }
        }
        if let Some(cert) = &self.cert {
            readable("sslcert", cert).map_err(setup)?;
            builder
                .set_certificate_chain_file(cert)
                .map_err(|_| setup(format!("sslcert {cert}: not a PEM file of certificates")))?;
            let key = self.key.as_deref().unwrap_or(cert);
            readable("sslkey", key).map_err(setup)?;
            builder
                .set_private_key_file(key, SslFiletype::PEM)
                .and_then(|()| builder.check_private_key())
                .map_err(|_| setup(format!("sslkey {key}: not the PEM private key of sslcert")))?;
        }
        let mut connector = MakeTlsConnector::new(builder.build());
        if check != Check::ChainAndHost {
            connector.set_callback(|config, _host| {
                config.set_verify_hostname(false);
                Ok(())
            });
        }
        Ok(connector)
    }
}

/// Whether the file `path` (the value of `parameter`) can be read, said as an error.
fn readable(parameter: &str, path: &str) -> std::result::Result<(), String> {
    std::fs::File::open(path)
        .map(drop)
        .map_err(|err| format!("{parameter} {path}: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_ok(url: &str) -> (String, TlsSettings) {
        split(url, "shown").unwrap()
    }

    #[test]
    fn the_tls_parameters_leave_the_url_and_the_rest_stays() {
        let (plain, settings) = split_ok(
            "postgresql://app:pw@db:5432/agents?sslmode=verify-full&application_name=w1\
             &sslrootcert=%2Fetc%2Fca.pem&connect_timeout=3",
        );
        assert_eq!(
            plain,
            "postgresql://app:pw@db:5432/agents?application_name=w1&connect_timeout=3"
        );
        assert_eq!(settings.mode, SslMode::VerifyFull);
        assert_eq!(settings.root_cert.as_deref(), Some("/etc/ca.pem"));
        assert_eq!(settings.check(), Check::ChainAndHost);

        let (plain, settings) = split_ok("postgresql://db/agents?sslmode=require");
        assert_eq!(plain, "postgresql://db/agents");
        assert_eq!(settings.check(), Check::Nothing);
        let (plain, settings) = split_ok("postgres://u@db?sslcert=c.pem&sslkey=k.pem");
        assert_eq!(plain, "postgres://u@db");
        assert_eq!(settings.mode, SslMode::Prefer);
        assert_eq!(
            (settings.cert.as_deref(), settings.key.as_deref()),
            (Some("c.pem"), Some("k.pem"))
        );
    }

    #[test]
    fn a_url_without_a_query_keeps_the_default_mode() {
        for url in [
            "postgresql://app:p?w@db/agents",
            "postgresql://db",
            "postgresql:///agents",
        ] {
            let (plain, settings) = split_ok(url);
            assert_eq!(plain, url);
            assert_eq!(settings.mode, SslMode::Prefer);
        }
        // A `?` in the password is not the query's.
        let (plain, settings) = split_ok("postgresql://app:p?w@db/agents?sslmode=disable");
        assert_eq!(plain, "postgresql://app:p?w@db/agents");
        assert_eq!(settings.mode, SslMode::Disable);
    }

    #[test]
    fn require_with_a_root_certificate_checks_the_chain_as_libpq_does() {
        let (_, settings) = split_ok("postgresql://db/a?sslmode=require&sslrootcert=ca.pem");
        assert_eq!(settings.check(), Check::Chain);
        let (_, settings) = split_ok("postgresql://db/a?sslmode=verify-ca&sslrootcert=ca.pem");
        assert_eq!(settings.check(), Check::Chain);
    }

    #[test]
    fn the_system_roots_go_with_verify_full_only() {
        let (_, settings) = split_ok("postgresql://db/a?sslrootcert=system");
        assert_eq!(settings.mode, SslMode::VerifyFull);
        let (_, settings) = split_ok("postgresql://db/a?sslmode=verify-full");
        assert_eq!(settings.root_cert, None);
        for url in [
            "postgresql://db/a?sslmode=require&sslrootcert=system",
            "postgresql://db/a?sslmode=verify-ca&sslrootcert=system",
            "postgresql://db/a?sslmode=verify-ca",
        ] {
            assert!(split(url, "shown").is_err(), "{url}");
        }
    }

    #[test]
    fn an_unknown_mode_is_refused_naming_the_shown_url() {
        let err = split(
            "postgresql://app:secret@db/a?sslmode=strict",
            "postgresql://app:***@db/a",
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("sslmode=strict") && text.contains("app:***@"),
            "{text}"
        );
        assert!(!text.contains("secret"));
    }
}
