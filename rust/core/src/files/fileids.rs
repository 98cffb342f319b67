//! File ID extraction and the `[LCM File IDs: ...]` footer.
//!
//! A file ID is `file_` followed by 8 to 32 hex digits, delimited by
//! non-word characters (a word character is an ASCII letter, digit or `_`).
//! The scan is linear in the input on every input: `memmem` finds `file_`
//! candidates and each candidate is checked with a bounded hand-written
//! scan, so there is no backtracking.

use std::collections::HashSet;
use std::sync::LazyLock;

use memchr::memmem;

/// Start of the footer line that lists the file IDs of a text.
pub const FOOTER_PREFIX: &str = "[LCM File IDs: ";

/// Separates the body of a text from its footer.
const FOOTER_SEPARATOR: &str = "\n\n";

const ID_PREFIX: &[u8] = b"file_";
const MIN_HEX: usize = 8;
const MAX_HEX: usize = 32;

static ID_FINDER: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(ID_PREFIX));

/// A set of file IDs already seen, for accumulating IDs over many texts.
#[derive(Debug, Clone, Default)]
pub struct IdSet {
    ids: HashSet<String>,
}

impl IdSet {
    /// An empty set.
    #[must_use]
    pub fn new() -> IdSet {
        IdSet::default()
    }

    /// Whether `id` is in the set.
    #[must_use]
    pub fn contains(&self, id: &str) -> bool {
        self.ids.contains(id)
    }

    /// Adds `id`; returns `true` if it was not present.
    pub fn insert(&mut self, id: &str) -> bool {
        // Look up first so that already-seen IDs cost no allocation.
        if self.ids.contains(id) {
            false
        } else {
            self.ids.insert(id.to_owned())
        }
    }

    /// Number of IDs in the set.
    #[must_use]
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the set is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

#[inline]
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Calls `f` with every file ID in `text`, in order, duplicates included.
fn for_each_id<'t>(text: &'t str, mut f: impl FnMut(&'t str)) {
    let bytes = text.as_bytes();
    for start in ID_FINDER.find_iter(bytes) {
        if start > 0 && is_word_byte(bytes[start - 1]) {
            continue;
        }
        let hex_start = start + ID_PREFIX.len();
        // Reading one digit past the maximum is enough: a 33rd hex digit is a
        // word character, which already rules the candidate out.
        let limit = bytes.len().min(hex_start + MAX_HEX + 1);
        let hex_end = bytes[hex_start..limit]
            .iter()
            .position(|b| !b.is_ascii_hexdigit())
            .map_or(limit, |i| hex_start + i);
        let hex_len = hex_end - hex_start;
        if !(MIN_HEX..=MAX_HEX).contains(&hex_len) {
            continue;
        }
        if hex_end < bytes.len() && is_word_byte(bytes[hex_end]) {
            continue;
        }
        // Slicing is safe: all bytes of the match are ASCII.
        f(&text[start..hex_end]);
    }
}

/// Whether `s` is exactly one file ID.
#[must_use]
pub fn is_file_id(s: &str) -> bool {
    let b = s.as_bytes();
    b.starts_with(ID_PREFIX)
        && (MIN_HEX..=MAX_HEX).contains(&(b.len() - ID_PREFIX.len()))
        && b[ID_PREFIX.len()..].iter().all(u8::is_ascii_hexdigit)
}

/// File IDs in `text`, unique, in order of first appearance, as written
/// (IDs differing only in case are distinct).
#[must_use]
pub fn extract_file_ids(text: &str) -> Vec<String> {
    let mut seen = IdSet::new();
    let mut out = Vec::new();
    extract_file_ids_into(text, &mut seen, &mut out);
    out
}

/// Appends to `out` the file IDs of `text` that are not yet in `seen`, in
/// order of first appearance, and records them in `seen`.
pub fn extract_file_ids_into(text: &str, seen: &mut IdSet, out: &mut Vec<String>) {
    for_each_id(text, |id| {
        if seen.insert(id) {
            out.push(id.to_owned());
        }
    });
}

/// Splits `text` into its body and the IDs listed in a trailing footer.
///
/// A footer is `FOOTER_PREFIX`, one or more comma-separated file IDs and
/// `]`, at the very end of the text (trailing whitespace allowed), and either
/// at the start of the text or after a blank line. Returns `None` when the
/// text has no such footer.
fn split_footer(text: &str) -> Option<(&str, Vec<&str>)> {
    let trimmed = text.trim_end();
    let inner = trimmed.strip_suffix(']')?;
    // The ID list cannot contain the prefix, so only the last occurrence
    // can start a footer.
    let at = inner.rfind(FOOTER_PREFIX)?;
    let list = &inner[at + FOOTER_PREFIX.len()..];
    let mut ids = Vec::new();
    for part in list.split(',') {
        let id = part.trim();
        if !is_file_id(id) {
            return None;
        }
        ids.push(id);
    }
    let before = &text[..at];
    let body = if before.is_empty() {
        before
    } else {
        before.strip_suffix(FOOTER_SEPARATOR)?
    };
    Some((body, ids))
}

/// Returns `text` with exactly one footer listing the union of the file IDs
/// in its body, in its existing footer (which is replaced) and in `extra`.
///
/// Order: body IDs in order of appearance, then IDs only in the old footer,
/// then `extra`; duplicates are dropped and entries of `extra` that are not
/// file IDs are ignored. When the union is empty the text has no footer.
/// The function is idempotent: merging the result again with the same or no
/// extra IDs returns it unchanged.
#[must_use]
pub fn merge_file_id_footer(text: &str, extra: &[String]) -> String {
    let (body, old) = match split_footer(text) {
        Some((body, old)) => (body, old),
        None => (text, Vec::new()),
    };
    let mut seen = IdSet::new();
    let mut ids: Vec<String> = Vec::new();
    extract_file_ids_into(body, &mut seen, &mut ids);
    for id in old
        .into_iter()
        .chain(extra.iter().map(String::as_str).filter(|id| is_file_id(id)))
    {
        if seen.insert(id) {
            ids.push(id.to_owned());
        }
    }
    if ids.is_empty() {
        return body.to_owned();
    }
    let list_len: usize = ids.iter().map(|id| id.len() + 2).sum();
    let mut out = String::with_capacity(
        body.len() + FOOTER_SEPARATOR.len() + FOOTER_PREFIX.len() + list_len + 1,
    );
    out.push_str(body);
    out.push_str(FOOTER_SEPARATOR);
    out.push_str(FOOTER_PREFIX);
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(id);
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use regex::Regex;

    fn reference(text: &str) -> Vec<String> {
        static RE: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"(?-u:\b)file_[0-9a-fA-F]{8,32}(?-u:\b)").unwrap());
        let mut out: Vec<String> = Vec::new();
        for m in RE.find_iter(text) {
            if !out.iter().any(|x| x == m.as_str()) {
                out.push(m.as_str().to_owned());
            }
        }
        out
    }

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn boundaries() {
        let h32 = "0123456789abcdef0123456789ABCDEF";
        assert_eq!(extract_file_ids("file_12345678"), ids(&["file_12345678"]));
        assert_eq!(extract_file_ids("file_1234567"), Vec::<String>::new());
        assert_eq!(extract_file_ids(&format!("file_{h32}")).len(), 1);
        assert!(extract_file_ids(&format!("file_{h32}0")).is_empty());
        assert!(extract_file_ids("xfile_12345678").is_empty());
        assert!(extract_file_ids("_file_12345678").is_empty());
        assert!(extract_file_ids("file_12345678g").is_empty());
        assert!(extract_file_ids("file_12345678_").is_empty());
        assert_eq!(
            extract_file_ids("(file_12345678), -file_abcdefAB.\nfile_12345678"),
            ids(&["file_12345678", "file_abcdefAB"])
        );
        assert_eq!(
            extract_file_ids("é file_12345678é"),
            ids(&["file_12345678"])
        );
        assert_eq!(
            extract_file_ids("file_ABCDEF12 file_abcdef12"),
            ids(&["file_ABCDEF12", "file_abcdef12"])
        );
    }

    #[test]
    fn adversarial_inputs() {
        let s = "file_".repeat(200_000);
        assert!(extract_file_ids(&s).is_empty());
        let s = format!("file_{}", "a".repeat(1_000_000));
        assert!(extract_file_ids(&s).is_empty());
        let s = "file_12345678 ".repeat(50_000);
        assert_eq!(extract_file_ids(&s), ids(&["file_12345678"]));
        let s = "file_file_12345678";
        assert!(extract_file_ids(s).is_empty());
        assert_eq!(reference(s), extract_file_ids(s));
    }

    #[test]
    fn accumulate_over_texts() {
        let mut seen = IdSet::new();
        let mut out = Vec::new();
        extract_file_ids_into("a file_11111111 b file_22222222", &mut seen, &mut out);
        extract_file_ids_into("file_22222222 file_33333333", &mut seen, &mut out);
        assert_eq!(
            out,
            ids(&["file_11111111", "file_22222222", "file_33333333"])
        );
        assert_eq!(seen.len(), 3);
        assert!(seen.contains("file_33333333"));
    }

    #[test]
    fn footer_format_and_merge() {
        let t = "see file_aaaaaaaa and file_bbbbbbbb";
        let m = merge_file_id_footer(t, &ids(&["file_cccccccc", "file_aaaaaaaa"]));
        assert_eq!(
            m,
            "see file_aaaaaaaa and file_bbbbbbbb\n\n\
             [LCM File IDs: file_aaaaaaaa, file_bbbbbbbb, file_cccccccc]"
        );
        assert_eq!(merge_file_id_footer(&m, &[]), m);
        let m2 = merge_file_id_footer(&m, &ids(&["file_dddddddd"]));
        assert!(m2.ends_with("file_cccccccc, file_dddddddd]"));
        assert_eq!(m2.matches(FOOTER_PREFIX).count(), 1);
    }

    #[test]
    fn footer_ids_after_body_ids() {
        let t = "body file_22222222\n\n[LCM File IDs: file_11111111, file_22222222]";
        assert_eq!(
            merge_file_id_footer(t, &ids(&["file_33333333"])),
            "body file_22222222\n\n[LCM File IDs: file_22222222, file_11111111, file_33333333]"
        );
    }

    #[test]
    fn no_ids_no_footer() {
        assert_eq!(merge_file_id_footer("plain text", &[]), "plain text");
        assert_eq!(merge_file_id_footer("", &[]), "");
        assert_eq!(
            merge_file_id_footer("x", &ids(&["not-an-id", "file_123"])),
            "x"
        );
        // An empty list is not a footer, so it is left in place.
        let t = "x\n\n[LCM File IDs: ]";
        assert_eq!(merge_file_id_footer(t, &[]), t);
    }

    #[test]
    fn footer_only_text() {
        let t = "[LCM File IDs: file_12345678]";
        let m = merge_file_id_footer(t, &[]);
        assert_eq!(m, "\n\n[LCM File IDs: file_12345678]");
        assert_eq!(merge_file_id_footer(&m, &[]), m);
        let m = merge_file_id_footer("", &ids(&["file_12345678"]));
        assert_eq!(m, "\n\n[LCM File IDs: file_12345678]");
    }

    #[test]
    fn trailing_whitespace_after_footer() {
        let t = "a\n\n[LCM File IDs: file_12345678]\n  ";
        assert_eq!(
            merge_file_id_footer(t, &[]),
            "a\n\n[LCM File IDs: file_12345678]"
        );
    }

    #[test]
    fn footer_needs_blank_line() {
        let t = "a\n[LCM File IDs: file_12345678]";
        let m = merge_file_id_footer(t, &[]);
        assert_eq!(m, format!("{t}\n\n[LCM File IDs: file_12345678]"));
        assert_eq!(merge_file_id_footer(&m, &[]), m);
    }

    fn arb_text() -> impl Strategy<Value = String> {
        let footer = prop::collection::vec(arb_id(), 1..4)
            .prop_map(|ids| format!("\n\n{FOOTER_PREFIX}{}]", ids.join(", ")));
        let piece = prop_oneof![
            3 => arb_id(),
            2 => footer,
            4 => Just("file_".to_owned()),
            2 => Just(FOOTER_PREFIX.to_owned()),
            2 => Just("\n\n".to_owned()),
            1 => Just("]".to_owned()),
            1 => Just(", ".to_owned()),
            8 => "[0-9a-fA-F]{1,12}",
            6 => prop::sample::select(
                "file_0123456789abcdefXYZ _-\n".chars().collect::<Vec<_>>()
            )
            .prop_map(String::from),
            2 => "[ -~]{1,4}",
            1 => Just("é".to_owned()),
        ];
        let footer_at_end = prop::collection::vec(arb_id(), 1..4)
            .prop_map(|ids| format!("\n\n{FOOTER_PREFIX}{}]", ids.join(", ")));
        (
            prop::collection::vec(piece, 0..40),
            prop::option::weighted(0.4, footer_at_end),
            prop::sample::select(vec!["", "", "\n", " \n"]),
        )
            .prop_map(|(body, footer, tail)| {
                let mut text = body.concat();
                if let Some(f) = footer {
                    text.push_str(&f);
                    text.push_str(tail);
                }
                text
            })
    }

    fn arb_id() -> impl Strategy<Value = String> {
        "[0-9a-fA-F]{8,32}".prop_map(|h| format!("file_{h}"))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn matches_regex_reference(text in arb_text()) {
            prop_assert_eq!(extract_file_ids(&text), reference(&text));
        }

        #[test]
        fn matches_regex_reference_ascii(text in "[ -~\n]{0,200}") {
            prop_assert_eq!(extract_file_ids(&text), reference(&text));
        }

        #[test]
        fn merge_is_idempotent(
            text in arb_text(),
            extra in prop::collection::vec(arb_id(), 0..4),
        ) {
            let once = merge_file_id_footer(&text, &extra);
            prop_assert_eq!(&merge_file_id_footer(&once, &extra), &once);
            prop_assert_eq!(&merge_file_id_footer(&once, &[]), &once);
        }

        #[test]
        fn merge_keeps_every_id_once_in_footer(
            text in arb_text(),
            extra in prop::collection::vec(arb_id(), 0..4),
        ) {
            let out = merge_file_id_footer(&text, &extra);
            let found = extract_file_ids(&out);
            let expected: Vec<String> = extract_file_ids(&text)
                .into_iter()
                .chain(extra.iter().cloned())
                .collect();
            for id in &expected {
                prop_assert!(found.contains(id), "{} missing from {:?}", id, out);
            }
            if expected.is_empty() {
                prop_assert_eq!(out, text);
            } else {
                let (_, listed) = split_footer(&out).expect("footer present");
                for id in &expected {
                    prop_assert_eq!(listed.iter().filter(|x| **x == id.as_str()).count(), 1);
                }
                let mut uniq = listed.clone();
                uniq.sort_unstable();
                uniq.dedup();
                prop_assert_eq!(uniq.len(), listed.len());
            }
        }
    }
}
