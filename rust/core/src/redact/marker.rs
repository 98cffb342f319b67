//! The marker that takes a secret's place, `[redacted:<kind>:<fingerprint>]`, and
//! the keyed fingerprint in it.

use std::ops::Range;

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// How a marker starts.
pub(crate) const MARKER_START: &str = "[redacted:";

/// Hex digits of the fingerprint: 32 bits tell the secrets of one database apart
/// well enough to follow one across messages, and are too few to confirm a guess
/// of a long secret.
const FINGERPRINT_DIGITS: usize = 8;

/// HMAC-SHA256 keyed with the database's key, so that a short secret cannot be
/// confirmed by hashing guesses without the key. The keyed state is computed once
/// and cloned for each secret.
#[derive(Clone)]
pub(crate) struct Fingerprinter {
    keyed: Hmac<Sha256>,
}

impl Fingerprinter {
    /// Keys the fingerprints with `key`.
    pub(crate) fn new(key: &[u8; 32]) -> Self {
        Self {
            keyed: Hmac::new_from_slice(key).expect("HMAC takes a key of any length"),
        }
    }

    /// Appends the marker of `secret`, of kind `kind`, to `out`.
    pub(crate) fn write_marker(&self, out: &mut String, kind: &str, secret: &[u8]) {
        let mut mac = self.keyed.clone();
        mac.update(secret);
        let digest = mac.finalize().into_bytes();
        out.push_str(MARKER_START);
        out.push_str(kind);
        out.push(':');
        for byte in &digest[..FINGERPRINT_DIGITS / 2] {
            out.push(hex_digit(byte >> 4));
            out.push(hex_digit(byte & 0xf));
        }
        out.push(']');
    }
}

fn hex_digit(nibble: u8) -> char {
    char::from_digit(u32::from(nibble), 16).expect("a nibble is a hex digit")
}

/// Whether `kind` is a lowercase slug: ASCII letters and digits in words joined by
/// single hyphens, as a marker names it.
pub(crate) fn is_kind_slug(kind: &str) -> bool {
    !kind.is_empty()
        && kind
            .split('-')
            .all(|word| !word.is_empty() && word.bytes().all(is_slug_byte))
}

fn is_slug_byte(byte: u8) -> bool {
    byte.is_ascii_lowercase() || byte.is_ascii_digit()
}

/// The spans of the markers in `text`, in order. No rule may redact a secret that
/// overlaps one, which keeps redaction idempotent and a marker whole.
pub(crate) fn marker_spans(text: &str) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    memchr::memmem::find_iter(bytes, MARKER_START)
        .filter_map(|start| marker_len(&bytes[start..]).map(|len| start..start + len))
        .collect()
}

/// The length of the marker at the start of `bytes`, if one is there.
fn marker_len(bytes: &[u8]) -> Option<usize> {
    let rest = &bytes[MARKER_START.len()..];
    let kind = rest.iter().position(|&b| !(is_slug_byte(b) || b == b'-'))?;
    let kind_text = std::str::from_utf8(&rest[..kind]).ok()?;
    let tail = rest.get(kind..kind + FINGERPRINT_DIGITS + 2)?;
    let fingerprint = &tail[1..=FINGERPRINT_DIGITS];
    let well_formed = is_kind_slug(kind_text)
        && tail[0] == b':'
        && fingerprint
            .iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
        && tail[FINGERPRINT_DIGITS + 1] == b']';
    well_formed.then_some(MARKER_START.len() + kind + FINGERPRINT_DIGITS + 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_is_found_where_it_is_well_formed() {
        let fp = Fingerprinter::new(&[7; 32]);
        let mut text = String::from("a ");
        fp.write_marker(&mut text, "github-token", b"ghp_x");
        let end = text.len();
        text.push_str(" [redacted:Bad:0123abcd] [redacted:jwt:0123abc] [redacted:x-:01234567]");
        assert_eq!(marker_spans(&text), vec![2..end]);
        assert_eq!(end - 2, "[redacted:github-token:".len() + 9);
    }

    #[test]
    fn kinds_are_slugs() {
        for good in ["jwt", "aws-access-key-id", "x1-y2"] {
            assert!(is_kind_slug(good), "{good}");
        }
        for bad in ["", "-a", "a-", "a--b", "A", "a_b", "a b", "a:b", "é"] {
            assert!(!is_kind_slug(bad), "{bad}");
        }
    }
}
