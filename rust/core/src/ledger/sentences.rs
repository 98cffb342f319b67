//! Sentences of a message's text, as the ledger reads them: split at line ends and
//! at `.`, `!` or `?` before a space, list markers taken off, code blocks skipped.

/// Longest sentence kept whole, in bytes: a longer one is cut at a word end.
pub(super) const MAX_SENTENCE_BYTES: usize = 320;

/// The sentences of `text`, in order, trimmed; lines inside code fences are skipped
/// (code is not a statement of the user's).
pub(super) fn sentences(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code || trimmed.is_empty() {
            continue;
        }
        split_line(strip_marker(trimmed), &mut found);
    }
    found
}

/// A line without its list marker (`-`, `*`, `•`, `1.`, `2)`) or heading marks.
fn strip_marker(line: &str) -> &str {
    let line = line.trim_start_matches('#').trim_start();
    for marker in ["- ", "* ", "• ", "> "] {
        if let Some(rest) = line.strip_prefix(marker) {
            return rest.trim_start();
        }
    }
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    if (1..=3).contains(&digits) {
        let rest = &line[digits..];
        if let Some(rest) = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")) {
            return rest.trim_start();
        }
    }
    line
}

/// Splits one line at sentence ends: `.`, `!` or `?` followed by a space, unless
/// the `.` ends a short abbreviation ("e.g.", "Dr.", "v2.").
fn split_line<'a>(line: &'a str, found: &mut Vec<&'a str>) {
    let bytes = line.as_bytes();
    let mut start = 0;
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        let ends = matches!(byte, b'.' | b'!' | b'?')
            && bytes.get(at + 1).is_some_and(|next| *next == b' ')
            && !(byte == b'.' && is_abbreviation(&line[start..at]));
        if ends {
            push(&line[start..=at], found);
            start = at + 1;
        }
        at += 1;
    }
    push(&line[start..], found);
}

/// Whether the word before a `.` is an abbreviation rather than a sentence's end.
/// A title ("Ms.", "Dr.", "No. 5") is one only capitalised: "under 200 ms." ends
/// its sentence.
fn is_abbreviation(before: &str) -> bool {
    let word = before.rsplit(' ').next().unwrap_or_default();
    let lower = word.to_ascii_lowercase();
    let title = matches!(lower.as_str(), "mr" | "mrs" | "ms" | "dr" | "st" | "no")
        && word.starts_with(|c: char| c.is_ascii_uppercase());
    title
        || matches!(
            lower.as_str(),
            "e.g" | "i.e" | "etc" | "vs" | "approx" | "incl"
        )
        || (word.len() == 1 && word.bytes().all(|b| b.is_ascii_alphabetic()))
}

fn push<'a>(sentence: &'a str, found: &mut Vec<&'a str>) {
    let sentence = sentence.trim();
    if sentence.len() > 1 {
        found.push(cut(sentence, MAX_SENTENCE_BYTES));
    }
}

/// `text` cut to at most `max` bytes at the end of a word.
pub(super) fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    match text[..end].rfind(' ') {
        Some(space) if space > max / 2 => &text[..space],
        _ => &text[..end],
    }
}
