//! Placeholder replaced by the full extractor.
pub const FOOTER_PREFIX: &str = "[LCM File IDs: ";

#[must_use]
pub fn extract_file_ids(text: &str) -> Vec<String> {
    let re = regex::Regex::new(r"(?-u:\b)file_[0-9a-fA-F]{8,32}(?-u:\b)").unwrap();
    let mut out: Vec<String> = Vec::new();
    for m in re.find_iter(text) {
        if !out.iter().any(|x| x == m.as_str()) {
            out.push(m.as_str().to_string());
        }
    }
    out
}

#[must_use]
pub fn merge_file_id_footer(text: &str, extra: &[String]) -> String {
    let body = match text.rfind(&format!("\n\n{FOOTER_PREFIX}")) {
        Some(i) if text.ends_with(']') => &text[..i],
        _ => text,
    };
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
