//! The full-text index and its backlog: what is stored is always found, once.

mod support;

use lossless_core::parts::{Role, ToolStatus};
use lossless_core::plan::Tail;
use lossless_core::store::{GrepMode, OpenOptions, Store, BACKLOG_LIMIT};
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
