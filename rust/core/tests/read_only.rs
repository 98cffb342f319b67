//! A store opened read-only reads older schemas as they are and writes nothing.

use lossless_core::store::{Focus, OpenOptions, Store};
use lossless_core::Error;
use rusqlite::Connection;

const SCHEMA_V1: &str = include_str!("fixtures/schema_v1.sql");
const SCHEMA_V3: &str = include_str!("fixtures/schema_v3.sql");

fn user_version(path: &str) -> i64 {
    Connection::open(path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap()
}

/// A version-3 file: three messages, the first two under a leaf summary.
fn version_3_file(path: &str) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(SCHEMA_V3).unwrap();
    conn.execute_batch(
        r"
        INSERT INTO sessions (id, model, created_at, config, view_version, next_seq, next_position)
            VALUES ('ses_3', 'gpt-4o', 1, '{}', 1, 4, 3);
        INSERT INTO messages (id, session_id, seq, role, created_at, status, token_count) VALUES
            ('msg_1', 'ses_3', 1, 'user', 1, 'complete', 6),
            ('msg_2', 'ses_3', 2, 'assistant', 2, 'complete', 6),
            ('msg_3', 'ses_3', 3, 'user', 3, 'complete', 6);
        INSERT INTO parts (pk, id, message_id, session_id, msg_seq, ord, kind, body, token_count)
            VALUES (1, 'prt_1', 'msg_1', 'ses_3', 1, 0, 'text', 'hello', 2),
                   (2, 'prt_2', 'msg_2', 'ses_3', 2, 0, 'text', 'the ledger balances', 3),
                   (3, 'prt_3', 'msg_3', 'ses_3', 3, 0, 'text', 'thanks', 1);
        INSERT INTO summaries (pk, id, session_id, kind, level, text, token_count, span_start_seq,
                               span_end_seq, message_count, depth, created_at)
            VALUES (1, 'sum_1', 'ses_3', 'leaf', 3, 'greeting and ledger', 5, 1, 2, 2, 0, 4);
        INSERT INTO summary_sources (summary_id, ord, source_kind, source_id) VALUES
            ('sum_1', 0, 'message', 'msg_1'), ('sum_1', 1, 'message', 'msg_2');
        INSERT INTO context_items (session_id, position, kind, item_id, token_count) VALUES
            ('ses_3', 1, 'summary', 'sum_1', 5), ('ses_3', 2, 'message', 'msg_3', 6);
        ",
    )
    .unwrap();
}

#[test]
fn an_older_readable_schema_is_read_without_being_migrated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v3.db");
    let path = path.to_str().unwrap();
    version_3_file(path);
    let mut store = Store::open_read_only(path, &OpenOptions::default()).unwrap();
    assert!(store.is_read_only());
    let expansion = store
        .expand_window("sum_1", &Focus::Around("msg_2".into()), 1_000)
        .unwrap();
    let ids: Vec<&str> = expansion.messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["msg_1", "msg_2"]);
    let read = store.read_message("msg_2", 0, 100).unwrap();
    assert!(read.text.contains("the ledger balances"));
    assert!(store.create_session("gpt-4o", "{}", None).is_err());
    drop(store);
    assert_eq!(user_version(path), 3);
}

#[test]
fn a_version_1_file_asks_to_be_opened_for_writing_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    let path = path.to_str().unwrap();
    Connection::open(path)
        .unwrap()
        .execute_batch(SCHEMA_V1)
        .unwrap();
    let refused = Store::open_read_only(path, &OpenOptions::default()).err();
    assert!(
        matches!(&refused, Some(Error::SchemaTooOld { found: 1, .. })),
        "{refused:?}"
    );
    assert!(refused
        .unwrap()
        .to_string()
        .contains("open it for writing once"));
    assert_eq!(user_version(path), 1);
}

#[test]
fn a_missing_path_is_named_and_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.db");
    let text = path.to_str().unwrap();
    let refused = Store::open_read_only(text, &OpenOptions::default()).err();
    assert!(
        matches!(&refused, Some(Error::DatabaseNotFound { path }) if path == text),
        "{refused:?}"
    );
    assert!(!path.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
