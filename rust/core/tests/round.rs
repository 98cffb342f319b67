//! A compaction round's store work in one call: it ends at the prune when that
//! reaches the goal, commits the built-in summary or a truncation otherwise, and
//! hands the span to a model when one writes the summary.

mod support;

use lossless_core::parts::Role;
use lossless_core::plan::{RoundRules, Tail, MIN_SUMMARY_TOKENS};
use lossless_core::store::{LeafWriter, Store};
use support::{append, file_id, temp_store, text, tool, words, MODEL};

fn rules(soft_limit: i64) -> RoundRules {
    RoundRules {
        soft_limit,
        usable: i64::MAX,
        tail: Tail {
            user_turns: 2,
            max_tokens: RoundRules::default_tail_tokens(soft_limit),
            max_messages: 40,
        },
        prune_protect_tokens: 40_000,
        prune_minimum_tokens: 1,
        protected_tools: Vec::new(),
        summary_max_tokens: 2_000,
        leaf_chunk_tokens: 20_000,
    }
}

/// One instruction, then `calls` tool calls with outputs of `output_words` words.
fn tool_run(store: &mut Store, calls: usize, output_words: usize) -> String {
    let session = store.create_session(MODEL, "{}", None).expect("session");
    append(
        store,
        &session,
        Role::User,
        &[text("Fix the build; never touch vendor/.")],
    );
    for call in 0..calls {
        let output = words(call as u64, output_words);
        let part = tool("run", &format!("c{call}"), &output);
        append(store, &session, Role::Assistant, &[text("running"), part]);
    }
    session
}

fn view_tokens(store: &mut Store, session: &str) -> i64 {
    store.view_stats(session).expect("stats").tokens
}

#[test]
fn a_prune_that_reaches_the_goal_ends_the_round() {
    let (_dir, _path, mut store) = temp_store();
    // Large outputs, short calls: tombstones alone bring the view under a goal of
    // 90% of what it holds.
    let session = tool_run(&mut store, 30, 400);
    let before = view_tokens(&mut store, &session);
    let mut rules = rules(before * 9 / 5);
    rules.prune_protect_tokens = 0;
    let outcome = store
        .compaction_round(&session, &rules, before, LeafWriter::BuiltIn)
        .expect("round");
    assert!(outcome.pruned.pruned_parts > 0);
    assert!(outcome.committed.is_empty() && outcome.span.is_none());
    let after = view_tokens(&mut store, &session);
    assert_eq!(outcome.view_after, Some(after));
    assert!(after <= rules.goal());
    assert_eq!(outcome.saved(), before - after);
}

#[test]
fn the_built_in_summary_is_committed_in_the_same_call() {
    let (_dir, _path, mut store) = temp_store();
    let session = tool_run(&mut store, 30, 40);
    let before = view_tokens(&mut store, &session);
    // A soft limit the prune cannot reach: the span is summarised.
    let rules = rules(before / 2);
    let outcome = store
        .compaction_round(&session, &rules, before, LeafWriter::BuiltIn)
        .expect("round");
    let (commit, level, _) = outcome.committed.first().expect("a summary");
    assert_eq!(*level, 1);
    assert!(outcome.span_messages > 0 && outcome.target <= rules.summary_max_tokens);
    assert!(commit.token_count <= outcome.target + 64);
    let after = view_tokens(&mut store, &session);
    assert_eq!(outcome.view_after, Some(after));
    assert_eq!(outcome.saved(), before - after);
    // The instruction stays verbatim in the view.
    let items = store.view_items(&session).expect("items");
    assert!(items.iter().any(|item| item.role == Some(Role::User)));
}

#[test]
fn a_model_writer_gets_the_span_and_nothing_is_summarised() {
    let (_dir, _path, mut store) = temp_store();
    let session = tool_run(&mut store, 30, 40);
    let before = view_tokens(&mut store, &session);
    let rules = rules(before / 2);
    let outcome = store
        .compaction_round(&session, &rules, before, LeafWriter::Model)
        .expect("round");
    let span = outcome.span.as_ref().expect("the span for the model");
    assert_eq!(span.message_ids.len(), outcome.span_messages);
    assert_eq!(
        outcome.target,
        rules.leaf_target(span.tokens, span.view_tokens, span.summary_tokens)
    );
    assert!(outcome.committed.is_empty() && outcome.view_after.is_none());
    assert!(store.live_summaries(&session).expect("live").is_empty());
}

#[test]
fn truncation_is_committed_when_the_built_in_summary_does_not_fit() {
    let (_dir, _path, mut store) = temp_store();
    let session = store.create_session(MODEL, "{}", None).expect("session");
    append(
        &mut store,
        &session,
        Role::User,
        &[text("Index the files.")],
    );
    // Every output names 8 file ids: the span's footer alone overruns any summary
    // budget the smallest useful summary allows, and only truncation keeps it.
    for call in 0..40_u64 {
        let ids: Vec<String> = (0..8).map(|n| file_id(call * 8 + n)).collect();
        let output = format!("{} {}", words(call, 40), ids.join(" "));
        let part = tool("index", &format!("c{call}"), &output);
        append(
            &mut store,
            &session,
            Role::Assistant,
            &[text("indexing"), part],
        );
    }
    let before = view_tokens(&mut store, &session);
    let mut rules = rules(before / 2);
    rules.summary_max_tokens = MIN_SUMMARY_TOKENS;
    let outcome = store
        .compaction_round(&session, &rules, before, LeafWriter::BuiltIn)
        .expect("round");
    let (commit, level, _) = outcome.committed.first().expect("a summary");
    assert_eq!(*level, 3, "{outcome:?}");
    assert!(outcome.attempts[0].starts_with("extractive:"));
    let summary = store.summary(&commit.summary_id).expect("summary");
    assert!(summary.text.contains(&file_id(0)) && summary.text.contains(&file_id(15)));
    assert!(view_tokens(&mut store, &session) < before);
}

#[test]
fn a_long_span_is_written_as_several_bounded_leaves() {
    let (_dir, _path, mut store) = temp_store();
    let session = tool_run(&mut store, 120, 150);
    let before = view_tokens(&mut store, &session);
    let mut rules = rules(before / 2);
    rules.prune_minimum_tokens = i64::MAX;
    rules.leaf_chunk_tokens = 4_000;
    let outcome = store
        .compaction_round(&session, &rules, before, LeafWriter::BuiltIn)
        .expect("round");
    assert!(
        outcome.committed.len() >= 2,
        "{} leaves",
        outcome.committed.len()
    );
    let covered: usize = outcome
        .committed
        .iter()
        .map(|(_, _, messages)| messages)
        .sum();
    assert_eq!(covered, outcome.span_messages);
    for (commit, _, _) in &outcome.committed {
        // Every leaf expands to sources within the bound (plus one message, which a
        // run may start with).
        let expansion = store.expand(&commit.summary_id, i64::MAX).expect("expand");
        let source: i64 = expansion
            .messages
            .iter()
            .map(|message| message.tokens)
            .sum();
        assert!(source <= 4_000 + 1_000, "a leaf covers {source} tokens");
    }
    assert!(view_tokens(&mut store, &session) < before);
}

#[test]
fn a_prune_that_writes_is_the_rounds_one_change_even_short_of_the_goal() {
    let (_dir, _path, mut store) = temp_store();
    let session = tool_run(&mut store, 30, 400);
    let before = view_tokens(&mut store, &session);
    // The prune alone reaches the goal of the view as it was read...
    let mut rules = rules(before * 9 / 5);
    rules.prune_protect_tokens = 0;
    // ...but a long question arrives before the round runs: the round still ends at
    // the prune, so the view (and a provider's cached prefix) changes once; the next
    // round summarises.
    append(&mut store, &session, Role::User, &[text(&words(7, 20_000))]);
    let outcome = store
        .compaction_round(&session, &rules, before, LeafWriter::BuiltIn)
        .expect("round");
    assert!(outcome.pruned.pruned_parts > 0);
    assert!(outcome.committed.is_empty() && outcome.span.is_none());
    let after = view_tokens(&mut store, &session);
    assert!(after > rules.goal(), "{after} within {}", rules.goal());
    assert_eq!(outcome.view_after, Some(after));
    assert!(store.live_summaries(&session).expect("live").is_empty());
}
