//! Compaction primitives of the store: the prune scan, level-3 truncation,
//! level-3 condensation and the atomic summary commit, at their edges.

mod support;

use lossless_core::plan::Tail;
use std::collections::HashSet;

use lossless_core::parts::{Role, ToolStatus};
use lossless_core::render::tool_result_text;
use lossless_core::store::{ItemKind, OpenOptions, Store};
use lossless_core::tokens::TokenCounter;
use lossless_core::Error;
use support::{append, file_id, file_ref, raw, temp_store, text, tool, tool_with, words, MODEL};

const NO_TOOLS: &[String] = &[];

fn session(store: &mut Store) -> String {
    store.create_session(MODEL, "{}", None).expect("session")
}

fn counter() -> TokenCounter {
    TokenCounter::new(MODEL, 1.0)
}

/// Output tokens of a completed tool part with `output`, as the store counts them.
fn output_tokens(output: &str) -> i64 {
    let part = lossless_core::parts::ToolCallPart {
        name: "x".into(),
        call_id: "x".into(),
        input: String::new(),
        output: Some(output.into()),
        status: ToolStatus::Completed,
        error: None,
    };
    counter().count(&tool_result_text(&part)) as i64
}

fn compacted_parts(path: &str) -> HashSet<String> {
    let conn = raw(path);
    let mut stmt = conn
        .prepare("SELECT id FROM parts WHERE compacted_at IS NOT NULL")
        .unwrap();
    let rows = stmt.query_map([], |row| row.get::<_, String>(0)).unwrap();
    rows.collect::<rusqlite::Result<_>>().unwrap()
}

/// Part ids of the tool parts of `message_id`.
fn tool_part_ids(store: &Store, message_id: &str) -> Vec<String> {
    let record = store.get_message(message_id).unwrap();
    record
        .parts
        .iter()
        .filter(|part| part.part.kind() == "tool")
        .map(|part| part.id.clone())
        .collect()
}

fn count(path: &str, sql: &str) -> i64 {
    raw(path).query_row(sql, [], |row| row.get(0)).unwrap()
}

fn view_ids(store: &mut Store, session: &str) -> Vec<String> {
    store
        .view_items(session)
        .unwrap()
        .into_iter()
        .map(|item| item.id)
        .collect()
}

/// Everything `history` returns, with the tombstone state left out.
fn history_without_tombstones(store: &mut Store, session: &str) -> Vec<String> {
    store
        .history(session)
        .unwrap()
        .into_iter()
        .map(|record| {
            let parts: Vec<String> = record
                .parts
                .iter()
                .map(|part| format!("{}:{:?}", part.id, part.part))
                .collect();
            format!(
                "{} {} {} {} {:?} {:?}",
                record.id, record.seq, record.role, record.status, record.token_count, parts
            )
        })
        .collect()
}

// -- prune -----------------------------------------------------------------------

/// user, assistant-with-tool, repeated `turns` times; returns the assistant ids.
fn tool_turns(store: &mut Store, session: &str, turns: usize, output_words: usize) -> Vec<String> {
    (0..turns)
        .map(|turn| {
            append(store, session, Role::User, &[text(&format!("turn {turn}"))]);
            append(
                store,
                session,
                Role::Assistant,
                &[
                    text("reading"),
                    tool(
                        "read_file",
                        &format!("c{turn}"),
                        &words(turn as u64, output_words),
                    ),
                ],
            )
        })
        .collect()
}

#[test]
fn prune_protects_the_two_most_recent_user_turns() {
    let (_dir, path, mut store) = temp_store();
    let session = session(&mut store);
    let assistants = tool_turns(&mut store, &session, 5, 400);
    let result = store
        .prune(&session, 0, 0, NO_TOOLS, Tail::user_turns(2))
        .unwrap();
    assert_eq!(result.pruned_parts, 3);
    let pruned = compacted_parts(&path);
    for (turn, id) in assistants.iter().enumerate() {
        let parts = tool_part_ids(&store, id);
        // Turns 3 and 4 start with the two most recent user messages.
        assert_eq!(pruned.contains(&parts[0]), turn < 3, "turn {turn}");
    }
    // Protecting one user turn opens turn 3 too.
    let result = store
        .prune(&session, 0, 0, NO_TOOLS, Tail::user_turns(1))
        .unwrap();
    assert_eq!(result.pruned_parts, 1);
    assert!(compacted_parts(&path).contains(&tool_part_ids(&store, &assistants[3])[0]));
}

#[test]
fn prune_keeps_a_rolling_window_of_the_newest_output() {
    let (_dir, path, mut store) = temp_store();
    let session = session(&mut store);
    let assistants = tool_turns(&mut store, &session, 30, 500);
    let sizes: Vec<i64> = (0..30)
        .map(|turn| output_tokens(&words(turn as u64, 500)))
        .collect();
    let window = 4_000;
    let result = store
        .prune(&session, window, 0, NO_TOOLS, Tail::user_turns(2))
        .unwrap();
    // Newest first, outside the two protected turns: parts are kept while the running
    // total stays within the window; the one that crosses it and all older go.
    let mut total = 0;
    let mut expected = HashSet::new();
    for turn in (0..28).rev() {
        total += sizes[turn];
        if total > window {
            expected.insert(tool_part_ids(&store, &assistants[turn])[0].clone());
        }
    }
    assert!(!expected.is_empty() && expected.len() < 28);
    assert_eq!(compacted_parts(&path), expected);
    assert_eq!(result.pruned_parts as usize, expected.len());
}

#[test]
fn prune_skips_when_it_would_save_less_than_the_minimum() {
    let (_dir, path, mut store) = temp_store();
    let session = session(&mut store);
    tool_turns(&mut store, &session, 10, 300);
    let before = store.view_stats(&session).unwrap();
    let result = store
        .prune(&session, 0, 1_000_000, NO_TOOLS, Tail::user_turns(2))
        .unwrap();
    assert_eq!(result.pruned_parts, 0);
    assert_eq!(result.tokens_saved, 0);
    assert_eq!(result.candidates, 8);
    assert!(compacted_parts(&path).is_empty());
    assert_eq!(
        store.view_stats(&session).unwrap(),
        before,
        "nothing written, not even the version"
    );
    // With a reachable minimum the same scan writes.
    let result = store
        .prune(&session, 0, 1_000, NO_TOOLS, Tail::user_turns(2))
        .unwrap();
    assert_eq!(result.pruned_parts, 8);
    let after = store.view_stats(&session).unwrap();
    assert_eq!(after.tokens, before.tokens - result.tokens_saved);
    assert_eq!(after.version, before.version + 1);
}

#[test]
fn prune_leaves_protected_tools_and_unfinished_calls_alone() {
    let (_dir, path, mut store) = temp_store();
    let session = session(&mut store);
    let big = words(1, 400);
    append(&mut store, &session, Role::User, &[text("go")]);
    let kept = append(
        &mut store,
        &session,
        Role::Assistant,
        &[
            tool("skill", "s1", &big),
            tool_with("read_file", "p1", None, ToolStatus::Pending),
            tool_with("read_file", "r1", None, ToolStatus::Running),
            tool_with("read_file", "e1", Some(&big), ToolStatus::Error),
        ],
    );
    let pruned = append(
        &mut store,
        &session,
        Role::Assistant,
        &[tool("read_file", "ok", &big)],
    );
    tool_turns(&mut store, &session, 2, 10);
    let result = store
        .prune(&session, 0, 0, &["skill".to_string()], Tail::user_turns(2))
        .unwrap();
    assert_eq!(result.pruned_parts, 1);
    assert_eq!(
        compacted_parts(&path),
        tool_part_ids(&store, &pruned).into_iter().collect()
    );
    assert!(tool_part_ids(&store, &kept)
        .iter()
        .all(|id| !compacted_parts(&path).contains(id)));
    // A call completed later becomes prunable.
    store
        .update_tool(&session, "r1", ToolStatus::Completed, Some(&big), None)
        .unwrap();
    assert_eq!(
        store
            .prune(&session, 0, 0, &["skill".to_string()], Tail::user_turns(2))
            .unwrap()
            .pruned_parts,
        1
    );
}

#[test]
fn prune_writes_every_tombstone_in_one_transaction() {
    let (_dir, path, mut store) = temp_store();
    let session = session(&mut store);
    let assistants = tool_turns(&mut store, &session, 8, 300);
    let before = store.view_stats(&session).unwrap();
    let history = history_without_tombstones(&mut store, &session);
    // Fail the fourth tombstone from outside the library.
    let victim = tool_part_ids(&store, &assistants[2])[0].clone();
    raw(&path)
        .execute_batch(&format!(
            "CREATE TRIGGER fail_prune BEFORE UPDATE OF compacted_at ON parts WHEN NEW.id = '{victim}'
             BEGIN SELECT RAISE(ABORT, 'injected failure'); END;"
        ))
        .unwrap();
    assert!(store
        .prune(&session, 0, 0, NO_TOOLS, Tail::user_turns(2))
        .is_err());
    assert!(
        compacted_parts(&path).is_empty(),
        "no tombstone of the failed prune survives"
    );
    assert_eq!(store.view_stats(&session).unwrap(), before);
    raw(&path).execute_batch("DROP TRIGGER fail_prune").unwrap();
    let result = store
        .prune(&session, 0, 0, NO_TOOLS, Tail::user_turns(2))
        .unwrap();
    assert_eq!(result.pruned_parts, 6);
    assert_eq!(
        history_without_tombstones(&mut store, &session),
        history,
        "content is never rewritten"
    );
}

#[test]
fn outputs_left_in_the_view_after_a_summary_stay_prunable() {
    let (_dir, path, mut store) = temp_store();
    let session = session(&mut store);
    let assistants = tool_turns(&mut store, &session, 10, 300);
    let items = view_ids(&mut store, &session);
    // Summarise the first four turns.
    store
        .commit_summary(&session, "the first four turns", 1, &items[..8], &[], None)
        .unwrap();
    let result = store
        .prune(&session, 0, 0, NO_TOOLS, Tail::user_turns(2))
        .unwrap();
    assert_eq!(
        result.pruned_parts, 4,
        "turns 4 to 7 are in the view and unprotected"
    );
    let pruned = compacted_parts(&path);
    for (turn, id) in assistants.iter().enumerate() {
        assert_eq!(
            pruned.contains(&tool_part_ids(&store, id)[0]),
            (4..8).contains(&turn),
            "turn {turn}"
        );
    }
    // Pruned again: nothing left to do.
    assert_eq!(
        store
            .prune(&session, 0, 0, NO_TOOLS, Tail::user_turns(2))
            .unwrap()
            .pruned_parts,
        0
    );
}

#[test]
fn tombstones_keep_file_ids_and_shrink_the_view_exactly() {
    let (_dir, _path, mut store) = temp_store();
    let session = session(&mut store);
    let secret = file_id(7);
    append(&mut store, &session, Role::User, &[text("start")]);
    append(
        &mut store,
        &session,
        Role::Assistant,
        &[tool(
            "read_file",
            "c1",
            &format!("{} mentions {secret}", words(3, 500)),
        )],
    );
    tool_turns(&mut store, &session, 2, 5);
    let before = store.view_stats(&session).unwrap().tokens;
    let result = store
        .prune(&session, 0, 0, NO_TOOLS, Tail::user_turns(2))
        .unwrap();
    assert_eq!(result.pruned_parts, 1);
    let after = store.view_stats(&session).unwrap().tokens;
    assert_eq!(after, before - result.tokens_saved);
    // The stored counts agree with what is rendered now.
    let assembled = store.assemble(&session, 1_000_000).unwrap();
    let rendered: String = assembled
        .messages()
        .filter_map(|message| message.content.clone())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(rendered.contains("pruned from context"));
    assert!(rendered.contains(&secret));
    assert_eq!(assembled.tokens, after);
}

// -- span and transcript -----------------------------------------------------------

#[test]
fn compaction_span_is_everything_before_the_protected_tail() {
    let (_dir, _path, mut store) = temp_store();
    let session = session(&mut store);
    tool_turns(&mut store, &session, 6, 20);
    let items = view_ids(&mut store, &session);
    let span = store
        .compaction_span(&session, Tail::user_turns(2))
        .unwrap();
    assert_eq!(span.message_ids, items[..8].to_vec());
    assert_eq!(span.first_seq, 1);
    assert_eq!(span.last_seq, 8);
    store
        .commit_summary(&session, "early", 1, &items[..4], &[], None)
        .unwrap();
    let span = store
        .compaction_span(&session, Tail::user_turns(2))
        .unwrap();
    assert_eq!(span.message_ids, items[4..8].to_vec());
    assert_eq!(span.summary_ids.len(), 1);
    // Fewer user turns than protected: nothing to summarise.
    assert!(store
        .compaction_span(&session, Tail::user_turns(10))
        .unwrap()
        .message_ids
        .is_empty());
}

#[test]
fn transcript_takes_the_oldest_messages_that_fit() {
    let (_dir, _path, mut store) = temp_store();
    let session = session(&mut store);
    let secret = file_id(9);
    append(
        &mut store,
        &session,
        Role::User,
        &[text(&format!("first, with {secret}"))],
    );
    tool_turns(&mut store, &session, 20, 100);
    let span = store
        .compaction_span(&session, Tail::user_turns(2))
        .unwrap();
    let full = store.transcript(&span.message_ids, None, None).unwrap();
    assert_eq!(full.message_ids, span.message_ids);
    let capped = store
        .transcript(&span.message_ids, None, Some(full.token_count / 3))
        .unwrap();
    assert!(capped.message_ids.len() >= 3 && capped.message_ids.len() < span.message_ids.len());
    assert_eq!(
        capped.message_ids,
        span.message_ids[..capped.message_ids.len()].to_vec()
    );
    assert!(capped.token_count <= full.token_count / 3);
    assert!(capped.text.starts_with("[#1 user]"));
    assert_eq!(capped.file_ids, vec![secret]);
    // At least three messages even when the cap is tiny.
    assert_eq!(
        store
            .transcript(&span.message_ids, None, Some(1))
            .unwrap()
            .message_ids
            .len(),
        3
    );
    // Per-message character cap.
    let short = store.transcript(&span.message_ids, Some(50), None).unwrap();
    assert!(short.token_count < full.token_count);
}

// -- level 3 -----------------------------------------------------------------------

#[test]
fn level3_keeps_the_newest_messages_that_fit_after_a_notice() {
    let (_dir, _path, mut store) = temp_store();
    let session = session(&mut store);
    let ids: Vec<String> = (0..60)
        .map(|index| {
            let role = if index % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            };
            append(
                &mut store,
                &session,
                role,
                &[text(&format!(
                    "message number {index}: {}",
                    words(index, 30)
                ))],
            )
        })
        .collect();
    for target in [120, 300, 700, 1_500] {
        let result = store.truncate_summary(&ids, target).unwrap();
        assert!(
            result.token_count <= target,
            "{} > {target}",
            result.token_count
        );
        assert_eq!(result.token_count, counter().count(&result.text) as i64);
        assert!(result.text.starts_with("[deterministic truncation: the "));
        assert_eq!(result.message_ids, ids);
        let kept: Vec<usize> = (0..60)
            .filter(|index| result.text.contains(&format!("message number {index}:")))
            .collect();
        // The newest ones, without gaps.
        if let Some(&oldest) = kept.first() {
            assert_eq!(kept, (oldest..60).collect::<Vec<_>>());
            assert!(result
                .text
                .contains(&format!("the {oldest} oldest of 60 messages")));
        }
        if target >= 700 {
            assert!(kept.len() > 5);
        }
    }
}

#[test]
fn level3_footer_names_the_file_ids_of_every_input_message() {
    let (_dir, _path, mut store) = temp_store();
    let session = session(&mut store);
    let (in_text, in_output, in_ref) = (file_id(1), file_id(2), file_id(3));
    let mut ids = vec![
        append(
            &mut store,
            &session,
            Role::User,
            &[text(&format!("look at {in_text}"))],
        ),
        append(
            &mut store,
            &session,
            Role::Assistant,
            &[tool("read_file", "c1", &format!("found {in_output}"))],
        ),
        append(
            &mut store,
            &session,
            Role::User,
            &[file_ref(&in_ref, "big.log")],
        ),
    ];
    for index in 0..40 {
        ids.push(append(
            &mut store,
            &session,
            Role::Assistant,
            &[text(&words(index, 80))],
        ));
    }
    let result = store.truncate_summary(&ids, 400).unwrap();
    assert!(
        !result.text.contains("look at"),
        "the oldest message was cut"
    );
    let footer = result.text.rsplit("[LCM File IDs: ").next().unwrap();
    for id in [&in_text, &in_output, &in_ref] {
        assert!(footer.contains(id.as_str()), "{id} missing from {footer}");
        assert!(result.file_ids.contains(id));
    }
    // Even when the footer alone is over the target, it is kept whole.
    let tiny = store.truncate_summary(&ids, 10).unwrap();
    for id in [&in_text, &in_output, &in_ref] {
        assert!(tiny.text.contains(id.as_str()));
    }
}

#[test]
fn level3_cuts_a_huge_message_rather_than_dropping_everything() {
    let (_dir, _path, mut store) = temp_store();
    let session = session(&mut store);
    let ids = vec![
        append(&mut store, &session, Role::User, &[text("small")]),
        append(
            &mut store,
            &session,
            Role::Assistant,
            &[tool("read_file", "c", &words(5, 20_000))],
        ),
    ];
    let result = store.truncate_summary(&ids, 2_000).unwrap();
    assert!(result.token_count <= 2_000);
    assert!(
        result.text.contains("[#2 assistant]"),
        "the huge newest message is kept, cut"
    );
    assert!(result.text.contains("[...]"));
}

#[test]
fn level3_rejects_messages_outside_the_view_and_repeats() {
    let (_dir, _path, mut store) = temp_store();
    let session = session(&mut store);
    tool_turns(&mut store, &session, 4, 10);
    let items = view_ids(&mut store, &session);
    assert!(matches!(
        store.truncate_summary(&[], 100),
        Err(Error::InvalidInput { .. })
    ));
    let twice = vec![items[0].clone(), items[1].clone(), items[0].clone()];
    assert!(matches!(
        store.truncate_summary(&twice, 100),
        Err(Error::InvalidInput { .. })
    ));
    store
        .commit_summary(&session, "gone", 1, &items[..2], &[], None)
        .unwrap();
    assert!(matches!(
        store.truncate_summary(&items[..3], 100),
        Err(Error::InvalidInput { .. })
    ));
    // Out of view order is fine.
    let reversed: Vec<String> = items[2..6].iter().rev().cloned().collect();
    let result = store.truncate_summary(&reversed, 1_000).unwrap();
    assert_eq!(result.message_ids, reversed);
}

// -- condensation ------------------------------------------------------------------

fn leaf_summaries(store: &mut Store, session: &str, count: usize) -> Vec<String> {
    tool_turns(store, session, count * 2 + 2, 10);
    let items = view_ids(store, session);
    (0..count)
        .map(|index| {
            let sources = &items[index * 4..index * 4 + 4];
            let body = format!(
                "summary {index}: {} about {}",
                words(index as u64 + 50, 400),
                file_id(100 + index as u64)
            );
            store
                .commit_summary(session, &body, 1, sources, &[], None)
                .unwrap()
                .summary_id
        })
        .collect()
}

#[test]
fn condense_level3_caps_at_its_limit_and_keeps_every_parent_file_id() {
    let (_dir, _path, mut store) = temp_store();
    let session = session(&mut store);
    let summaries = leaf_summaries(&mut store, &session, 4);
    let result = store.condense_truncate(&summaries, 512).unwrap();
    assert!(result.token_count <= 512, "{}", result.token_count);
    assert_eq!(
        result.text.matches("[LCM File IDs: ").count(),
        1,
        "one footer, the parents' stripped"
    );
    for index in 0..4 {
        assert!(
            result.text.contains(&file_id(100 + index)),
            "file id of parent {index}"
        );
    }
    assert!(result.text.starts_with("summary 0:"));
    // Small inputs are kept whole.
    let small = store.condense_truncate(&summaries[..1], 100_000).unwrap();
    assert!(small.text.contains("summary 0:") && !small.text.contains("[...]"));
}

// -- commit ------------------------------------------------------------------------

#[test]
fn leaf_commit_writes_row_edges_and_view_swap() {
    let (_dir, path, mut store) = temp_store();
    let session = session(&mut store);
    let secret = file_id(11);
    append(
        &mut store,
        &session,
        Role::User,
        &[text(&format!("remember {secret}"))],
    );
    tool_turns(&mut store, &session, 6, 50);
    let items = store.view_items(&session).unwrap();
    let ids: Vec<String> = items.iter().map(|item| item.id.clone()).collect();
    let before = store.view_stats(&session).unwrap();
    let result = store
        .commit_summary(&session, "what happened", 2, &ids[..7], &[], None)
        .unwrap();
    assert_eq!(result.messages_covered, 7);
    assert_eq!(result.file_ids, vec![secret.clone()]);
    let after = store.view_stats(&session).unwrap();
    assert_eq!(after.tokens, result.tokens_after);
    assert_eq!(before.tokens, result.tokens_before);
    assert_eq!(after.version, before.version + 1);
    let view = store.view_items(&session).unwrap();
    assert_eq!(view[0].kind, ItemKind::Summary);
    assert_eq!(view[0].id, result.summary_id);
    assert_eq!(view[0].position, items[0].position);
    assert_eq!(
        view.iter()
            .skip(1)
            .map(|item| item.id.clone())
            .collect::<Vec<_>>(),
        ids[7..].to_vec()
    );
    let row = store.summary(&result.summary_id).unwrap();
    assert_eq!(
        (row.kind.as_str(), row.level, row.message_count, row.depth),
        ("leaf", 2, 7, 0)
    );
    assert_eq!((row.span_start_seq, row.span_end_seq), (1, 7));
    assert!(
        row.text.starts_with("what happened")
            && row.text.ends_with(&format!("[LCM File IDs: {secret}]"))
    );
    let node = store
        .describe(None, Some(&result.summary_id))
        .unwrap()
        .remove(0);
    assert_eq!(node.source_kind, "message");
    assert_eq!(node.sources, ids[..7].to_vec());
    assert_eq!(count(&path, "SELECT count(*) FROM summary_sources"), 7);
}

#[test]
fn condensed_commit_supersedes_its_parents() {
    let (_dir, path, mut store) = temp_store();
    let session = session(&mut store);
    let parents = leaf_summaries(&mut store, &session, 3);
    let covered: i64 = parents
        .iter()
        .map(|id| store.summary(id).unwrap().message_count)
        .sum();
    let condensed = store.condense_truncate(&parents, 512).unwrap();
    let result = store
        .commit_summary(&session, &condensed.text, 3, &[], &parents, None)
        .unwrap();
    assert_eq!(result.messages_covered, covered);
    for parent in &parents {
        assert_eq!(
            store.summary(parent).unwrap().superseded_by.as_deref(),
            Some(result.summary_id.as_str())
        );
    }
    let row = store.summary(&result.summary_id).unwrap();
    assert_eq!(
        (row.kind.as_str(), row.depth, row.level),
        ("condensed", 1, 3)
    );
    let live: Vec<String> = store
        .live_summaries(&session)
        .unwrap()
        .into_iter()
        .map(|row| row.id)
        .collect();
    assert_eq!(live, vec![result.summary_id.clone()]);
    assert_eq!(view_ids(&mut store, &session)[0], result.summary_id);
    assert_eq!(
        count(
            &path,
            &format!(
                "SELECT count(*) FROM summary_sources WHERE summary_id = '{}'",
                result.summary_id
            )
        ),
        3
    );
    // A parent cannot be condensed twice.
    assert!(store
        .commit_summary(&session, "again", 3, &[], &parents[..1], None)
        .is_err());
}

/// Counts of every table a commit writes, and the view.
fn snapshot(store: &mut Store, path: &str, session: &str) -> (Vec<i64>, Vec<String>) {
    let counts = [
        "SELECT count(*) FROM summaries",
        "SELECT count(*) FROM summary_sources",
        "SELECT count(*) FROM summaries WHERE superseded_by IS NOT NULL",
        "SELECT count(*) FROM fts",
        "SELECT view_version FROM sessions",
    ]
    .iter()
    .map(|sql| count(path, sql))
    .collect();
    (counts, view_ids(store, session))
}

#[test]
fn a_failing_commit_changes_nothing() {
    let (_dir, path, mut store) = temp_store();
    let session = session(&mut store);
    let parents = leaf_summaries(&mut store, &session, 2);
    let items = view_ids(&mut store, &session);
    let before = snapshot(&mut store, &path, &session);
    // Fail on the last source leaving the view, after the row, edges and marks were written.
    let last = items[items.len() - 3].clone();
    raw(&path)
        .execute_batch(&format!(
            "CREATE TRIGGER fail_commit BEFORE DELETE ON context_items WHEN OLD.item_id = '{last}'
             BEGIN SELECT RAISE(ABORT, 'injected failure'); END;"
        ))
        .unwrap();
    let sources: Vec<String> = items[2..items.len() - 2].to_vec();
    assert!(store
        .commit_summary(&session, "doomed", 1, &sources, &[], None)
        .is_err());
    assert_eq!(snapshot(&mut store, &path, &session), before);
    raw(&path)
        .execute_batch("DROP TRIGGER fail_commit")
        .unwrap();
    // Likewise for a condensation failing on its edges.
    raw(&path)
        .execute_batch(
            "CREATE TRIGGER fail_edges BEFORE INSERT ON summary_sources WHEN NEW.ord = 1
             BEGIN SELECT RAISE(ABORT, 'injected failure'); END;",
        )
        .unwrap();
    assert!(store
        .commit_summary(&session, "doomed", 3, &[], &parents, None)
        .is_err());
    assert_eq!(snapshot(&mut store, &path, &session), before);
    raw(&path).execute_batch("DROP TRIGGER fail_edges").unwrap();
    store
        .commit_summary(&session, "fine", 3, &[], &parents, None)
        .unwrap();
}

#[test]
fn commit_rejects_bad_sources_and_stale_versions() {
    let (_dir, path, mut store) = temp_store();
    let session = session(&mut store);
    let parents = leaf_summaries(&mut store, &session, 2);
    let items = view_ids(&mut store, &session);
    let messages = &items[2..5];
    let before = snapshot(&mut store, &path, &session);
    let invalid =
        |result: lossless_core::Result<_>| matches!(result, Err(Error::InvalidInput { .. }));
    assert!(invalid(store.commit_summary(
        &session,
        "x",
        1,
        &[],
        &[],
        None
    )));
    assert!(invalid(
        store.commit_summary(&session, "x", 1, messages, &parents, None)
    ));
    assert!(invalid(store.commit_summary(
        &session,
        "x",
        4,
        messages,
        &[],
        None
    )));
    assert!(invalid(store.commit_summary(
        &session,
        "x",
        1,
        &[messages[0].clone(), messages[0].clone()],
        &[],
        None
    )));
    assert!(invalid(store.commit_summary(
        &session,
        "x",
        1,
        &["msg_nope".to_string()],
        &[],
        None
    )));
    let version = store.view_stats(&session).unwrap().version;
    let stale = store.commit_summary(&session, "x", 1, messages, &[], Some(version - 1));
    assert!(matches!(stale, Err(Error::Conflict(_))));
    assert_eq!(snapshot(&mut store, &path, &session), before);
    store
        .commit_summary(&session, "x", 1, messages, &[], Some(version))
        .unwrap();
}

#[test]
fn commit_of_scattered_sources_and_after_another_writer() {
    let (_dir, path, mut store) = temp_store();
    let session = session(&mut store);
    tool_turns(&mut store, &session, 6, 10);
    let items = view_ids(&mut store, &session);
    // Not one run: the message between stays, after the summary.
    let sources = vec![items[0].clone(), items[2].clone(), items[3].clone()];
    let result = store
        .commit_summary(&session, "scattered", 1, &sources, &[], None)
        .unwrap();
    let view = view_ids(&mut store, &session);
    assert_eq!(view[..2], [result.summary_id.clone(), items[1].clone()]);
    assert_eq!(view.len(), items.len() - 2);
    // Another connection appends between this store's reads and its commit.
    let mut other = Store::open(&path, &lossless_core::OpenOptions::default()).unwrap();
    let late = append(&mut other, &session, Role::User, &[text("late")]);
    let result = store
        .commit_summary(&session, "more", 1, &items[4..6], &[], None)
        .unwrap();
    let view = view_ids(&mut store, &session);
    assert!(view.contains(&late) && view.contains(&result.summary_id));
    assert!(!view.contains(&items[4]));
}

#[test]
fn session_file_ids_cover_parts_and_summaries() {
    let (_dir, _path, mut store) = temp_store();
    let session = session(&mut store);
    append(
        &mut store,
        &session,
        Role::User,
        &[
            text(&format!("a {}", file_id(1))),
            file_ref(&file_id(2), "x"),
        ],
    );
    tool_turns(&mut store, &session, 3, 5);
    let items = view_ids(&mut store, &session);
    store
        .commit_summary(
            &session,
            &format!("mentions {}", file_id(3)),
            1,
            &items[..2],
            &[],
            None,
        )
        .unwrap();
    let ids = store.session_file_ids(&session).unwrap();
    assert_eq!(ids.len(), 3);
    for n in 1..=3 {
        assert!(ids.contains(&file_id(n)));
    }
}

#[test]
fn a_large_agent_session_compacts_into_a_valid_view() {
    let (_dir, _path, mut store) = temp_store();
    let session = session(&mut store);
    support::agent_session(&mut store, &session, 600, 10, 42);
    let all_files = store.session_file_ids(&session).unwrap();
    let history = history_without_tombstones(&mut store, &session);
    store
        .prune(&session, 4_000, 1_000, NO_TOOLS, Tail::user_turns(2))
        .unwrap();
    let span = store
        .compaction_span(&session, Tail::user_turns(2))
        .unwrap();
    let l3 = store.truncate_summary(&span.message_ids, 2_000).unwrap();
    store
        .commit_summary(&session, &l3.text, 3, &span.message_ids, &[], None)
        .unwrap();
    support::agent_session(&mut store, &session, 300, 10, 43);
    let span = store
        .compaction_span(&session, Tail::user_turns(2))
        .unwrap();
    let extractive = store.extractive_summary(&span.message_ids, 1_000).unwrap();
    store
        .commit_summary(&session, &extractive.text, 1, &span.message_ids, &[], None)
        .unwrap();
    let live: Vec<String> = store
        .live_summaries(&session)
        .unwrap()
        .into_iter()
        .map(|row| row.id)
        .collect();
    assert_eq!(live.len(), 2);
    let condensed = store.condense_truncate(&live, 512).unwrap();
    store
        .commit_summary(&session, &condensed.text, 3, &[], &live, None)
        .unwrap();
    // Every message is reachable once, every file id is in the view.
    let view = store.view_items(&session).unwrap();
    assert_eq!(
        view.iter()
            .filter(|item| item.kind == ItemKind::Summary)
            .count(),
        1
    );
    let assembled = store.assemble(&session, i64::MAX).unwrap();
    let rendered: String = assembled
        .messages()
        .filter_map(|message| message.content.clone())
        .collect::<Vec<_>>()
        .join("\n");
    for id in store.session_file_ids(&session).unwrap() {
        assert!(rendered.contains(&id), "{id} fell out of the view");
    }
    assert!(all_files.len() > 5);
    let mut reached = HashSet::new();
    let nodes = store.describe(Some(&session), None).unwrap();
    // One node read alone is the node the whole DAG holds, sources included.
    for node in &nodes {
        let alone = store.summary_node(&node.summary.id).unwrap();
        assert_eq!(alone.sources, node.sources);
        assert_eq!(alone.summary.text, node.summary.text);
    }
    let mut stack: Vec<String> = view.iter().map(|item| item.id.clone()).collect();
    while let Some(id) = stack.pop() {
        if let Some(node) = nodes.iter().find(|node| node.summary.id == id) {
            stack.extend(node.sources.iter().cloned());
        } else {
            assert!(reached.insert(id.clone()), "{id} reached twice");
        }
    }
    assert_eq!(reached.len(), 900);
    assert_eq!(
        history_without_tombstones(&mut store, &session)[..600],
        history[..]
    );
}

#[test]
fn unfinished_tool_calls_stay_out_of_summaries() {
    let (_dir, _path, mut store) = temp_store();
    let session = session(&mut store);
    let first = append(&mut store, &session, Role::User, &[text("start")]);
    let slow = append(
        &mut store,
        &session,
        Role::Assistant,
        &[tool_with("read_file", "slow", None, ToolStatus::Running)],
    );
    tool_turns(&mut store, &session, 3, 10);
    let span = store
        .compaction_span(&session, Tail::user_turns(2))
        .unwrap();
    let items = view_ids(&mut store, &session);
    // The running call stays in the view; what is around it can be summarised.
    assert_eq!(
        span.message_ids,
        vec![first.clone(), items[2].clone(), items[3].clone()]
    );
    let refused = store.commit_summary(&session, "x", 3, &items[..4], &[], None);
    assert!(matches!(refused, Err(Error::InvalidInput { reason, .. }) if reason.contains(&slow)));
    let secret = file_id(77);
    store
        .update_tool(
            &session,
            "slow",
            ToolStatus::Completed,
            Some(&format!("wrote {secret}")),
            None,
        )
        .unwrap();
    let span = store
        .compaction_span(&session, Tail::user_turns(2))
        .unwrap();
    assert_eq!(span.message_ids, items[..4].to_vec());
    let result = store
        .commit_summary(&session, "x", 3, &span.message_ids, &[], None)
        .unwrap();
    assert!(result.file_ids.contains(&secret));
}

/// The extractive summaries of `store`'s span at a few budgets, after the oldest
/// `committed` messages were summarised (so the span starts after a summary).
fn extractive_texts(store: &mut Store, committed: usize) -> Vec<(String, Vec<String>)> {
    let session = session(store);
    support::agent_session(store, &session, 3_001, 2, 5);
    let span = store
        .compaction_span(&session, Tail::user_turns(2))
        .unwrap();
    store
        .commit_summary(
            &session,
            "older",
            3,
            &span.message_ids[..committed],
            &[],
            None,
        )
        .unwrap();
    let span = store
        .compaction_span(&session, Tail::user_turns(2))
        .unwrap();
    assert!(span.message_ids.len() > 2_000);
    [300, 2_000, 20_000]
        .into_iter()
        .map(|budget| {
            let summary = store.extractive_summary(&span.message_ids, budget).unwrap();
            assert_eq!(summary.message_ids, span.message_ids);
            (summary.text, summary.file_ids)
        })
        .collect()
}

#[test]
fn a_large_span_summarises_the_same_on_two_connections_as_on_one() {
    // A file store reads the older and newer half of a large span on two connections
    // at once; a private in-memory store cannot open a second one and reads it whole.
    let (_dir, _path, mut on_file) = temp_store();
    let mut in_memory = Store::open(":memory:", &OpenOptions::default()).unwrap();
    for committed in [1, 777] {
        let split = extractive_texts(&mut on_file, committed);
        let whole = extractive_texts(&mut in_memory, committed);
        assert_eq!(split, whole);
        assert!(split.iter().any(|(_, file_ids)| !file_ids.is_empty()));
    }
}

#[test]
fn an_extractive_commit_writes_what_the_two_step_commit_writes() {
    // On a file the writing connection reads part of the span beside its writes and
    // a second connection reads the rest; in memory one connection does it all.
    let (_dir, _path, mut on_file) = temp_store();
    let mut in_memory = Store::open(":memory:", &OpenOptions::default()).unwrap();
    let mut outcomes = Vec::new();
    for store in [&mut on_file, &mut in_memory] {
        let session = session(store);
        support::agent_session(store, &session, 3_001, 2, 9);
        let span = store
            .compaction_span(&session, Tail::user_turns(2))
            .unwrap();
        let two_step = store.extractive_summary(&span.message_ids, 8_000).unwrap();
        let done = store.commit_extractive_summary(&span, 8_000).unwrap();
        assert_eq!(
            (&done.text, done.token_count, &done.file_ids),
            (&two_step.text, two_step.token_count, &two_step.file_ids)
        );
        let committed = done.committed.expect("a summary that fits is committed");
        assert_eq!(committed.messages_covered, span.message_ids.len() as i64);
        let view = store.view_items(&session).unwrap();
        assert_eq!(view[0].id, committed.summary_id);
        assert_eq!(view.len(), 4, "the summary and the protected tail");
        let dag = store.describe(None, Some(&committed.summary_id)).unwrap();
        assert_eq!(dag[0].sources, span.message_ids);
        outcomes.push(done.text);
    }
    assert_eq!(outcomes[0], outcomes[1]);
}

#[test]
fn an_extractive_commit_that_would_not_help_writes_nothing() {
    let (_dir, path, mut store) = temp_store();
    let session = session(&mut store);
    support::agent_session(&mut store, &session, 1_500, 2, 3);
    let span = store
        .compaction_span(&session, Tail::user_turns(2))
        .unwrap();
    let before = store.view_items(&session).unwrap().len();
    // Far too small a budget: the file-id footer alone exceeds it.
    let done = store.commit_extractive_summary(&span, 20).unwrap();
    assert!(done.committed.is_none() && done.token_count > 20);
    assert_eq!(store.view_items(&session).unwrap().len(), before);
    let edges: i64 = raw(&path)
        .query_row("SELECT count(*) FROM summary_sources", [], |row| row.get(0))
        .unwrap();
    assert_eq!(edges, 0);
    assert!(store.live_summaries(&session).unwrap().is_empty());
}

/// The extractive summary of a span holding a message that was streamed: begun
/// after 200 messages, finished after 1,300 more were stored, then four more turns.
fn summary_with_a_late_message(store: &mut Store) -> String {
    let session = session(store);
    support::agent_session(store, &session, 200, 2, 20);
    let streamed = store
        .begin_message(&session, Role::User, None, "test")
        .unwrap();
    support::agent_session(store, &session, 1_300, 2, 21);
    store
        .finish_message(
            &streamed,
            &[text("You must never rewrite the streamed ledger.")],
            true,
            &lossless_core::store::Usage::default(),
        )
        .unwrap();
    for turn in 0..4 {
        let role = if turn % 2 == 0 {
            Role::User
        } else {
            Role::Assistant
        };
        append(store, &session, role, &[text("and then")]);
    }
    let span = store
        .compaction_span(&session, Tail::user_turns(2))
        .unwrap();
    assert!(span.message_ids.contains(&streamed));
    store
        .extractive_summary(&span.message_ids, 20_000)
        .unwrap()
        .text
}

#[test]
fn a_message_finished_late_is_read_where_its_parts_were_stored() {
    // Its parts come after those of every later message in storage order, outside
    // the rows from the span's first part to its last.
    let (_dir, _path, mut on_file) = temp_store();
    let mut in_memory = Store::open(":memory:", &OpenOptions::default()).unwrap();
    let split = summary_with_a_late_message(&mut on_file);
    let whole = summary_with_a_late_message(&mut in_memory);
    assert!(
        split.contains("never rewrite the streamed ledger"),
        "{split}"
    );
    assert_eq!(split, whole);
}

/// A text of about `bytes` bytes mixing one-, two- and four-byte characters, with
/// rule sentences throughout: some before the summariser's cut, some after.
fn long_text(seed: u64, bytes: usize) -> String {
    let mut text = String::new();
    let mut n = seed;
    while text.len() < bytes {
        n = n.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        text.push_str(match n >> 61 {
            0 => "You must never touch the café ledger. ",
            1 => "Résumé of step 🚀 done. ",
            2 => "We found that the parser always fails. ",
            3 => "Next we should fix src/ledger/ünïcode.rs soon. ",
            _ => "plain words with nothing to see here ",
        });
    }
    text
}

#[test]
fn the_store_reads_what_the_summariser_scans_of_each_part() {
    use lossless_core::extractive::{extractive_summary, SourceMessage, SourceTool};
    use lossless_core::parts::{Part, ToolCallPart};

    let (_dir, _path, mut store) = temp_store();
    let session = session(&mut store);
    let mut owned: Vec<(Role, String, Option<ToolCallPart>)> = Vec::new();
    for index in 0..60u64 {
        let role = if index % 2 == 0 {
            Role::User
        } else {
            Role::Assistant
        };
        let body = long_text(index, 500 + (index as usize * 211) % 6_000);
        let call = (role == Role::Assistant).then(|| ToolCallPart {
            name: "read_file".into(),
            call_id: format!("call_{index}"),
            input: format!(
                r#"{{"path": "src/{}/ledger_{index}.rs", "note": "{}"}}"#,
                "é".repeat(index as usize * 40),
                "x".repeat(5_000)
            ),
            output: Some(format!("{}\nsecond line", long_text(index + 7, 3_000))),
            status: if index % 3 == 0 {
                ToolStatus::Error
            } else {
                ToolStatus::Completed
            },
            error: (index % 6 == 0).then(|| long_text(index + 9, 2_000)),
        });
        let mut parts = vec![text(&body)];
        parts.extend(call.clone().map(Part::Tool));
        append(&mut store, &session, role, &parts);
        owned.push((role, body, call));
    }
    let messages: Vec<SourceMessage<'_>> = owned
        .iter()
        .enumerate()
        .map(|(index, (role, body, call))| SourceMessage {
            role: role.as_str(),
            seq: index as i64 + 1,
            texts: vec![body.as_str()],
            tools: call
                .iter()
                .map(|call| SourceTool {
                    name: &call.name,
                    input: &call.input,
                    status: call.status.as_str(),
                    output: (call.status == ToolStatus::Error && call.error.is_none())
                        .then_some(call.output.as_deref())
                        .flatten(),
                    error: call.error.as_deref(),
                })
                .collect(),
            file_refs: Vec::new(),
        })
        .collect();
    let ids: Vec<String> = store
        .view_items(&session)
        .unwrap()
        .into_iter()
        .map(|item| item.id)
        .collect();
    let counter = counter();
    for budget in [200, 1_500, 40_000] {
        let stored = store.extractive_summary(&ids, budget as i64).unwrap();
        let whole = extractive_summary(&messages, budget, &|text| counter.count(text));
        assert_eq!(stored.text, whole, "budget {budget}");
    }
}
