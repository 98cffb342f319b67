//! Which view items an assembly sends within its budget.
//!
//! The newest user message (the instruction the agent works on) is taken first,
//! then every summary, then the newest history back from the end. When the history
//! does not fit, its oldest messages are left out, never the instruction, and a
//! lead marker takes their place (see [`crate::request`]).
//!
//! The cut is made in steps: the history's messages are grouped by their running
//! token total in runs of a step's size, and a cut only falls where a run starts.
//! A request that left out the history up to such a point keeps leaving out
//! exactly that while the newest messages grow by up to a step, so the front of
//! the request (system message, summaries, instruction, marker, the oldest kept
//! messages) stays the same from turn to turn and a provider's prompt cache keeps
//! serving it. Cutting just enough every turn would move the front on every turn.

use std::borrow::Cow;

use crate::model::{ItemKind, ViewItem};
use crate::parts::Role;
use crate::request;

/// The chosen items of a view for one budget.
pub(crate) struct Selection {
    /// Indices of the chosen view items, ascending.
    pub(crate) chosen: Vec<usize>,
    pub(crate) tokens: i64,
    /// The first item of the unbroken run of newest messages that was chosen (the
    /// view's length when none was): every message before it except the
    /// instruction was left out.
    pub(crate) tail_start: usize,
}

/// Tokens some view items cost in one request beyond their count in the view: the
/// reasoning the current tool loop sends back and the attachments sent inline (see
/// `context/replay.rs`), of the items from `from` on, in view order. Only messages
/// carry any.
#[derive(Clone, Debug, Default)]
pub(crate) struct Surcharge {
    pub(crate) from: usize,
    pub(crate) tokens: Vec<i64>,
    /// The first item a request may send besides the instruction: a provider's
    /// compaction block there stands in for every item before it (see
    /// `context/stand_in.rs`); 0 when none does.
    pub(crate) floor: usize,
}

impl Surcharge {
    /// What the item at `index` costs beyond its count in the view.
    pub(crate) fn at(&self, index: usize) -> i64 {
        index
            .checked_sub(self.from)
            .and_then(|at| self.tokens.get(at))
            .copied()
            .unwrap_or(0)
    }

    /// What the items a request may send cost beyond their count in the view.
    fn total(&self) -> i64 {
        let skipped = self.floor.saturating_sub(self.from).min(self.tokens.len());
        self.tokens[skipped..].iter().sum()
    }
}

/// What share of the history budget one step of a cut is (see the module docs):
/// a cut leaves out up to this much more than it must, and the front then holds
/// while this much more history arrives.
const STEP_DIVISOR: i64 = 4;

/// The step of a cut for a history budget of `budget` tokens: the power of two at
/// or below a quarter of it. A power of two, so that a budget that moves a little
/// from one request to the next (an arena block that grew) keeps the same step,
/// and one that crosses a power keeps every cut point of the larger step.
#[must_use]
pub(crate) fn step_tokens(budget: i64) -> i64 {
    let quarter = (budget / STEP_DIVISOR).max(1);
    1_i64 << (63 - quarter.leading_zeros())
}

/// Index of the newest user message among `items`: the instruction.
pub(crate) fn instruction(items: &[ViewItem]) -> Option<usize> {
    items
        .iter()
        .rposition(|item| item.kind == ItemKind::Message && item.role == Some(Role::User))
}

/// [`select_items_with`] for a request whose items cost what the view counts.
#[cfg(test)]
pub(crate) fn select_items(
    items: &[ViewItem],
    summaries: &[usize],
    totals: (i64, i64),
    budget: i64,
) -> Selection {
    select_items_with(items, summaries, totals, budget, &Surcharge::default())
}

/// Picks view items for `budget`: the instruction first, then the summaries (the
/// newest that fit when not all do), then the history's newest messages, cut in
/// steps (see the module docs). The history's messages are every message but the
/// instruction, in view order; each costs its count in the view and its
/// `surcharge`.
pub(crate) fn select_items_with(
    items: &[ViewItem],
    summaries: &[usize],
    (view_tokens, summary_tokens): (i64, i64),
    budget: i64,
    surcharge: &Surcharge,
) -> Selection {
    let budget = budget.max(0);
    let mut chosen = Vec::new();
    let mut used = 0;
    let floor = surcharge.floor;
    // Summaries before a provider's compaction block are stood in for by it.
    let (summaries, summary_tokens, stood_in): (Cow<'_, [usize]>, i64, i64) = if floor == 0 {
        (Cow::Borrowed(summaries), summary_tokens, 0)
    } else {
        let kept: Vec<usize> = summaries.iter().copied().filter(|&i| i >= floor).collect();
        let tokens = kept.iter().map(|&i| items[i].tokens).sum();
        let before = items[..floor].iter().map(|item| item.tokens).sum();
        (Cow::Owned(kept), tokens, before)
    };
    // The instruction's own attachments sent inline are its surcharge.
    let instruction =
        instruction(items).filter(|&at| items[at].tokens + surcharge.at(at) <= budget);
    if let Some(at) = instruction {
        used += items[at].tokens + surcharge.at(at);
        chosen.push(at);
    }
    if used + summary_tokens <= budget {
        used += summary_tokens;
        chosen.extend_from_slice(&summaries);
    } else {
        for &index in summaries.iter().rev() {
            if used + items[index].tokens <= budget {
                used += items[index].tokens;
                chosen.push(index);
            }
        }
    }
    let history = |index: &usize| {
        *index >= floor && items[*index].kind == ItemKind::Message && Some(*index) != instruction
    };
    // Every item is a summary, the instruction or history; summaries have no
    // surcharge. What a provider's block stands in for is none of them (and its
    // surcharges are not in the total).
    let instruction_cost = match instruction {
        Some(at) if at >= floor => items[at].tokens + surcharge.at(at),
        _ => 0,
    };
    let history_tokens =
        view_tokens - stood_in - summary_tokens - instruction_cost + surcharge.total();
    let cost = |index: usize| items[index].tokens + surcharge.at(index);
    let room = budget - used;
    let cut = if history_tokens <= room {
        0
    } else {
        stepped_cut(
            items.len(),
            history,
            cost,
            history_tokens,
            room,
            step_tokens(budget),
        )
    };
    let mut tail_start = items.len();
    for index in (cut..items.len()).rev() {
        if !history(&index) {
            continue;
        }
        used += cost(index);
        chosen.push(index);
        tail_start = index;
    }
    chosen.sort_unstable();
    Selection {
        chosen,
        tokens: used,
        tail_start,
    }
}

/// Where the history is cut: the first view index (of `len`) whose history
/// messages from there on fit `room`, among the places where a run of `step`
/// tokens starts (counted from the oldest history message); `cost` is what an item
/// costs. Past the last message when none fits.
fn stepped_cut(
    len: usize,
    history: impl Fn(&usize) -> bool,
    cost: impl Fn(usize) -> i64,
    history_tokens: i64,
    room: i64,
    step: i64,
) -> usize {
    // `before` counts the history's tokens older than the message at hand, and
    // `previous` those older than the message before it.
    let (mut before, mut previous) = (0_i64, None::<i64>);
    for index in (0..len).filter(&history) {
        let run_starts = previous.is_none_or(|previous| before / step > previous / step);
        if run_starts && history_tokens - before <= room {
            return index;
        }
        previous = Some(before);
        before += cost(index);
    }
    len
}

/// Picks view items for `budget` with room for a lead marker where one is needed (see
/// [`crate::request`]); with less room than a marker takes, the context opens at its
/// first user message instead. Returns the selection and the marker's position in it.
/// `summaries` are the indices of the summary items in `items`; `totals` the view's
/// tokens and its summaries' (see [`select_items`]).
pub(crate) fn select_with_marker(
    items: &[ViewItem],
    summaries: &[usize],
    totals: (i64, i64),
    budget: i64,
    reserve: i64,
    surcharge: &Surcharge,
) -> (Selection, Option<usize>) {
    let select = |room| select_items_with(items, summaries, totals, room, surcharge);
    let mut selected = select(budget);
    if budget < reserve {
        open_with_user(items, &mut selected, surcharge);
        return (selected, None);
    }
    match request::marker_position(items, &selected.chosen) {
        Some(_) if selected.tokens + reserve > budget => {
            let selected = select(budget - reserve);
            let marker = request::marker_position(items, &selected.chosen);
            (selected, marker)
        }
        marker => (selected, marker),
    }
}

/// Drops the chosen messages before the first chosen user message or summary
/// (system messages may lead), so that the context opens as providers require; with
/// neither chosen, nothing is sendable and nothing is kept.
fn open_with_user(items: &[ViewItem], selected: &mut Selection, surcharge: &Surcharge) {
    let opening = selected.chosen.iter().position(|&index| {
        let item = &items[index];
        item.kind == ItemKind::Summary || item.role == Some(Role::User)
    });
    let Some(end) = opening else {
        selected.chosen.clear();
        selected.tokens = 0;
        selected.tail_start = items.len();
        return;
    };
    let dropped: Vec<usize> = selected.chosen[..end]
        .iter()
        .copied()
        .filter(|&index| items[index].role != Some(Role::System))
        .collect();
    selected.chosen.retain(|index| !dropped.contains(index));
    selected.tokens -= dropped
        .iter()
        .map(|&index| items[index].tokens + surcharge.at(index))
        .sum::<i64>();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(kind: ItemKind, role: Option<Role>, tokens: i64) -> ViewItem {
        ViewItem {
            position: 0,
            kind,
            id: String::new(),
            tokens,
            role,
            seq: 0,
        }
    }

    fn message(role: Role, tokens: i64) -> ViewItem {
        item(ItemKind::Message, Some(role), tokens)
    }

    fn summary(tokens: i64) -> ViewItem {
        item(ItemKind::Summary, None, tokens)
    }

    /// One instruction, then `calls` tool-call messages of `tokens` each.
    /// The view's tokens and its summaries' tokens, as the cached view keeps them.
    fn totals(items: &[ViewItem]) -> (i64, i64) {
        let summaries = items.iter().filter(|item| item.kind == ItemKind::Summary);
        (
            items.iter().map(|item| item.tokens).sum(),
            summaries.map(|item| item.tokens).sum(),
        )
    }

    #[test]
    fn a_provider_s_block_stands_in_for_what_precedes_it() {
        // A summary, an old turn, the instruction, two steps, the block's step, one more.
        let mut items = vec![summary(50), message(Role::Assistant, 40)];
        items.push(message(Role::User, 20));
        items.extend((0..4).map(|_| message(Role::Assistant, 30)));
        let stand_in = Surcharge {
            floor: 5,
            ..Surcharge::default()
        };
        let all = select_items_with(&items, &[0], totals(&items), 1_000, &Surcharge::default());
        assert_eq!(all.chosen, (0..7).collect::<Vec<_>>());
        let from_block = select_items_with(&items, &[0], totals(&items), 1_000, &stand_in);
        // The instruction still goes; the summary and the steps before the block do not.
        assert_eq!(from_block.chosen, [2, 5, 6]);
        assert_eq!(from_block.tokens, 20 + 30 + 30);
        assert_eq!(from_block.tail_start, 5);
        // Within a budget short of even that, the newest go first, as always.
        let tight = select_items_with(&items, &[0], totals(&items), 50, &stand_in);
        assert_eq!(tight.chosen, [2, 6]);
    }

    fn tool_run(calls: usize, tokens: i64) -> Vec<ViewItem> {
        let mut items = vec![message(Role::User, 20)];
        items.extend((0..calls).map(|_| message(Role::Assistant, tokens)));
        items
    }

    #[test]
    fn the_newest_messages_fill_what_the_summaries_leave() {
        let items = vec![
            summary(10),
            message(Role::Assistant, 5),
            message(Role::Assistant, 50),
            message(Role::User, 5),
        ];
        let selection = select_items(&items, &[0], totals(&items), 30);
        assert_eq!(selection.chosen, vec![0, 3]);
        assert_eq!(selection.tokens, 15);
    }

    #[test]
    fn oversized_summaries_keep_the_newest_that_fit() {
        let items = vec![summary(20), summary(20), message(Role::User, 1)];
        let selection = select_items(&items, &[0, 1], totals(&items), 25);
        assert_eq!(selection.chosen, vec![1, 2]);
        assert!(selection.tokens <= 25);
    }

    #[test]
    fn the_instruction_stays_when_a_tool_run_outgrows_the_budget() {
        let items = tool_run(40, 100);
        let selection = select_items(&items, &[], totals(&items), 1_000);
        assert_eq!(selection.chosen[0], 0, "the instruction is kept");
        assert!(selection.tokens <= 1_000);
        assert_eq!(
            *selection.chosen.last().unwrap(),
            40,
            "the newest call is kept"
        );
        let kept = &selection.chosen[1..];
        assert!(
            kept.windows(2).all(|pair| pair[1] == pair[0] + 1),
            "one unbroken tail"
        );
        assert_eq!(selection.tail_start, kept[0]);
    }

    #[test]
    fn the_cut_holds_while_the_newest_messages_grow_by_less_than_a_step() {
        let budget = 2_000;
        let step = step_tokens(budget);
        let mut cuts = Vec::new();
        for calls in 30..80 {
            let items = tool_run(calls, 37);
            let selection = select_items(&items, &[], totals(&items), budget);
            assert!(selection.tokens <= budget);
            cuts.push(selection.tail_start);
        }
        let moves = cuts.windows(2).filter(|pair| pair[0] != pair[1]).count();
        // 50 calls of 37 tokens: without steps the cut would move on every call.
        let expected = (50 * 37 / step + 1) as usize;
        assert!(
            moves <= expected,
            "{moves} moves for a step of {step}: {cuts:?}"
        );
    }

    #[test]
    fn an_instruction_larger_than_the_budget_is_left_out() {
        let items = vec![message(Role::User, 500), message(Role::Assistant, 10)];
        let selection = select_items(&items, &[], totals(&items), 100);
        assert_eq!(selection.chosen, vec![1]);
    }

    #[test]
    fn steps_are_powers_of_two_near_a_quarter_of_the_budget() {
        assert_eq!(step_tokens(16_000), 2_048);
        assert_eq!(step_tokens(16_383), 2_048);
        assert_eq!(step_tokens(1), 1);
        assert_eq!(step_tokens(0), 1);
    }
}
