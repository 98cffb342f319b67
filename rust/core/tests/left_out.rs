//! When assembly has to leave view items out (compaction disabled, busy or behind),
//! a marker stands in their place, saying how many and how to recall them, and
//! carrying every file id they held: no file id ever leaves the context.

mod support;

use lossless_core::fileids::extract_file_ids;
use lossless_core::parts::{Role, ToolStatus};
use lossless_core::store::Store;
use support::{temp_store, text, tool_with, MODEL};

fn file_id(n: usize) -> String {
    format!("file_{n:016x}")
}

/// A session of `count` user messages, each naming its own file id among filler.
fn session_naming_files(store: &mut Store, count: usize) -> String {
    let session = store.create_session(MODEL, "{}", None).unwrap();
    let filler = "the parser keeps its state between chunks ".repeat(20);
    for n in 0..count {
        let body = format!("see {} for turn {n}. {filler}", file_id(n));
        store
            .append_message(&session, Role::User, &[text(&body)], None)
            .unwrap();
    }
    session
}

fn context_text(store: &mut Store, session: &str, budget: i64) -> (String, i64, usize) {
    let assembled = store.assemble(session, budget).unwrap();
    let text: Vec<String> = assembled
        .messages()
        .filter_map(|message| message.content.clone())
        .collect();
    (text.join("\n"), assembled.tokens, assembled.omitted)
}

#[test]
fn left_out_messages_keep_their_file_ids_in_the_marker() {
    let (_dir, _path, mut store) = temp_store();
    let session = session_naming_files(&mut store, 40);
    for budget in [600, 1_500, 4_000] {
        let (text, tokens, omitted) = context_text(&mut store, &session, budget);
        assert!(omitted > 0, "budget {budget} leaves messages out");
        assert!(tokens <= budget, "{tokens} tokens for a budget of {budget}");
        assert!(text.contains("earlier messages are left out"));
        assert!(text.contains("lossless_grep"));
        let present = extract_file_ids(&text);
        for n in 0..40 {
            assert!(
                present.contains(&file_id(n)),
                "budget {budget}: {} left the context",
                file_id(n)
            );
        }
    }
}

#[test]
fn the_marker_follows_a_growing_session() {
    let (_dir, _path, mut store) = temp_store();
    let session = session_naming_files(&mut store, 30);
    let (before, _, _) = context_text(&mut store, &session, 1_000);
    assert!(extract_file_ids(&before).contains(&file_id(0)));
    for n in 30..45 {
        store
            .append_message(
                &session,
                Role::User,
                &[text(&format!("now {}", file_id(n)))],
                None,
            )
            .unwrap();
    }
    let (after, tokens, _) = context_text(&mut store, &session, 1_000);
    assert!(tokens <= 1_000);
    let present = extract_file_ids(&after);
    for n in 0..45 {
        assert!(
            present.contains(&file_id(n)),
            "{} left the context",
            file_id(n)
        );
    }
}

#[test]
fn a_tool_result_that_arrives_later_joins_the_marker() {
    let (_dir, _path, mut store) = temp_store();
    let session = session_naming_files(&mut store, 2);
    let call = tool_with("read_file", "call_late", None, ToolStatus::Pending);
    store
        .append_message(&session, Role::Assistant, &[call], None)
        .unwrap();
    let filler = "the parser keeps its state between chunks ".repeat(20);
    for _ in 0..3 {
        store
            .append_message(&session, Role::User, &[text(&filler)], None)
            .unwrap();
    }
    // An assembly that leaves the call's message out gathers the ids up to it ...
    let (text, _, _) = context_text(&mut store, &session, 400);
    assert!(extract_file_ids(&text).contains(&file_id(0)));
    // ... and the call's result, with a file id of its own, arrives after that.
    let output = format!("wrote {}", file_id(99));
    store
        .update_tool(
            &session,
            "call_late",
            ToolStatus::Completed,
            Some(&output),
            None,
        )
        .unwrap();
    let (text, _, omitted) = context_text(&mut store, &session, 400);
    assert!(omitted >= 3, "the call's message is left out");
    assert!(extract_file_ids(&text).contains(&file_id(99)), "{text}");
}

#[test]
fn a_budget_too_small_for_the_ids_keeps_the_budget() {
    let (_dir, _path, mut store) = temp_store();
    let session = session_naming_files(&mut store, 200);
    let (_, tokens, omitted) = context_text(&mut store, &session, 300);
    assert!(omitted > 0);
    assert!(tokens <= 300, "{tokens}");
}

#[test]
fn a_view_that_fits_has_no_file_id_marker() {
    let (_dir, _path, mut store) = temp_store();
    let session = session_naming_files(&mut store, 3);
    let (text, _, omitted) = context_text(&mut store, &session, 100_000);
    assert_eq!(omitted, 0);
    assert!(!text.contains("left out"));
}

#[test]
fn summaries_that_do_not_fit_keep_their_file_ids() {
    let (_dir, _path, mut store) = temp_store();
    let session = session_naming_files(&mut store, 24);
    // Six summaries of four messages each, oldest first; each carries the file ids
    // of its sources in its footer.
    for _ in 0..6 {
        let items = store.view_items(&session).unwrap();
        let sources: Vec<String> = items
            .iter()
            .filter(|item| item.kind == lossless_core::store::ItemKind::Message)
            .take(4)
            .map(|item| item.id.clone())
            .collect();
        let body = "the parser state was discussed at length. ".repeat(30);
        store
            .commit_summary(&session, &body, 1, &sources, &[], None)
            .unwrap();
    }
    let (text, tokens, omitted) = context_text(&mut store, &session, 700);
    assert!(omitted > 0, "some summaries are left out");
    assert!(tokens <= 700, "{tokens}");
    let present = extract_file_ids(&text);
    for n in 0..24 {
        assert!(
            present.contains(&file_id(n)),
            "{} left the context",
            file_id(n)
        );
    }
}
