//! What a compaction round may touch: the protected tail of a view and the span
//! that the next summary covers. Pure functions over view items; the store reads
//! the items and writes what a round decides.

use crate::model::{ItemKind, ViewItem};
use crate::parts::Role;

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
mod tests;
