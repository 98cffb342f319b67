//! The full-text index and its backlog: what is stored is always found, once.

mod support;

use lossless_core::parts::{Role, ToolStatus};
use lossless_core::plan::Tail;
use lossless_core::store::{Focus, GrepMode, OpenOptions, Store, BACKLOG_LIMIT};
use support::{append, raw, temp_store, text, tool_with};

fn count(path: &str, sql: &str) -> i64 {
    raw(path).query_row(sql, [], |row| row.get(0)).unwrap()
}

#[test]
fn an_append_queues_its_parts_and_a_search_finds_them() {
    let (_dir, path, mut store) = temp_store();
    let session = store.create_session(support::MODEL, "{}", None).unwrap();
    let id = append(&mut store, &session, Role::User, &[text("the ocelot naps")]);
    assert_eq!(store.search_backlog().unwrap(), 1);
    assert_eq!(count(&path, "SELECT count(*) FROM fts"), 0);

    let hits = store
        .grep("ocelot", Some(&session), GrepMode::Text, 10)
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].owner_id, id);
    assert_eq!(store.search_backlog().unwrap(), 0);
    assert_eq!(count(&path, "SELECT count(*) FROM fts"), 1);
}

#[test]
fn a_tool_result_is_indexed_once_with_its_call() {
    let (_dir, path, mut store) = temp_store();
    let session = store.create_session(support::MODEL, "{}", None).unwrap();
    let pending = tool_with("read", "c1", None, ToolStatus::Pending);
    append(&mut store, &session, Role::Assistant, &[pending]);
    // Indexed before its result arrives, then again with it.
    assert_eq!(store.flush_search_index().unwrap(), 1);
    store
        .update_tool(
            &session,
            "c1",
            ToolStatus::Completed,
            Some("gecko found"),
            None,
        )
        .unwrap();
    for (word, mode) in [("gecko", GrepMode::Text), ("read", GrepMode::Text)] {
        let hits = store.grep(word, Some(&session), mode, 10).unwrap();
        assert_eq!(hits.len(), 1, "{word}");
    }
    let regex = store
        .grep("gecko f", Some(&session), GrepMode::Regex, 10)
        .unwrap();
    assert_eq!(regex.len(), 1);
    assert_eq!(count(&path, "SELECT count(*) FROM fts"), 1);
}

#[test]
fn the_backlog_never_grows_past_its_limit() {
    let (_dir, path, mut store) = temp_store();
    let session = store.create_session(support::MODEL, "{}", None).unwrap();
    let total = BACKLOG_LIMIT * 2 + 5;
    for index in 0..total {
        append(
            &mut store,
            &session,
            Role::User,
            &[text(&format!("note {index}"))],
        );
        assert!(store.search_backlog().unwrap() < BACKLOG_LIMIT);
    }
    let indexed = count(&path, "SELECT count(*) FROM fts");
    assert_eq!(indexed + store.search_backlog().unwrap(), total);
    assert!(indexed >= BACKLOG_LIMIT);
}

#[test]
fn another_store_on_the_file_finds_what_this_one_queued() {
    let (_dir, path, mut writer) = temp_store();
    let session = writer.create_session(support::MODEL, "{}", None).unwrap();
    append(
        &mut writer,
        &session,
        Role::User,
        &[text("a quokka smiles")],
    );
    let mut reader = Store::open(&path, &OpenOptions::default()).unwrap();
    let hits = reader.grep("quokka", None, GrepMode::Text, 10).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(writer.search_backlog().unwrap(), 0);
}

#[test]
fn a_committed_summary_is_searchable_and_covers_its_messages() {
    let (_dir, _path, mut store) = temp_store();
    let session = store.create_session(support::MODEL, "{}", None).unwrap();
    append(
        &mut store,
        &session,
        Role::User,
        &[text("plan the narwhal")],
    );
    append(&mut store, &session, Role::Assistant, &[text("planned")]);
    for turn in 0..2 {
        append(
            &mut store,
            &session,
            Role::User,
            &[text(&format!("later {turn}"))],
        );
    }
    let span = store
        .compaction_span(&session, Tail::user_turns(2))
        .unwrap();
    let summary = store
        .commit_summary(&session, "summary: tusk", 3, &span.message_ids, &[], None)
        .unwrap();
    let hits = store.grep("tusk", None, GrepMode::Text, 10).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].owner_id, summary.summary_id);
    let hits = store.grep("narwhal", None, GrepMode::Text, 10).unwrap();
    assert_eq!(
        hits[0].covering_summary_id.as_deref(),
        Some(summary.summary_id.as_str())
    );
}

#[test]
fn a_failed_append_queues_nothing() {
    let (_dir, path, mut store) = temp_store();
    let session = store.create_session(support::MODEL, "{}", None).unwrap();
    raw(&path)
        .execute_batch(
            "CREATE TRIGGER refuse_view BEFORE INSERT ON context_items
             BEGIN SELECT RAISE(ABORT, 'refused'); END",
        )
        .unwrap();
    assert!(store
        .append_message(&session, Role::User, &[text("lost lemur")], None)
        .is_err());
    assert_eq!(store.search_backlog().unwrap(), 0);
    raw(&path)
        .execute_batch("DROP TRIGGER refuse_view")
        .unwrap();
    assert!(store
        .grep("lemur", None, GrepMode::Text, 10)
        .unwrap()
        .is_empty());
}

/// A session of a few turns, the first three under one leaf summary.
fn answered_session() -> (tempfile::TempDir, Store, String, Vec<String>, String) {
    let (dir, _path, mut store) = temp_store();
    let session = store.create_session(support::MODEL, "{}", None).unwrap();
    let mut ids = Vec::new();
    for line in [
        "The staging password rotates every 17 days.",
        "Noted: the staging database is payhub-stg.",
        "Run the exporter for the ledger tables.",
        "The exporter wrote 12 files.",
        "Thanks, the release goes out on Friday.",
    ] {
        let role = if ids.len() % 2 == 0 {
            Role::User
        } else {
            Role::Assistant
        };
        ids.push(append(&mut store, &session, role, &[text(line)]));
    }
    let summary = store
        .commit_summary(&session, "staging notes", 3, &ids[..3], &[], None)
        .unwrap()
        .summary_id;
    (dir, store, session, ids, summary)
}

#[test]
fn a_question_finds_the_turn_that_answers_it_first() {
    let (_dir, mut store, session, ids, summary) = answered_session();
    let hits = store
        .grep(
            "How often is the staging password rotated?",
            Some(&session),
            GrepMode::Text,
            10,
        )
        .unwrap();
    assert_eq!(hits[0].owner_id, ids[0]);
    assert!(hits[0].snippet.contains("[rotates]"), "{}", hits[0].snippet);
    assert_eq!(hits[0].leaf_summary_id.as_deref(), Some(summary.as_str()));
    assert_eq!(
        hits[0].covering_summary_id.as_deref(),
        Some(summary.as_str())
    );
    // Any word is enough to be a candidate: the other staging turn and the summary.
    assert_eq!(hits.len(), 3);
    let outside = hits.iter().find(|hit| hit.owner_id == ids[1]).unwrap();
    assert_eq!(outside.leaf_summary_id.as_deref(), Some(summary.as_str()));
    let summary_hit = hits.iter().find(|hit| hit.owner_id == summary).unwrap();
    assert_eq!(summary_hit.leaf_summary_id, None);
}

#[test]
fn required_words_and_phrases_narrow_the_candidates() {
    let (_dir, mut store, session, ids, _summary) = answered_session();
    let grep = |store: &mut Store, query: &str| -> Vec<String> {
        let hits = store
            .grep(query, Some(&session), GrepMode::Text, 10)
            .unwrap();
        hits.into_iter().map(|hit| hit.owner_id).collect()
    };
    assert_eq!(grep(&mut store, "staging +database"), [ids[1].clone()]);
    assert_eq!(grep(&mut store, "\"staging database\""), [ids[1].clone()]);
    assert!(grep(&mut store, "\"database staging\"").is_empty());
    // Only stopwords: searched as they are.
    assert_eq!(grep(&mut store, "what was it about?").len(), 0);
    assert_eq!(grep(&mut store, "for the")[0], ids[2]);
    for bad in ["\"open phrase", "", "?!"] {
        let err = store.grep(bad, Some(&session), GrepMode::Text, 10);
        assert!(
            matches!(err, Err(lossless_core::Error::InvalidInput { .. })),
            "{bad:?}"
        );
    }
}

#[test]
fn a_focus_query_finds_its_rare_word_in_the_span_however_common_the_others() {
    let (_dir, _path, mut store) = temp_store();
    let session = store.create_session(support::MODEL, "{}", None).unwrap();
    let mut ids = Vec::new();
    for turn in 0..3_000 {
        let body = if turn == 40 {
            "retry the upload: the ocelot config was stale".to_string()
        } else {
            format!("retry the upload after the build step {turn}")
        };
        ids.push(append(&mut store, &session, Role::User, &[text(&body)]));
    }
    // A leaf over the oldest hundred; every newer message matches the common words.
    let leaf = store
        .commit_summary(&session, "early uploads", 1, &ids[..100], &[], None)
        .unwrap()
        .summary_id;
    let focus = Focus::Query("why did the upload retry with the ocelot config".into());
    let expansion = store.expand_window(&leaf, &focus, 200).unwrap();
    let shown: Vec<&str> = expansion.messages.iter().map(|m| m.id.as_str()).collect();
    assert!(shown.contains(&ids[40].as_str()), "{shown:?}");
    // Only common words: the best of the span's matches, still inside the span.
    let common = Focus::Query("retry upload".into());
    let expansion = store.expand_window(&leaf, &common, 50).unwrap();
    assert!(expansion
        .messages
        .iter()
        .all(|m| ids[..100].contains(&m.id)));
}

#[test]
fn reasoning_is_found_by_its_readable_text_never_by_its_signed_data() {
    use lossless_core::parts::{Part, Reasoning};

    let (_dir, _path, mut store) = temp_store();
    let session = store.create_session(support::MODEL, "{}", None).unwrap();
    let signed = Part::Reasoning(Reasoning {
        provider: "anthropic".into(),
        text: Some("the walrus ledger balances".into()),
        payload: Some(
            r#"{"type": "thinking", "thinking": "the walrus ledger balances", "signature": "zebrasignature"}"#
                .into(),
        ),
    });
    let redacted = Part::Reasoning(Reasoning {
        provider: "anthropic".into(),
        text: None,
        payload: Some(r#"{"type": "redacted_thinking", "data": "okapiredacted"}"#.into()),
    });
    let id = append(
        &mut store,
        &session,
        Role::Assistant,
        &[signed, redacted, text("done")],
    );
    for (query, mode, found) in [
        ("walrus", GrepMode::Text, 1),
        ("walrus led", GrepMode::Regex, 1),
        ("zebrasignature", GrepMode::Text, 0),
        ("zebrasig", GrepMode::Regex, 0),
        ("okapiredacted", GrepMode::Text, 0),
        ("okapi", GrepMode::Regex, 0),
        ("signature", GrepMode::Text, 0),
    ] {
        let hits = store.grep(query, Some(&session), mode, 10).unwrap();
        assert_eq!(hits.len(), found, "{query}");
        assert!(hits.iter().all(|hit| hit.owner_id == id));
    }
}
