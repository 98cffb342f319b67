//! Budget fitting: picks and renders the items that fit the token budget.

use super::{
    Item, Sections, DEFAULT_TOKENS_PER_BYTE, DISPLAY_ORDER, MAX_FIT_ROUNDS, PRIORITY_ORDER,
};

// ---------------------------------------------------------------------------
// Budget fitting
// ---------------------------------------------------------------------------

/// Renders the first `take[k]` items (in keep order) of each section.
fn render(sections: &Sections, take: &[usize; 9]) -> String {
    let mut out = String::new();
    for kind in DISPLAY_ORDER {
        let k = take[kind.index()];
        if k == 0 {
            continue;
        }
        let mut chosen: Vec<&Item> = sections[kind.index()][..k].iter().collect();
        chosen.sort_by_key(|it| it.pos);
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(kind.title());
        for it in chosen {
            out.push('\n');
            if kind.is_list() {
                out.push_str("- ");
            }
            out.push_str(&it.text);
        }
    }
    out
}

/// Picks a priority prefix of the items whose estimated cost fits `target`.
/// Selection stops at the first item that does not fit, so a lower-priority
/// item is never kept in place of a higher-priority one.
fn select(sections: &Sections, tokens_per_byte: f64, target: f64) -> [usize; 9] {
    let mut take = [0usize; 9];
    let mut used = 0.0;
    for kind in PRIORITY_ORDER {
        let items = &sections[kind.index()];
        for (i, it) in items.iter().enumerate() {
            let mut bytes = it.text.len() + 3;
            if i == 0 {
                bytes += kind.title().len() + 2;
            }
            let cost = bytes as f64 * tokens_per_byte;
            if used + cost > target {
                return take;
            }
            used += cost;
            take[kind.index()] = i + 1;
        }
    }
    take
}

pub(super) fn fit(sections: &Sections, max_tokens: usize, count: &dyn Fn(&str) -> usize) -> String {
    let all: [usize; 9] = std::array::from_fn(|i| sections[i].len());
    let full = render(sections, &all);
    let budget = max_tokens as f64;
    let mut rate = DEFAULT_TOKENS_PER_BYTE;
    // Only count the full rendering when it might fit; otherwise the first
    // selection round calibrates the rate on a budget-sized text instead.
    if full.len() as f64 * rate <= 2.0 * budget {
        let n = count(&full);
        if n <= max_tokens {
            return full;
        }
        rate = rate_of(n, &full);
    }
    let mut target = budget;
    let mut last = String::new();
    for _ in 0..MAX_FIT_ROUNDS {
        let take = select(sections, rate, target);
        if take.iter().all(|&k| k == 0) {
            break;
        }
        let out = render(sections, &take);
        let n = count(&out);
        if n <= max_tokens {
            return grow(sections, &take, out, n, max_tokens, count);
        }
        rate = rate_of(n, &out).max(rate);
        target *= 0.97;
        last = out;
    }
    if last.is_empty() {
        last = top_item(sections);
    }
    truncate_to_fit(&last, max_tokens, count)
}

/// After a round that fits with room to spare, tries once more with the
/// rate measured on that round; keeps whichever larger selection fits.
fn grow(
    sections: &Sections,
    take: &[usize; 9],
    out: String,
    n: usize,
    max_tokens: usize,
    count: &dyn Fn(&str) -> usize,
) -> String {
    if (n as f64) >= 0.9 * max_tokens as f64 || n == 0 {
        return out;
    }
    let bigger = select(sections, rate_of(n, &out), max_tokens as f64);
    if bigger.iter().sum::<usize>() <= take.iter().sum::<usize>() {
        return out;
    }
    let candidate = render(sections, &bigger);
    if count(&candidate) <= max_tokens {
        candidate
    } else {
        out
    }
}

pub(super) fn rate_of(tokens: usize, text: &str) -> f64 {
    if text.is_empty() {
        DEFAULT_TOKENS_PER_BYTE
    } else {
        tokens as f64 / text.len() as f64
    }
}

/// The header and first item of the highest-priority non-empty section.
fn top_item(sections: &Sections) -> String {
    let mut take = [0usize; 9];
    if let Some(kind) = PRIORITY_ORDER
        .into_iter()
        .find(|k| !sections[k.index()].is_empty())
    {
        take[kind.index()] = 1;
    }
    render(sections, &take)
}

/// Longest char-boundary prefix of `text` whose count fits, by binary
/// search (about log2(len) calls to `count`).
pub(super) fn truncate_to_fit(
    text: &str,
    max_tokens: usize,
    count: &dyn Fn(&str) -> usize,
) -> String {
    if count(text) <= max_tokens {
        return text.to_owned();
    }
    let (mut lo, mut hi) = (0usize, text.len());
    while hi - lo > 1 {
        let mut mid = lo + (hi - lo) / 2;
        while mid > lo && !text.is_char_boundary(mid) {
            mid -= 1;
        }
        if mid == lo {
            mid = lo + 1;
            while mid < hi && !text.is_char_boundary(mid) {
                mid += 1;
            }
            if mid >= hi {
                break;
            }
        }
        if count(&text[..mid]) <= max_tokens {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let cut = &text[..lo];
    let trimmed = cut.trim_end();
    if trimmed.len() < cut.len() && count(trimmed) <= max_tokens {
        trimmed.to_owned()
    } else {
        cut.to_owned()
    }
}
