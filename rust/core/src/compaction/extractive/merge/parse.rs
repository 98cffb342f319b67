//! Reads a summary back into the sections the extractive summariser writes.

use super::super::{SectionKind, DISPLAY_ORDER};
use super::{KEPT_SEPARATOR, KEPT_TITLE};

/// A summary read back: the lines of its sections, in the order they appear
/// (a title may repeat, as in summaries joined by a truncation), and the
/// summaries a merge kept as written, oldest first.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Parsed<'a> {
    pub(super) sections: Vec<(SectionKind, Vec<&'a str>)>,
    pub(super) kept: Vec<&'a str>,
}

impl<'a> Parsed<'a> {
    /// The last line of the last `kind` section that has one.
    pub(super) fn last_line(&self, kind: SectionKind) -> Option<&'a str> {
        self.sections
            .iter()
            .rev()
            .filter(|(k, _)| *k == kind)
            .find_map(|(_, lines)| lines.last().copied())
    }
}

/// `body` read back, or `None` when it is not in the extractive summariser's
/// form: text before its first title, a title it does not write, or a list
/// section with a line that is not an item. Such a summary is kept whole.
pub(super) fn parse(body: &str) -> Option<Parsed<'_>> {
    let body = body.trim();
    let (head, kept) = split_kept(body);
    let mut parsed = Parsed {
        sections: Vec::new(),
        kept: kept
            .split(KEPT_SEPARATOR)
            .map(str::trim)
            .filter(|block| !block.is_empty())
            .collect(),
    };
    for line in head.lines() {
        if line.starts_with("## ") {
            parsed
                .sections
                .push((section_of(line.trim_end())?, Vec::new()));
            continue;
        }
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let (kind, lines) = parsed.sections.last_mut()?;
        if kind.is_list() {
            let item = line.strip_prefix("- ")?.trim_start();
            if !item.is_empty() {
                lines.push(item);
            }
        } else {
            lines.push(line);
        }
    }
    Some(parsed)
}

/// The sections of `body` and what follows the kept summaries' title, which a
/// merge writes last; its text is read as written, headings and all.
fn split_kept(body: &str) -> (&str, &str) {
    let title_line = |at: usize| {
        let rest = &body[at + KEPT_TITLE.len()..];
        rest.is_empty() || rest.starts_with('\n')
    };
    if body.starts_with(KEPT_TITLE) && title_line(0) {
        return ("", &body[KEPT_TITLE.len()..]);
    }
    let marker = format!("\n{KEPT_TITLE}");
    let mut from = 0;
    while let Some(found) = body[from..].find(&marker) {
        let at = from + found + 1;
        if title_line(at) {
            return (&body[..at], &body[at + KEPT_TITLE.len()..]);
        }
        from = at;
    }
    (body, "")
}

fn section_of(title: &str) -> Option<SectionKind> {
    DISPLAY_ORDER.into_iter().find(|kind| kind.title() == title)
}
