//! File ids (`file_` + 8 to 32 hex digits on word boundaries) and summary footers.
use std::collections::HashSet;
use std::sync::LazyLock;

pub const FOOTER_PREFIX: &str = "[LCM File IDs: ";

// Compiled once: building the automaton costs far more than scanning a message.
static FILE_ID: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(r"(?-u:\b)file_[0-9a-fA-F]{8,32}(?-u:\b)").expect("valid pattern"));

#[must_use]
pub fn extract_file_ids(text: &str) -> Vec<String> {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut out: Vec<String> = Vec::new();
    for m in FILE_ID.find_iter(text) {
        if seen.insert(m.as_str()) {
            out.push(m.as_str().to_string());
        }
    }
    out
}

/// `text` without the footer it ends with, if it ends with one. A footer-like block
/// followed by more text, or holding anything but a one-line list, is content.
fn strip_footer(text: &str) -> &str {
    let marker = format!("\n\n{FOOTER_PREFIX}");
    let Some(start) = text.rfind(&marker) else { return text };
    let Some(inside) = text[start + marker.len()..].strip_suffix(']') else { return text };
    if inside.contains(['\n', '[', ']']) {
        return text;
    }
    &text[..start]
}

#[must_use]
pub fn merge_file_id_footer(text: &str, extra: &[String]) -> String {
    let body = strip_footer(text);
    let mut ids = extract_file_ids(text);
    for e in extra {
        if !ids.contains(e) {
            ids.push(e.clone());
        }
    }
    if ids.is_empty() {
        return body.to_string();
    }
    format!("{body}\n\n{FOOTER_PREFIX}{}]", ids.join(", "))
}
