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

/// Where a round aims the view, in percent of the soft limit. Summaries are sized to
/// land there and condensed while the view is above it, so a round frees half the
/// soft limit and the next one starts only after that much new content: a round that
/// aimed just under the limit would run again on nearly every turn.
pub const GOAL_PERCENT: i64 = 50;
/// What a summary costs in the view beyond its text: the header that names it and
/// the message framing (see [`crate::render`]).
pub const SUMMARY_FRAMING_TOKENS: i64 = 48;
/// Below this a summary cannot say anything useful next to its file-id footer.
pub const MIN_SUMMARY_TOKENS: i64 = 128;

/// The limits one compaction round works within: where it aims, what it leaves
/// alone, how much a prune must save and how large a summary may be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoundRules {
    /// Past this many view tokens compaction is due.
    pub soft_limit: i64,
    /// The protected tail; its token bound defaults to an eighth of the soft limit
    /// (see [`RoundRules::default_tail_tokens`]).
    pub tail: Tail,
    /// Output tokens of the newest tool results a prune leaves alone.
    pub prune_protect_tokens: i64,
    /// Tokens below which a prune writes nothing (a tombstone rewrites its row).
    pub prune_minimum_tokens: i64,
    /// Tools whose outputs are never pruned.
    pub protected_tools: Vec<String>,
    /// The largest summary a round writes.
    pub summary_max_tokens: i64,
    /// The most source tokens one leaf summary covers: a longer span is written as
    /// several leaves, so expanding a leaf to its messages stays a modest read.
    pub leaf_chunk_tokens: i64,
}

impl RoundRules {
    /// The default token bound of the protected tail for `soft_limit`: an eighth.
    ///
    /// What a round leaves after its new summary is what the next request must send
    /// anew (a provider caches only the prefix before the first change), so a deep
    /// cut costs less cache per round; and a view that lands well under the goal
    /// leaves room for more turns before the next round and for the summaries to
    /// grow before they are condensed. The newest user message, calls still running
    /// and the newest message stay in the view whatever this bound.
    #[must_use]
    pub fn default_tail_tokens(soft_limit: i64) -> i64 {
        (soft_limit / 8).max(1)
    }

    /// Where the round aims the view.
    #[must_use]
    pub fn goal(&self) -> i64 {
        self.soft_limit * GOAL_PERCENT / 100
    }

    /// Output tokens the prune leaves alone: never more than the tail holds.
    #[must_use]
    pub fn prune_protect(&self) -> i64 {
        self.prune_protect_tokens.min(self.tail.max_tokens)
    }

    /// The least a prune must save, for a view of `before` tokens. When pruning
    /// alone cannot reach the goal, the span is summarised this round anyway, and
    /// tombstoning outputs about to leave the view would be wasted writes.
    #[must_use]
    pub fn prune_minimum(&self, before: i64) -> i64 {
        self.prune_minimum_tokens.max(before - self.goal())
    }

    /// Tokens the summary of a span of `span_tokens` may take, in a view of
    /// `view_tokens` of which `summary_tokens` are summaries.
    ///
    /// It fills what the goal leaves beside the protected tail and the earlier
    /// summaries; when those summaries hold more than half of that room, it gets
    /// half, and the summaries are condensed after it. Either way the view stays
    /// under the soft limit.
    #[must_use]
    pub fn leaf_target(&self, span_tokens: i64, view_tokens: i64, summary_tokens: i64) -> i64 {
        let goal = self.goal();
        let rest = view_tokens - span_tokens;
        let tail = rest - summary_tokens;
        let room = (goal - rest).max((goal - tail).div_euclid(2));
        let room = room.min(self.soft_limit - rest) - SUMMARY_FRAMING_TOKENS;
        self.summary_max_tokens.min(room).max(MIN_SUMMARY_TOKENS)
    }

    /// Whether a summary of `summary_tokens` is worth committing in place of
    /// `covered_tokens` of view: it must cost less, framing included.
    #[must_use]
    pub fn shrinks(summary_tokens: i64, covered_tokens: i64) -> bool {
        summary_tokens + SUMMARY_FRAMING_TOKENS < covered_tokens
    }
}

/// Splits a span's messages (their view tokens, in order) into consecutive runs
/// of at most `max_tokens` each, as even as that allows: `k` runs for a span of
/// `k - 1` to `k` times the bound, each near the span's `k`-th part, rather than full
/// runs and a small remainder. A message larger than the bound is a run of its own.
#[must_use]
pub fn leaf_chunks(message_tokens: &[i64], max_tokens: i64) -> Vec<std::ops::Range<usize>> {
    let max_tokens = max_tokens.max(1);
    let total: i64 = message_tokens.iter().sum();
    if message_tokens.is_empty() {
        return Vec::new();
    }
    let runs = total.div_euclid(max_tokens) + i64::from(total % max_tokens != 0);
    let ideal = total.div_euclid(runs.max(1)).max(1);
    let mut chunks = Vec::new();
    let (mut start, mut held) = (0, 0);
    for (index, &tokens) in message_tokens.iter().enumerate() {
        let over_bound = held + tokens > max_tokens;
        if index > start && (over_bound || held >= ideal) {
            chunks.push(start..index);
            (start, held) = (index, 0);
        }
        held += tokens;
    }
    chunks.push(start..message_tokens.len());
    chunks
}

/// The summary budget of each run of a span of `span_tokens`: `target` shared in
/// proportion to the tokens each run holds, never below [`MIN_SUMMARY_TOKENS`].
#[must_use]
pub fn chunk_target(target: i64, chunk_tokens: i64, span_tokens: i64) -> i64 {
    if span_tokens <= 0 {
        return target.max(MIN_SUMMARY_TOKENS);
    }
    let share = (i128::from(target) * i128::from(chunk_tokens) / i128::from(span_tokens)) as i64;
    share.max(MIN_SUMMARY_TOKENS)
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

    fn rules(soft_limit: i64) -> RoundRules {
        RoundRules {
            soft_limit,
            tail: Tail {
                user_turns: 2,
                max_tokens: RoundRules::default_tail_tokens(soft_limit),
                max_messages: 40,
            },
            prune_protect_tokens: 40_000,
            prune_minimum_tokens: 20_000,
            protected_tools: Vec::new(),
            summary_max_tokens: 4_000,
            leaf_chunk_tokens: 20_000,
        }
    }

    #[test]
    fn a_round_aims_at_half_the_soft_limit_and_protects_no_more_than_the_tail() {
        let small = rules(10_000);
        assert_eq!(small.goal(), 5_000);
        assert_eq!(small.prune_protect(), 1_250);
        assert_eq!(small.prune_minimum(9_000), 20_000);
        assert_eq!(rules(1_000_000).prune_minimum(900_000), 400_000);
    }

    #[test]
    fn a_leaf_fills_the_room_the_goal_leaves_and_never_exceeds_the_soft_limit() {
        let small = rules(10_000);
        // A 6,000-token span in a 9,000-token view without summaries: 3,000 stay,
        // the goal leaves 2,000 for the summary.
        assert_eq!(
            small.leaf_target(6_000, 9_000, 0),
            2_000 - SUMMARY_FRAMING_TOKENS
        );
        // Summaries fill most of the room: the new one gets half of what the tail leaves.
        assert_eq!(
            small.leaf_target(2_000, 9_000, 4_500),
            1_250 - SUMMARY_FRAMING_TOKENS
        );
        // No room at all: the smallest useful summary.
        assert_eq!(small.leaf_target(100, 20_000, 0), MIN_SUMMARY_TOKENS);
        // The configured maximum caps it.
        assert_eq!(rules(100_000).leaf_target(80_000, 90_000, 0), 4_000);
    }

    #[test]
    fn a_summary_must_cost_less_than_what_it_covers_framing_included() {
        assert!(RoundRules::shrinks(100, 100 + SUMMARY_FRAMING_TOKENS + 1));
        assert!(!RoundRules::shrinks(100, 100 + SUMMARY_FRAMING_TOKENS));
    }

    #[test]
    fn a_span_within_the_bound_is_one_run() {
        assert_eq!(leaf_chunks(&[100, 200, 300], 1_000), vec![0..3]);
        assert!(leaf_chunks(&[], 1_000).is_empty());
    }

    #[test]
    fn a_long_span_is_split_into_even_runs_within_the_bound() {
        let tokens = vec![1_000; 50];
        let chunks = leaf_chunks(&tokens, 20_000);
        assert_eq!(chunks.len(), 3);
        for chunk in &chunks {
            let held: i64 = tokens[chunk.clone()].iter().sum();
            assert!(held <= 20_000);
            assert!(held >= 16_000, "{chunk:?} holds {held}");
        }
        // A message over the bound is a run of its own.
        assert_eq!(leaf_chunks(&[10, 5_000, 10], 1_000), vec![0..1, 1..2, 2..3]);
    }

    #[test]
    fn chunk_targets_share_the_target_by_size() {
        assert_eq!(chunk_target(4_000, 10_000, 40_000), 1_000);
        assert_eq!(chunk_target(4_000, 100, 40_000), MIN_SUMMARY_TOKENS);
        assert_eq!(chunk_target(4_000, 0, 0), 4_000);
    }
}
