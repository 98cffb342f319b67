//! What a compaction round may touch: the protected tail of a view and the span
//! that the next summary covers. Pure functions over view items; the store reads
//! the items and writes what a round decides.

use crate::parts::Role;
use crate::store::{ItemKind, ViewItem};

/// How much of the newest history a round leaves alone. The tail ends at the first
/// bound reached, walking back from the newest message; it always holds that one.
///
/// Bounding the tail by tokens and messages (not only by user turns) is what keeps
/// an agent compactable when it runs hundreds of tool calls after one instruction:
/// a tail of "the last two user turns" would then be the whole session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tail {
    /// The newest user turns the tail may reach back to (0: no bound).
    pub user_turns: usize,
    /// Tokens the tail may hold.
    pub max_tokens: i64,
    /// Messages the tail may hold.
    pub max_messages: usize,
}

impl Tail {
    /// A tail bounded by user turns alone.
    #[must_use]
    pub fn user_turns(user_turns: usize) -> Self {
        Self {
            user_turns,
            max_tokens: i64::MAX,
            max_messages: usize::MAX,
        }
    }

    /// Index of the first item of the tail in `items`. A summary ends the walk: what
    /// lies before it was compacted already or is kept for its own reason.
    #[must_use]
    pub fn start(&self, items: &[ViewItem]) -> usize {
        let mut start = items.len();
        let (mut tokens, mut messages, mut user_turns) = (0_i64, 0_usize, 0_usize);
        for (index, item) in items.iter().enumerate().rev() {
            if item.kind == ItemKind::Summary {
                break;
            }
            let full = messages >= self.max_messages
                || tokens.saturating_add(item.tokens) > self.max_tokens;
            if messages > 0 && full {
                break;
            }
            tokens = tokens.saturating_add(item.tokens);
            messages += 1;
            start = index;
            if item.role == Some(Role::User) {
                user_turns += 1;
                if user_turns == self.user_turns {
                    break;
                }
            }
        }
        start
    }
}

/// Indices of the view items the next summary covers: the messages before the tail,
/// except the newest user message (the instruction the agent is working on stays
/// verbatim in the view) and messages for which `unfinished` holds (a tool call
/// still running keeps its call in the view; the rest is summarised around it).
#[must_use]
pub fn span_indices(
    items: &[ViewItem],
    tail: Tail,
    unfinished: impl Fn(&ViewItem) -> bool,
) -> Vec<usize> {
    let start = tail.start(items);
    let instruction = items.iter().rposition(|item| item.role == Some(Role::User));
    (0..start)
        .filter(|&index| {
            let item = &items[index];
            item.kind == ItemKind::Message && Some(index) != instruction && !unfinished(item)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(role: Role, tokens: i64) -> ViewItem {
        ViewItem {
            position: 0,
            kind: ItemKind::Message,
            id: String::new(),
            tokens,
            role: Some(role),
            seq: 0,
        }
    }

    fn summary(tokens: i64) -> ViewItem {
        ViewItem {
            kind: ItemKind::Summary,
            role: None,
            ..message(Role::User, tokens)
        }
    }

    fn tool_run(calls: usize, tokens: i64) -> Vec<ViewItem> {
        let mut items = vec![message(Role::User, 20)];
        items.extend((0..calls).map(|_| message(Role::Assistant, tokens)));
        items
    }

    #[test]
    fn a_tool_run_after_one_instruction_has_a_bounded_tail() {
        let items = tool_run(30, 500);
        let tail = Tail {
            user_turns: 2,
            max_tokens: 1_600,
            max_messages: 40,
        };
        assert_eq!(tail.start(&items), 28);
        let span = span_indices(&items, tail, |_| false);
        assert_eq!(
            span,
            (1..28).collect::<Vec<_>>(),
            "the instruction stays out"
        );
    }

    #[test]
    fn the_newest_message_is_always_in_the_tail() {
        let items = tool_run(3, 5_000);
        let tail = Tail {
            user_turns: 2,
            max_tokens: 100,
            max_messages: 1,
        };
        assert_eq!(tail.start(&items), 3);
    }

    #[test]
    fn the_message_bound_holds() {
        let items = tool_run(10, 1);
        let tail = Tail {
            user_turns: 0,
            max_tokens: i64::MAX,
            max_messages: 4,
        };
        assert_eq!(tail.start(&items), 7);
    }

    #[test]
    fn user_turns_alone_reach_back_to_the_nth_newest_user_message() {
        let mut items = Vec::new();
        for _ in 0..4 {
            items.push(message(Role::User, 10));
            items.push(message(Role::Assistant, 10));
        }
        assert_eq!(Tail::user_turns(2).start(&items), 4);
        assert_eq!(Tail::user_turns(9).start(&items), 0);
    }

    #[test]
    fn a_summary_ends_the_tail() {
        let mut items = vec![summary(100)];
        items.extend(tool_run(2, 10));
        assert_eq!(Tail::user_turns(0).start(&items), 1);
    }

    #[test]
    fn unfinished_calls_stay_and_the_rest_is_summarised_around_them() {
        let mut items = tool_run(6, 100);
        items[2].seq = 7;
        let tail = Tail {
            user_turns: 2,
            max_tokens: 250,
            max_messages: 40,
        };
        let span = span_indices(&items, tail, |item| item.seq == 7);
        assert_eq!(span, vec![1, 3, 4]);
    }

    #[test]
    fn an_older_user_turn_is_summarised_but_the_newest_is_not() {
        let mut items = vec![message(Role::User, 10), message(Role::Assistant, 10)];
        items.extend(tool_run(5, 100));
        let tail = Tail {
            user_turns: 2,
            max_tokens: 150,
            max_messages: 40,
        };
        let span = span_indices(&items, tail, |_| false);
        assert_eq!(span, vec![0, 1, 3, 4, 5, 6]);
    }
}
