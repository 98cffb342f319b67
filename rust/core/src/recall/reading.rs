//! One stored message written out whole, and cut into pages of a token budget.
//!
//! Unlike the transcript a summariser reads (`render::transcript_entry`), nothing
//! is shortened or replaced: a pruned tool output is shown as stored, and a call's
//! id, status, input, output and error each get their own labelled block.

use std::fmt::Write as _;

use crate::render::StoredPart;
use crate::tokens::TokenCounter;

/// The whole of a message as text: a header line, then each part.
#[must_use]
pub fn full_text(seq: i64, role: &str, status: &str, parts: &[StoredPart]) -> String {
    let mut text = format!("[#{seq} {role}]");
    if status != "complete" {
        let _ = write!(text, " ({status})");
    }
    for (index, stored) in parts.iter().enumerate() {
        let _ = write!(text, "\n[part {} {}]\n", index + 1, stored.id);
        stored
            .part
            .write_full(stored.tombstone.is_some(), &mut text);
    }
    text
}

/// One page of a text: characters `start..end` (counted in characters, as
/// Python indexes strings) and their tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    pub text: String,
    pub start: usize,
    pub end: usize,
    pub tokens: i64,
    pub total_chars: usize,
}

/// Rounds of counting a page may take: each guess is scaled by how far the last
/// count missed, so a few rounds land close below the budget.
const FIT_ROUNDS: usize = 8;

/// The page of `text` that starts at character `start` and holds at most
/// `max_tokens` tokens: the longest prefix found in [`FIT_ROUNDS`] counts, cut at
/// a line or word end when one lies in its last fifth. At least one character
/// when any remain, so paging always moves on.
#[must_use]
pub fn page(text: &str, start: usize, max_tokens: i64, counter: &TokenCounter) -> Page {
    let total_chars = text.chars().count();
    let from = byte_at(text, start);
    let rest = &text[from..];
    let budget = max_tokens.max(1) as usize;
    let whole = counter.count(rest);
    let end_byte = if whole <= budget {
        rest.len()
    } else {
        nice_cut(rest, longest_fit(rest, budget, whole, counter))
    };
    let chosen = &rest[..end_byte];
    let start = start.min(total_chars);
    Page {
        text: chosen.to_string(),
        start,
        end: start + chosen.chars().count(),
        tokens: counter.count(chosen) as i64,
        total_chars,
    }
}

/// The byte length of the longest prefix of `text` found to hold at most `budget`
/// tokens (`whole`, over the budget, is the count of all of it).
fn longest_fit(text: &str, budget: usize, whole: usize, counter: &TokenCounter) -> usize {
    let (mut fits, mut over) = (0_usize, text.len());
    let mut guess = text.len() * budget / whole.max(1);
    for _ in 0..FIT_ROUNDS {
        let len = ceil_boundary(
            text,
            guess.clamp(fits + 1, over.saturating_sub(1).max(fits + 1)),
        );
        if len >= over || len <= fits {
            break;
        }
        let tokens = counter.count(&text[..len]);
        if tokens <= budget {
            fits = len;
        } else {
            over = len;
        }
        // Aim just under the budget, scaled by this count's tokens per byte.
        guess = len * budget * 19 / (tokens.max(1) * 20);
    }
    if fits == 0 {
        // Not even the first guess fits: one character, so paging moves on.
        ceil_boundary(text, 1)
    } else {
        fits
    }
}

/// `len`, moved back to just after a newline or space in the last fifth of the
/// prefix, so a page does not end inside a word.
fn nice_cut(text: &str, len: usize) -> usize {
    let floor = len - len / 5;
    text[..len]
        .rfind('\n')
        .or_else(|| text[..len].rfind(' '))
        .map(|at| at + 1)
        .filter(|at| *at > floor && *at < len)
        .unwrap_or(len)
}

/// The byte offset of character `index` (the end of `text` past its last one).
fn byte_at(text: &str, index: usize) -> usize {
    text.char_indices()
        .nth(index)
        .map_or(text.len(), |(at, _)| at)
}

/// `index` moved forward to a character boundary, at most the length.
fn ceil_boundary(text: &str, mut index: usize) -> usize {
    index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parts::{Part, ToolCallPart, ToolStatus};

    fn counter() -> TokenCounter {
        TokenCounter::new("gpt-4o", 1.0)
    }

    #[test]
    fn every_field_of_a_tool_call_is_written_out() {
        let parts = [
            StoredPart {
                id: "prt_1".into(),
                part: Part::Text("looking".into()),
                tombstone: None,
            },
            StoredPart {
                id: "prt_2".into(),
                part: Part::Tool(ToolCallPart {
                    name: "read_file".into(),
                    call_id: "call_9".into(),
                    input: "{\"path\": \"a.py\"}".into(),
                    output: Some("print(1)".into()),
                    status: ToolStatus::Error,
                    error: Some("exit 2".into()),
                }),
                tombstone: Some("[pruned]".into()),
            },
        ];
        let text = full_text(4, "assistant", "complete", &parts);
        for expected in [
            "[#4 assistant]",
            "[part 2 prt_2]",
            "read_file (id call_9, error), output pruned",
            "input:\n{\"path\": \"a.py\"}",
            "output:\nprint(1)",
            "error:\nexit 2",
        ] {
            assert!(text.contains(expected), "{expected:?} missing from {text}");
        }
    }

    #[test]
    fn pages_cover_the_text_once_within_the_budget() {
        let text = "alpha beta gamma delta é\n".repeat(400);
        let counter = counter();
        let mut start = 0;
        let mut joined = String::new();
        while start < text.chars().count() {
            let page = page(&text, start, 50, &counter);
            assert!(page.tokens <= 50, "{} tokens", page.tokens);
            assert!(page.end > start);
            joined.push_str(&page.text);
            start = page.end;
        }
        assert_eq!(joined, text);
    }

    #[test]
    fn a_short_text_is_one_page() {
        let page = page("hello world", 0, 100, &counter());
        assert_eq!((page.start, page.end, page.total_chars), (0, 11, 11));
        assert_eq!(page.text, "hello world");
        let past = super::page("hello", 9, 100, &counter());
        assert_eq!((past.start, past.end, past.text.as_str()), (5, 5, ""));
    }
}
