//! Cutting an entry to a token budget: its head and its tail are kept, with a marker
//! between them saying how much went. An entry's first lines usually say what it is
//! and its last lines how it ended (a tool's error is at the end of its output), so
//! both ends are real content; a metadata stub in place of the text would not be.

/// Share of the kept tokens that go to the head; the rest go to the tail.
const HEAD_SHARE: f64 = 0.6;

/// Attempts at shrinking the kept ends until the count fits; each attempt scales them
/// by what the last one overshot, so two or three nearly always suffice.
const ATTEMPTS: usize = 8;

/// The marker between the kept head and tail.
#[must_use]
pub fn marker(cut_tokens: usize) -> String {
    format!("\n[… {cut_tokens} tokens cut …]\n")
}

/// `text` cut to at most `budget` tokens as `count` counts them, keeping its head and
/// tail with a [`marker`] between; `None` when not even the marker and a few
/// characters of each end fit. Text that fits comes back whole.
pub fn cut_head_tail(
    text: &str,
    budget: usize,
    count: &dyn Fn(&str) -> usize,
) -> Option<(String, usize)> {
    let total = count(text);
    if total <= budget {
        return Some((text.to_string(), total));
    }
    let bounds: Vec<usize> = text
        .char_indices()
        .map(|(at, _)| at)
        .chain(std::iter::once(text.len()))
        .collect();
    let chars = bounds.len() - 1;
    let marker_tokens = count(&marker(total));
    let room = budget.checked_sub(marker_tokens)?;
    if room < 2 {
        return None;
    }
    let chars_per_token = chars as f64 / total as f64;
    let mut keep = (room as f64 * chars_per_token) as usize;
    for _ in 0..ATTEMPTS {
        if keep < 2 {
            return None;
        }
        let head = ((keep as f64 * HEAD_SHARE) as usize).max(1);
        let tail = keep.saturating_sub(head).max(1);
        if head + tail >= chars {
            keep = chars.saturating_sub(1);
            continue;
        }
        let head_text = &text[..bounds[head]];
        let tail_text = &text[bounds[chars - tail]..];
        let kept = count(head_text) + count(tail_text);
        let candidate = format!(
            "{head_text}{}{tail_text}",
            marker(total.saturating_sub(kept))
        );
        let tokens = count(&candidate);
        if tokens <= budget {
            return Some((candidate, tokens));
        }
        let shrink = budget as f64 / tokens as f64 * 0.95;
        keep = ((keep as f64 * shrink) as usize).min(keep - 1);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> usize {
        text.split_whitespace().count()
    }

    #[test]
    fn text_that_fits_comes_back_whole() {
        let (text, tokens) = cut_head_tail("a b c", 3, &words).unwrap();
        assert_eq!((text.as_str(), tokens), ("a b c", 3));
    }

    #[test]
    fn a_long_text_keeps_both_ends_and_says_how_much_went() {
        let text = (0..400)
            .map(|n| format!("w{n}"))
            .collect::<Vec<_>>()
            .join(" ");
        let (cut, tokens) = cut_head_tail(&text, 60, &words).unwrap();
        assert!(tokens <= 60, "{tokens}");
        assert!(cut.starts_with("w0 w1"), "{cut}");
        assert!(cut.trim_end().ends_with("w399"), "{cut}");
        assert!(cut.contains("tokens cut"), "{cut}");
    }

    #[test]
    fn a_budget_below_the_marker_gives_nothing() {
        let text = (0..400)
            .map(|n| format!("w{n}"))
            .collect::<Vec<_>>()
            .join(" ");
        assert!(cut_head_tail(&text, 4, &words).is_none());
    }

    #[test]
    fn multibyte_text_is_cut_on_character_boundaries() {
        let text = "ä ö ü ß ".repeat(300);
        let (cut, _) = cut_head_tail(&text, 50, &words).unwrap();
        assert!(cut.starts_with('ä'));
    }
}
