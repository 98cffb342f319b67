//! The rules of a round, on numbers: tails, spans, targets and their bounds.

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

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn any_rules() -> impl Strategy<Value = RoundRules> {
        (100_i64..300_000, 1_i64..8_000, 500_i64..40_000).prop_map(
            |(soft_limit, summary_max_tokens, leaf_chunk_tokens)| RoundRules {
                summary_max_tokens,
                leaf_chunk_tokens,
                ..rules(soft_limit)
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// Every run's budget lies between the window's smallest summary and the
        /// largest summary (or that floor, when the maximum is below it).
        #[test]
        fn run_budgets_stay_within_their_bounds(
            rules in any_rules(),
            runs in prop::collection::vec(1_i64..30_000, 0..20),
            rest in 0_i64..200_000,
            summaries in 0_i64..20_000,
        ) {
            let view = runs.iter().sum::<i64>() + rest + summaries;
            let targets = rules.run_targets(&runs, view, summaries);
            prop_assert_eq!(targets.len(), runs.len());
            let ceiling = rules.summary_max_tokens.max(rules.min_summary());
            for target in targets {
                prop_assert!(target >= rules.min_summary() && target <= ceiling);
            }
        }

        /// A condensation never asks for more than half of what it merges, unless
        /// that is below the window's smallest summary.
        #[test]
        fn condensation_makes_progress(
            rules in any_rules(),
            merged in 1_i64..50_000,
            rest in 0_i64..300_000,
        ) {
            let target = rules.condense_target(rest + merged, merged);
            prop_assert!(target <= (merged / 2).max(rules.min_summary()));
            prop_assert!(target >= rules.min_summary());
        }

        /// A round covers at least one message and at most the span; within the
        /// usable budget, all of it.
        #[test]
        fn a_round_covers_some_of_the_span(
            rules in any_rules(),
            span in prop::collection::vec(1_i64..5_000, 1..200),
            rest in 0_i64..100_000,
        ) {
            let view = span.iter().sum::<i64>() + rest;
            let covered = rules.covered_messages(&span, view);
            prop_assert!(covered >= 1 && covered <= span.len());
            if view <= rules.usable {
                prop_assert_eq!(covered, span.len());
            }
        }

        /// The ceiling of a model summary is never below its target, and only
        /// rises above it when the round can condense.
        #[test]
        fn the_ceiling_only_rises_when_condensation_can_follow(
            rules in any_rules(),
            target in 1_i64..10_000,
            input in 1_i64..100_000,
        ) {
            prop_assert_eq!(rules.leaf_ceiling(target, input, false), target);
            let ceiling = rules.leaf_ceiling(target, input, true);
            prop_assert!(ceiling >= target);
            prop_assert!(ceiling <= target.max(rules.summary_max_tokens));
        }
    }
}
