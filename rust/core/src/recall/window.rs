//! Which of a run of messages fit a token budget, grown from a starting point.
//!
//! Expanding a summary shows a window of its source messages: from the oldest
//! forward, from a cursor forward or backward, or centred on one message. The
//! store loads the messages near the start; this module only does the arithmetic
//! over their stored token counts, and says when the window ran into the edge of
//! what was loaded, so the store can load the neighbouring run and ask again.

/// Which way a window grows from its anchor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Growth {
    /// From the anchor towards newer messages.
    Forward,
    /// From the anchor towards older messages (the anchor is the newest shown).
    Backward,
    /// From the anchor both ways, one newer then one older message in turn.
    Centred,
}

/// The messages `start..end` of the loaded run that fit, and their tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub start: usize,
    pub end: usize,
    pub tokens: i64,
    /// The window stopped at the oldest loaded message, not at the budget.
    pub open_before: bool,
    /// The window stopped at the newest loaded message, not at the budget.
    pub open_after: bool,
}

/// Grows a window over `costs` (tokens per message, oldest first) from `anchor`
/// within `budget`. Each side stops at the first message that does not fit, so
/// a window is always a contiguous run; a centred window keeps growing on one
/// side when the other has stopped. A window the anchor alone overflows is empty.
#[must_use]
pub fn grow(costs: &[i64], anchor: usize, growth: Growth, budget: i64) -> Window {
    let anchor = anchor.min(costs.len().saturating_sub(1));
    let mut window = Window {
        start: anchor,
        end: anchor,
        tokens: 0,
        open_before: false,
        open_after: false,
    };
    if costs.is_empty() || costs[anchor] > budget {
        return window;
    }
    window.end = anchor + 1;
    window.tokens = costs[anchor];
    let (mut older, mut newer) = match growth {
        Growth::Forward => (false, true),
        Growth::Backward => (true, false),
        Growth::Centred => (true, true),
    };
    while older || newer {
        if newer {
            newer = take_newer(costs, &mut window, budget);
        }
        if older {
            older = take_older(costs, &mut window, budget);
        }
    }
    window
}

/// Adds the next newer message if it fits; false once this side has stopped.
fn take_newer(costs: &[i64], window: &mut Window, budget: i64) -> bool {
    let Some(&cost) = costs.get(window.end) else {
        window.open_after = true;
        return false;
    };
    if window.tokens + cost > budget {
        return false;
    }
    window.tokens += cost;
    window.end += 1;
    true
}

/// Adds the next older message if it fits; false once this side has stopped.
fn take_older(costs: &[i64], window: &mut Window, budget: i64) -> bool {
    if window.start == 0 {
        window.open_before = true;
        return false;
    }
    let cost = costs[window.start - 1];
    if window.tokens + cost > budget {
        return false;
    }
    window.tokens += cost;
    window.start -= 1;
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forward_stops_at_the_first_message_that_does_not_fit() {
        let window = grow(&[3, 3, 5, 1], 0, Growth::Forward, 7);
        assert_eq!((window.start, window.end, window.tokens), (0, 2, 6));
        assert!(!window.open_after && !window.open_before);
    }

    #[test]
    fn a_centred_window_alternates_and_goes_on_alone_on_one_side() {
        // Anchor 2 (cost 1): newer 3 takes 1, older 1 takes 1, newer 4 does not
        // fit (9), so older goes on alone: 0 takes 1.
        let window = grow(&[1, 1, 1, 1, 9], 2, Growth::Centred, 5);
        assert_eq!((window.start, window.end, window.tokens), (0, 4, 4));
        assert!(window.open_before);
        assert!(!window.open_after);
    }

    #[test]
    fn backward_ends_at_the_anchor() {
        let window = grow(&[2, 2, 2, 2], 2, Growth::Backward, 4);
        assert_eq!((window.start, window.end), (1, 3));
        let all = grow(&[2, 2, 2, 2], 3, Growth::Backward, 100);
        assert_eq!((all.start, all.end, all.tokens), (0, 4, 8));
        assert!(all.open_before && !all.open_after);
    }

    #[test]
    fn an_anchor_over_the_budget_gives_an_empty_window() {
        let window = grow(&[1, 50, 1], 1, Growth::Centred, 10);
        assert_eq!(window.start, window.end);
        assert_eq!(window.tokens, 0);
        assert_eq!(grow(&[], 0, Growth::Forward, 10).end, 0);
    }

    #[test]
    fn a_window_reaching_the_loaded_edge_says_so() {
        let window = grow(&[1, 1], 0, Growth::Forward, 10);
        assert!(window.open_after);
        let budgeted = grow(&[1, 1, 20], 0, Growth::Forward, 10);
        assert!(!budgeted.open_after);
    }
}
