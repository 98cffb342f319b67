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
/// the message framing (see [`crate::render`]). Measured: the header of a summary
/// id and a four-digit message count is 42 tokens, plus the message overhead. It is
/// a real cost in every window, so it does not scale.
pub const SUMMARY_FRAMING_TOKENS: i64 = 48;
/// Below this a summary cannot say anything useful next to its file-id footer, in a
/// window that affords it; smaller windows get a smaller floor (see
/// [`RoundRules::min_summary`]).
pub const MIN_SUMMARY_TOKENS: i64 = 128;
/// The floor of a summary in the smallest windows: a line of goal and a line of
/// state. Below about 512 usable tokens no summary fits beside its framing anyway.
pub const SMALLEST_SUMMARY_TOKENS: i64 = 32;
/// A leaf of a round that can condense afterwards may take this fraction (one part
/// in this many) of its own run, whatever its share of the round's room: a bulk
/// import of 18 runs of 20,000 tokens otherwise gives each run 1/18 of a room that
/// `summary_max_tokens` already capped, about 128 tokens, and a model summary of a
/// few hundred tokens fell to truncation.
pub const LEAF_RUN_DIVISOR: i64 = 10;
/// A model summary at most this fraction (one part in this many) of its input
/// shrinks it well: it is accepted above its nominal target when the round can
/// condense afterwards, rather than replaced by a truncation that keeps less.
pub const WELL_SHRUNK_DIVISOR: i64 = 4;

/// The limits one compaction round works within: where it aims, what it leaves
/// alone, how much a prune must save and how large a summary may be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoundRules {
    /// Past this many view tokens compaction is due.
    pub soft_limit: i64,
    /// The usable budget: a view past it is not the steady state (turns were recorded
    /// faster than rounds summarised them), see [`RoundRules::covered_messages`].
    pub usable: i64,
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
        let room = self.leaf_room(span_tokens, view_tokens, summary_tokens);
        self.summary_max_tokens.min(room).max(self.min_summary())
    }

    /// The text tokens the summaries of a span may take together (see
    /// [`RoundRules::leaf_target`]), not capped by `summary_max_tokens`: a span of
    /// several runs writes one summary per run, each capped on its own.
    fn leaf_room(&self, span_tokens: i64, view_tokens: i64, summary_tokens: i64) -> i64 {
        let goal = self.goal();
        let rest = view_tokens - span_tokens;
        let tail = rest - summary_tokens;
        let room = (goal - rest).max((goal - tail).div_euclid(2));
        room.min(self.soft_limit - rest) - SUMMARY_FRAMING_TOKENS
    }

    /// The smallest summary a round asks for: [`MIN_SUMMARY_TOKENS`], or a quarter of
    /// the goal when that is less (never below [`SMALLEST_SUMMARY_TOKENS`]). A fixed
    /// floor of 128 tokens is most of the goal of a 512-token window, and a view
    /// holding it cannot land under the soft limit.
    #[must_use]
    pub fn min_summary(&self) -> i64 {
        (self.goal() / 4).clamp(SMALLEST_SUMMARY_TOKENS, MIN_SUMMARY_TOKENS)
    }

    /// The summary budget of each run of a span, given the view tokens of the runs
    /// (oldest first), of the whole view and of its summaries.
    ///
    /// One run alone, in a view without summaries, gets the round's target: nothing
    /// could condense it afterwards. Otherwise each run gets its share of the room
    /// the goal leaves, or a [`LEAF_RUN_DIVISOR`]th of its own size when that is
    /// more, within [`RoundRules::min_summary`] and `summary_max_tokens`: the round
    /// aims at its goal, and condensation takes the view the rest of the way.
    #[must_use]
    pub fn run_targets(&self, runs: &[i64], view_tokens: i64, summary_tokens: i64) -> Vec<i64> {
        let span_tokens: i64 = runs.iter().sum();
        if runs.len() < 2 && summary_tokens <= 0 {
            let target = self.leaf_target(span_tokens, view_tokens, summary_tokens);
            return runs.iter().map(|_| target).collect();
        }
        let room = self.leaf_room(span_tokens, view_tokens, summary_tokens);
        runs.iter()
            .map(|&run| {
                let share = if span_tokens > 0 {
                    (i128::from(room.max(0)) * i128::from(run) / i128::from(span_tokens)) as i64
                } else {
                    room
                };
                share
                    .max(run / LEAF_RUN_DIVISOR)
                    .min(self.summary_max_tokens)
                    .max(self.min_summary())
            })
            .collect()
    }

    /// How many of a span's oldest messages (their view tokens, in order) a round
    /// covers in a view of `view_tokens`.
    ///
    /// Within the usable budget, all of them: the round cuts to the protected tail,
    /// as decision 115 chose for the prompt cache (a round starts as a turn crosses
    /// the soft limit, or on demand). A round over a view past the usable budget (a
    /// history recorded at once, faster than rounds could summarise it) aims at the
    /// goal instead of far below it: it
    /// covers the oldest messages until the view, each run's summary counted at
    /// its smallest, would land at the goal, and leaves the newer ones as they are.
    #[must_use]
    pub fn covered_messages(&self, message_tokens: &[i64], view_tokens: i64) -> usize {
        let goal = self.goal();
        if view_tokens <= self.usable.max(goal) {
            return message_tokens.len();
        }
        let chunk = self.leaf_chunk_tokens.max(1);
        // A run's summary at its smallest: the leaves may come out larger, and
        // condensation then takes the view the rest of the way; counting them at
        // their largest left a bulk import at a fifth of its goal when the model
        // wrote short summaries.
        let per_run = self.min_summary() + SUMMARY_FRAMING_TOKENS;
        let mut covered = 0_i64;
        for (count, &tokens) in message_tokens.iter().enumerate() {
            let runs = covered.div_euclid(chunk) + 1;
            if view_tokens - covered + runs * per_run <= goal {
                return count;
            }
            covered += tokens;
        }
        message_tokens.len()
    }

    /// The most text tokens (file-id footer aside) a model's leaf summary of
    /// `input_tokens` may hold when asked for `target`: the target, or, when the
    /// round can condense afterwards, up to a [`WELL_SHRUNK_DIVISOR`]th of its
    /// input (never above `summary_max_tokens`). A summary that shrinks its input
    /// that well keeps far more than a truncation to the target would.
    #[must_use]
    pub fn leaf_ceiling(&self, target: i64, input_tokens: i64, condensable: bool) -> i64 {
        if !condensable {
            return target;
        }
        let well_shrunk = (input_tokens / WELL_SHRUNK_DIVISOR).min(self.summary_max_tokens);
        target.max(well_shrunk)
    }

    /// The text tokens a condensed summary of live summaries holding `merged_tokens`
    /// of a view of `view_tokens` may take: what the goal leaves beside the rest of
    /// the view, at most half of what it merges (each condensation must make
    /// progress) and `summary_max_tokens`, never below [`RoundRules::min_summary`].
    #[must_use]
    pub fn condense_target(&self, view_tokens: i64, merged_tokens: i64) -> i64 {
        let rest = view_tokens - merged_tokens;
        let room = self.goal() - rest - SUMMARY_FRAMING_TOKENS;
        room.min(self.summary_max_tokens)
            .min(merged_tokens / 2)
            .max(self.min_summary())
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
            usable: soft_limit * 5 / 3,
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
    fn the_smallest_summary_scales_down_with_the_window() {
        assert_eq!(rules(100_000).min_summary(), MIN_SUMMARY_TOKENS);
        // 512 usable tokens, a soft limit of 307: a goal of 153.
        assert_eq!(rules(307).min_summary(), SMALLEST_SUMMARY_TOKENS + 6);
        assert_eq!(rules(100).min_summary(), SMALLEST_SUMMARY_TOKENS);
        assert_eq!(rules(307).leaf_target(100, 400, 0), 38);
    }

    #[test]
    fn a_round_past_the_usable_budget_covers_what_the_goal_needs() {
        let small = RoundRules {
            leaf_chunk_tokens: 2_000,
            usable: 7_000,
            ..rules(10_000)
        };
        let span = vec![1_000; 6];
        // Within the usable budget: the whole span, down to the tail.
        assert_eq!(small.covered_messages(&span, 6_500), 6);
        assert_eq!(small.covered_messages(&span, 5_000), 6);
        // 8,000 tokens in view: 3,000 above the goal, and 176 for each run's
        // smallest summary (two runs of 2,000 tokens).
        assert_eq!(small.covered_messages(&span, 8_000), 4);
        // Past the usable budget: the oldest runs down to the goal, not the tail. A
        // view of 60,000 tokens, 50,000 of them the span, in runs of 20,000 at most.
        let large = rules(30_000);
        assert_eq!(large.covered_messages(&vec![1_000; 50], 60_000), 46);
        // Never more than the span holds.
        assert_eq!(small.covered_messages(&span[..2], 9_000), 2);
    }

    #[test]
    fn a_model_summary_that_shrinks_its_input_well_may_pass_its_target() {
        let bulk = rules(66_000);
        assert_eq!(bulk.leaf_ceiling(128, 20_000, true), 4_000);
        assert_eq!(bulk.leaf_ceiling(128, 20_000, false), 128);
        assert_eq!(bulk.leaf_ceiling(128, 400, true), 128);
    }

    #[test]
    fn condensation_aims_at_the_goal_and_halves_at_least() {
        let small = rules(10_000);
        // 2,000 tokens beside the summaries: 2,952 tokens of room.
        assert_eq!(small.condense_target(8_000, 6_000), 2_952);
        assert_eq!(small.condense_target(5_000, 1_000), 500);
        // No room at all: the smallest summary of the window.
        assert_eq!(small.condense_target(20_000, 1_000), small.min_summary());
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
    fn one_run_alone_gets_the_rounds_target() {
        let small = rules(10_000);
        assert_eq!(
            small.run_targets(&[6_000], 9_000, 0),
            vec![small.leaf_target(6_000, 9_000, 0)]
        );
        assert!(small.run_targets(&[], 9_000, 0).is_empty());
    }

    #[test]
    fn runs_share_the_goals_room_or_take_a_part_of_their_own_size() {
        // A bulk import: 18 runs of 19,000 tokens in a view with a soft limit of
        // 66,000; the tail holds 8,000. Each run gets far more than the 128 tokens
        // a shared `summary_max_tokens` left it, and no more than the maximum.
        let bulk = RoundRules {
            summary_max_tokens: 2_048,
            ..rules(66_000)
        };
        let runs = vec![19_000; 18];
        let view = 18 * 19_000 + 8_000;
        for target in bulk.run_targets(&runs, view, 0) {
            assert_eq!(target, 1_900);
        }
        // The room the goal leaves, shared by size, when that is more: a view of
        // 6,000 tokens of which 4,000 are the span leaves 2,952 tokens of room.
        let small = rules(10_000);
        assert_eq!(
            small.run_targets(&[3_000, 1_000], 6_000, 0),
            vec![2_214, 738]
        );
        // A summary already in the view can be condensed with the new leaf: one run
        // takes its own part too.
        assert_eq!(small.run_targets(&[20_000], 29_000, 3_000), vec![2_000]);
    }
}
