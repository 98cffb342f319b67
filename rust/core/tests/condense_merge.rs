//! Condensation by merging sections, at the store's edge: built-in leaf
//! summaries merged within a budget, the newest kept, every file id in the
//! footer, erased text never read back; and, for any summaries and budget, a
//! result within the budget whenever the footer is.

mod support;

use lossless_core::erasure::Target;
use lossless_core::parts::Role;
use lossless_core::store::Store;
use lossless_core::tokens::TokenCounter;
use lossless_core::Error;
use proptest::prelude::*;
use support::{append, file_id, file_ref, temp_store, text, tool, words, MODEL};

fn session(store: &mut Store) -> String {
    store.create_session(MODEL, "{}", None).expect("session")
}

fn count(text: &str) -> i64 {
    TokenCounter::new(MODEL, 1.0).count(text) as i64
}

/// `leaves` built-in leaf summaries of three messages each, oldest first: leaf
/// `n` asks "step n", names a file id of its own and finds "cause n".
fn extractive_leaves(store: &mut Store, session: &str, leaves: usize) -> Vec<String> {
    (0..leaves)
        .map(|leaf| {
            let request = format!(
                "Step {leaf}: settle the batch for merchant {leaf}. Never round minor units in step {leaf}."
            );
            let messages = vec![
                append(
                    store,
                    session,
                    Role::User,
                    &[
                        text(&request),
                        file_ref(&file_id(leaf as u64), &format!("logs/step-{leaf}.log")),
                    ],
                ),
                append(
                    store,
                    session,
                    Role::Assistant,
                    &[
                        text("Reading the ledger."),
                        tool("read_file", &format!("c{leaf}"), &words(leaf as u64, 200)),
                    ],
                ),
                append(
                    store,
                    session,
                    Role::Assistant,
                    &[text(&format!(
                        "I found that cause {leaf} is the payout schedule in module_{leaf}."
                    ))],
                ),
            ];
            let summary = store.extractive_summary(&messages, 400).unwrap();
            store
                .commit_summary(session, &summary.text, 1, &messages, &[], None)
                .unwrap()
                .summary_id
        })
        .collect()
}

#[test]
fn a_merge_keeps_the_newest_within_its_budget_and_every_file_id() {
    let (_dir, _path, mut store) = temp_store();
    let session = session(&mut store);
    let leaves = extractive_leaves(&mut store, &session, 8);
    let merged = store.condense_merge(&leaves, 520).unwrap();
    assert!(merged.token_count <= 520, "{}", merged.token_count);
    assert_eq!(merged.token_count, count(&merged.text));
    assert_eq!(merged.text.matches("[LCM File IDs: ").count(), 1);
    for leaf in 0..8 {
        assert!(
            merged.text.contains(&file_id(leaf)),
            "file id of leaf {leaf}"
        );
    }
    assert!(merged.text.contains("cause 7"), "{}", merged.text);
    assert!(!merged.text.contains("cause 0"), "{}", merged.text);
    // The first instruction stays next to the newest.
    assert!(
        merged.text.starts_with("## Goal\nStep 0:"),
        "{}",
        merged.text
    );
    assert!(merged.text.contains("\nStep 7:"), "{}", merged.text);
    assert_eq!(
        merged.text,
        store.condense_merge(&leaves, 520).unwrap().text
    );
}

#[test]
fn a_footer_larger_than_the_budget_is_kept_alone() {
    let (_dir, _path, mut store) = temp_store();
    let session = session(&mut store);
    let leaves = extractive_leaves(&mut store, &session, 4);
    let merged = store.condense_merge(&leaves, 5).unwrap();
    assert!(
        merged.text.trim_start().starts_with("[LCM File IDs: "),
        "{}",
        merged.text
    );
    for leaf in 0..4 {
        assert!(merged.text.contains(&file_id(leaf)));
    }
}

#[test]
fn a_merge_names_summaries_of_one_session() {
    let (_dir, _path, mut store) = temp_store();
    let first = session(&mut store);
    let second = session(&mut store);
    let mut leaves = extractive_leaves(&mut store, &first, 1);
    leaves.extend(extractive_leaves(&mut store, &second, 1));
    assert!(matches!(
        store.condense_merge(&[], 100),
        Err(Error::InvalidInput { .. })
    ));
    assert!(matches!(
        store.condense_merge(&leaves, 100),
        Err(Error::InvalidInput { .. })
    ));
}

#[test]
fn an_erased_summary_is_merged_as_its_marker() {
    let (_dir, _path, mut store) = temp_store();
    let session = session(&mut store);
    let leaves = extractive_leaves(&mut store, &session, 3);
    let view = store.view_items(&session).unwrap();
    let first_leaf = store.expand(&leaves[1], 100_000).unwrap().messages;
    assert!(!view.is_empty() && !first_leaf.is_empty());
    store
        .erase(
            &Target::Message(first_leaf[0].id.clone()),
            "tester",
            "request",
        )
        .unwrap();
    let merged = store.condense_merge(&leaves, 2_000).unwrap();
    assert!(merged.text.contains("[erased]"), "{}", merged.text);
    assert!(!merged.text.contains("Step 1:"), "{}", merged.text);
    assert!(merged.text.contains("Step 2:") && merged.text.contains("cause 2"));
}

fn summary_text() -> impl Strategy<Value = String> {
    prop_oneof![
        (0_u64..40, 1_usize..300).prop_map(|(seed, n)| words(seed, n)),
        (0_u64..40).prop_map(|n| format!(
            "## Goal\nfix {}\n\n## Discoveries\n- found {}\n- see {}",
            words(n, 8),
            words(n + 1, 30),
            file_id(n)
        )),
        "\\PC{0,300}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn a_merge_fits_whenever_its_footer_does(
        texts in prop::collection::vec(summary_text(), 1..9),
        max_tokens in 1_i64..1_200,
    ) {
        let (_dir, _path, mut store) = temp_store();
        let session = session(&mut store);
        let mut leaves = Vec::new();
        for (index, body) in texts.iter().enumerate() {
            let body = if body.trim().is_empty() { "x" } else { body.as_str() };
            let message = append(
                &mut store,
                &session,
                Role::User,
                &[text(&format!("turn {index} about {}", file_id(100 + index as u64)))],
            );
            let committed = store.commit_summary(&session, body, 1, &[message], &[], None).unwrap();
            leaves.push(committed.summary_id);
        }
        let merged = store.condense_merge(&leaves, max_tokens).unwrap();
        prop_assert_eq!(merged.token_count, count(&merged.text));
        let footer = lossless_core::parts::merge_reference_footer("", &merged.file_ids);
        if count(&footer) <= max_tokens {
            prop_assert!(merged.token_count <= max_tokens, "{}", merged.text);
        }
        for index in 0..texts.len() {
            prop_assert!(merged.text.contains(&file_id(100 + index as u64)));
        }
    }
}
