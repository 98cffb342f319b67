//! Opening a file written by an older schema upgrades it in place, keeping every row.

mod support;

use lossless_core::plan::Tail;
use lossless_core::store::schema::SCHEMA_VERSION;
use lossless_core::store::{GrepMode, OpenOptions, Store};
use rusqlite::Connection;

const SCHEMA_V1: &str = include_str!("fixtures/schema_v1.sql");

/// A version-1 file: a session of three messages, the first two under a summary.
fn version_1_file(path: &str) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(SCHEMA_V1).unwrap();
    conn.execute_batch(
        r#"
        INSERT INTO sessions (id, model, created_at, config, view_version, next_seq, next_position)
            VALUES ('ses_1', 'gpt-4o', 1, '{}', 3, 4, 3);
        INSERT INTO messages (id, session_id, seq, role, created_at, status, token_count) VALUES
            ('msg_1', 'ses_1', 1, 'user', 1, 'complete', 10),
            ('msg_2', 'ses_1', 2, 'assistant', 2, 'complete', 40),
            ('msg_3', 'ses_1', 3, 'user', 3, 'complete', 8);
        INSERT INTO parts (id, message_id, session_id, msg_seq, ord, kind, body, tool_name, call_id,
                           tool_status, tool_output, token_count, output_tokens, file_ids) VALUES
            ('prt_1', 'msg_1', 'ses_1', 1, 0, 'text', 'read the ledger file_0a1b2c3d', NULL, NULL,
             NULL, NULL, 6, 0, 'file_0a1b2c3d'),
            ('prt_2', 'msg_2', 'ses_1', 2, 0, 'tool', '{"path": "ledger.py"}', 'read', 'c1',
             'completed', 'def settle(): pass', 30, 20, NULL),
            ('prt_3', 'msg_3', 'ses_1', 3, 0, 'text', 'thanks', NULL, NULL, NULL, NULL, 4, 0, NULL);
        INSERT INTO summaries (id, session_id, kind, level, text, token_count, span_start_seq,
                               span_end_seq, message_count, depth, file_ids, created_at)
            VALUES ('sum_1', 'ses_1', 'leaf', 3, 'asked for the ledger [LCM File IDs: file_0a1b2c3d]',
                    20, 1, 2, 2, 0, 'file_0a1b2c3d', 4);
        INSERT INTO summary_sources (summary_id, ord, source_kind, source_id) VALUES
            ('sum_1', 0, 'message', 'msg_1'), ('sum_1', 1, 'message', 'msg_2');
        INSERT INTO context_items (session_id, position, kind, item_id, token_count) VALUES
            ('ses_1', 1, 'summary', 'sum_1', 20), ('ses_1', 2, 'message', 'msg_3', 8);
        INSERT INTO fts (body, session_id, owner_id, part_id) VALUES
            ('read the ledger file_0a1b2c3d', 'ses_1', 'msg_1', 'prt_1'),
            ('read {"path": "ledger.py"}' || char(10) || 'def settle(): pass', 'ses_1', 'msg_2', 'prt_2'),
            ('thanks', 'ses_1', 'msg_3', 'prt_3'),
            ('asked for the ledger', 'ses_1', 'sum_1', '');
        "#,
    )
    .unwrap();
}

fn objects(path: &str, kind: &str) -> Vec<String> {
    let conn = Connection::open(path).unwrap();
    let mut stmt = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = ?1 ORDER BY name")
        .unwrap();
    stmt.query_map([kind], |row| row.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

#[test]
fn a_version_1_file_is_upgraded_with_every_row_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    let path = path.to_str().unwrap();
    version_1_file(path);

    let mut store = Store::open(path, &OpenOptions::default()).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);

    let history = store.history("ses_1").unwrap();
    assert_eq!(history.len(), 3);
    let tool = &history[1].parts[0];
    assert_eq!(tool.id, "prt_2");
    match &tool.part {
        lossless_core::parts::Part::Tool(call) => {
            assert_eq!(call.output.as_deref(), Some("def settle(): pass"));
            assert_eq!(call.input, r#"{"path": "ledger.py"}"#);
        }
        other => panic!("expected a tool part, got {other:?}"),
    }
    let dag = store.describe(Some("ses_1"), None).unwrap();
    assert_eq!(dag.len(), 1);
    assert_eq!(dag[0].sources, ["msg_1", "msg_2"]);

    let hits = store
        .grep("settle", Some("ses_1"), GrepMode::Text, 10)
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].covering_summary_id.as_deref(), Some("sum_1"));
    let assembled = store.assemble("ses_1", 10_000).unwrap();
    assert_eq!(assembled.item_ids().collect::<Vec<_>>(), ["sum_1", "msg_3"]);

    // The old tables are gone, the new one is there, and the guards are back.
    let tables = objects(path, "table");
    assert!(tables.contains(&"search_backlog".to_string()));
    assert!(tables.contains(&"tool_outputs".to_string()));
    assert!(!tables.iter().any(|name| name.ends_with("_v1")));
    let indexes = objects(path, "index");
    assert!(!indexes.contains(&"context_items_by_item".to_string()));
    assert!(indexes.contains(&"parts_prunable".to_string()));
    let triggers = objects(path, "trigger");
    for name in [
        "parts_no_delete",
        "parts_fixed",
        "parts_no_replace",
        "summaries_fixed",
        "summary_sources_fixed",
        "tool_outputs_no_delete",
    ] {
        assert!(triggers.contains(&name.to_string()), "{name} is missing");
    }
    assert!(!triggers.contains(&"summary_sources_no_replace".to_string()));
    let conn = Connection::open(path).unwrap();
    let refused = conn.execute("DELETE FROM parts", []).unwrap_err();
    assert!(refused.to_string().contains("append-only"), "{refused}");

    // A second open finds the current version and changes nothing.
    drop(store);
    let store = Store::open(path, &OpenOptions::default()).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
}

#[test]
fn a_failed_upgrade_leaves_the_version_1_file_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    let path = path.to_str().unwrap();
    version_1_file(path);
    // A stray table with the name the upgrade needs makes it fail half way.
    Connection::open(path)
        .unwrap()
        .execute_batch("CREATE TABLE search_backlog (x)")
        .unwrap();

    assert!(Store::open(path, &OpenOptions::default()).is_err());
    let conn = Connection::open(path).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, 1);
    let edges: i64 = conn
        .query_row("SELECT count(*) FROM summary_sources", [], |row| row.get(0))
        .unwrap();
    assert_eq!(edges, 2);
    assert!(objects(path, "table").contains(&"parts".to_string()));
    assert!(!objects(path, "table")
        .iter()
        .any(|name| name.ends_with("_v1")));
}

const SCHEMA_V2: &str = include_str!("fixtures/schema_v2.sql");

/// A version-2 file: a session of four messages, two tool calls among them.
fn version_2_file(path: &str) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(SCHEMA_V2).unwrap();
    conn.execute_batch(
        r#"
        INSERT INTO sessions (id, model, created_at, config, view_version, next_seq, next_position)
            VALUES ('ses_2', 'gpt-4o', 1, '{}', 4, 5, 5);
        INSERT INTO messages (id, session_id, seq, role, created_at, status, token_count) VALUES
            ('msg_1', 'ses_2', 1, 'user', 1, 'complete', 10),
            ('msg_2', 'ses_2', 2, 'assistant', 2, 'complete', 5010),
            ('msg_3', 'ses_2', 3, 'assistant', 3, 'complete', 5010),
            ('msg_4', 'ses_2', 4, 'user', 4, 'complete', 8);
        INSERT INTO parts (pk, id, message_id, session_id, msg_seq, ord, kind, body, tool_name,
                           call_id, tool_status, token_count, output_tokens, file_ids) VALUES
            (1, 'prt_1', 'msg_1', 'ses_2', 1, 0, 'text', 'read both ledgers', NULL, NULL, NULL,
             4, 0, NULL),
            (2, 'prt_2', 'msg_2', 'ses_2', 2, 0, 'tool', '{"path": "a.py"}', 'read', 'c1',
             'completed', 5010, 5000, 'file_0a1b2c3d'),
            (3, 'prt_3', 'msg_3', 'ses_2', 3, 0, 'tool', '{"path": "b.py"}', 'read', 'c2',
             'completed', 5010, 5000, NULL),
            (4, 'prt_4', 'msg_4', 'ses_2', 4, 0, 'text', 'thanks', NULL, NULL, NULL, 2, 0, NULL);
        INSERT INTO tool_outputs (part_pk, output) VALUES
            (2, 'ledger a file_0a1b2c3d'), (3, 'ledger b');
        INSERT INTO context_items (session_id, position, kind, item_id, token_count) VALUES
            ('ses_2', 1, 'message', 'msg_1', 10), ('ses_2', 2, 'message', 'msg_2', 5010),
            ('ses_2', 3, 'message', 'msg_3', 5010), ('ses_2', 4, 'message', 'msg_4', 8);
        INSERT INTO search_backlog (fts_rowid) VALUES (1), (2), (3), (4);
        "#,
    )
    .unwrap();
}

fn index_sql(path: &str, name: &str) -> String {
    Connection::open(path)
        .unwrap()
        .query_row(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?1",
            [name],
            |row| row.get(0),
        )
        .unwrap()
}

#[test]
fn a_version_2_file_gets_the_covering_prune_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.db");
    let path = path.to_str().unwrap();
    version_2_file(path);
    assert!(!index_sql(path, "parts_prunable").contains("output_tokens"));

    let mut store = Store::open(path, &OpenOptions::default()).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    assert!(index_sql(path, "parts_prunable").contains("output_tokens"));
    // Both outputs are found through the new index; the older is tombstoned.
    let pruned = store
        .prune("ses_2", 5_000, 100, &[], Tail::user_turns(1))
        .expect("prune after the upgrade");
    assert_eq!((pruned.candidates, pruned.pruned_parts), (1, 1));
    let history = store.history("ses_2").unwrap();
    assert_eq!(history.len(), 4);
    // Both outputs stay searchable, the tombstoned one too, and the request that
    // asked for "ledgers" (the index is stemmed as of version 5).
    let hits = store
        .grep("ledger", Some("ses_2"), GrepMode::Text, 10)
        .unwrap();
    assert_eq!(hits.len(), 3);
}

const SCHEMA_V3: &str = include_str!("fixtures/schema_v3.sql");

#[test]
fn a_version_3_file_gets_stream_checkpoints_and_its_open_reply_can_be_closed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v3.db");
    let path = path.to_str().unwrap();
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(SCHEMA_V3).unwrap();
    conn.execute_batch(
        r"
        INSERT INTO sessions (id, model, created_at, config, view_version, next_seq, next_position)
            VALUES ('ses_3', 'gpt-4o', 1, '{}', 1, 3, 2);
        INSERT INTO messages (id, session_id, seq, role, created_at, status, token_count) VALUES
            ('msg_1', 'ses_3', 1, 'user', 1, 'complete', 6);
        INSERT INTO messages (id, session_id, seq, role, created_at, status) VALUES
            ('msg_2', 'ses_3', 2, 'assistant', 2, 'streaming');
        INSERT INTO parts (pk, id, message_id, session_id, msg_seq, ord, kind, body, token_count)
            VALUES (1, 'prt_1', 'msg_1', 'ses_3', 1, 0, 'text', 'hello', 2);
        INSERT INTO context_items (session_id, position, kind, item_id, token_count)
            VALUES ('ses_3', 1, 'message', 'msg_1', 6);
        ",
    )
    .unwrap();
    drop(conn);

    let mut store = Store::open(path, &OpenOptions::default()).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let streams = store.streams("ses_3").unwrap();
    assert_eq!(streams.len(), 1);
    assert_eq!((streams[0].owner.as_deref(), streams[0].chars), (None, 0));
    assert_eq!(
        store
            .flag_interrupted("ses_3", &["msg_2".to_string()])
            .unwrap(),
        1
    );
    assert!(store.streams("ses_3").unwrap().is_empty());
    let history = store.history("ses_3").unwrap();
    assert_eq!(history[1].status, "incomplete");
}

const SCHEMA_V4: &str = include_str!("fixtures/schema_v4.sql");

#[test]
fn a_version_4_file_gets_a_stemmed_index_built_from_its_stored_text() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v4.db");
    let path = path.to_str().unwrap();
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(SCHEMA_V4).unwrap();
    conn.execute_batch(
        r"
        INSERT INTO sessions (id, model, created_at, config, view_version, next_seq, next_position)
            VALUES ('ses_4', 'gpt-4o', 1, '{}', 2, 3, 3);
        INSERT INTO messages (id, session_id, seq, role, created_at, status, token_count) VALUES
            ('msg_1', 'ses_4', 1, 'user', 1, 'complete', 9),
            ('msg_2', 'ses_4', 2, 'assistant', 2, 'complete', 9);
        INSERT INTO parts (pk, id, message_id, session_id, msg_seq, ord, kind, body, token_count)
            VALUES (1, 'prt_1', 'msg_1', 'ses_4', 1, 0, 'text', 'the key rotates weekly', 5),
                   (2, 'prt_2', 'msg_2', 'ses_4', 2, 0, 'text', 'noted', 2);
        INSERT INTO summaries (pk, id, session_id, kind, level, text, token_count, span_start_seq,
                               span_end_seq, message_count, depth, created_at)
            VALUES (1, 'sum_1', 'ses_4', 'leaf', 3, 'keys were rotated', 4, 1, 2, 2, 0, 3);
        INSERT INTO summary_sources (summary_id, ord, source_kind, source_id) VALUES
            ('sum_1', 0, 'message', 'msg_1'), ('sum_1', 1, 'message', 'msg_2');
        INSERT INTO context_items (session_id, position, kind, item_id, token_count)
            VALUES ('ses_4', 1, 'summary', 'sum_1', 4);
        INSERT INTO fts (rowid, body, session_id, owner_id, part_id) VALUES
            (1, 'the key rotates weekly', 'ses_4', 'msg_1', 'prt_1'),
            (2, 'noted', 'ses_4', 'msg_2', 'prt_2'),
            (-1, 'keys were rotated', 'ses_4', 'sum_1', '');
        ",
    )
    .unwrap();
    drop(conn);

    let mut store = Store::open(path, &OpenOptions::default()).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let fts_sql: String = support::raw(path)
        .query_row(
            "SELECT sql FROM sqlite_master WHERE name = 'fts'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert!(fts_sql.contains("'lossless'"), "{fts_sql}");
    assert_eq!(store.search_backlog().unwrap(), 0);
    // A word the old index could only find as written now finds every form of it.
    let hits = store
        .grep("rotating key", Some("ses_4"), GrepMode::Text, 10)
        .unwrap();
    let owners: Vec<&str> = hits.iter().map(|hit| hit.owner_id.as_str()).collect();
    assert_eq!(owners.len(), 2, "{owners:?}");
    assert!(owners.contains(&"msg_1") && owners.contains(&"sum_1"));
    let message = hits.iter().find(|hit| hit.owner_id == "msg_1").unwrap();
    assert_eq!(message.leaf_summary_id.as_deref(), Some("sum_1"));
    assert_eq!(message.covering_summary_id.as_deref(), Some("sum_1"));
}

#[test]
fn a_file_of_a_newer_schema_is_still_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v6.db");
    let path = path.to_str().unwrap();
    drop(Store::open(path, &OpenOptions::default()).unwrap());
    Connection::open(path)
        .unwrap()
        .execute_batch(&format!("PRAGMA user_version = {}", SCHEMA_VERSION + 1))
        .unwrap();
    assert!(Store::open(path, &OpenOptions::default()).is_err());
}

const SCHEMA_V9: &str = include_str!("fixtures/schema_v9.sql");
const SCHEMA_V10: &str = include_str!("fixtures/schema_v10.sql");

/// A version-9 file (the last without the reasoning kind): a user turn and a tool
/// call with its output.
fn version_9_file(path: &str) -> Connection {
    let conn = support::raw(path);
    conn.execute_batch(SCHEMA_V9).unwrap();
    conn.execute_batch(
        r#"
        INSERT INTO sessions (id, model, created_at, config, view_version, next_seq, next_position)
            VALUES ('ses_9', 'anthropic/claude-sonnet-4-5', 1, '{}', 2, 3, 3);
        INSERT INTO messages (id, session_id, seq, role, created_at, status, token_count) VALUES
            ('msg_1', 'ses_9', 1, 'user', 1, 'complete', 9),
            ('msg_2', 'ses_9', 2, 'assistant', 2, 'complete', 30);
        INSERT INTO parts (pk, id, message_id, session_id, msg_seq, ord, kind, body, tool_name,
                           call_id, tool_status, token_count, output_tokens) VALUES
            (1, 'prt_1', 'msg_1', 'ses_9', 1, 0, 'text', 'settle the ledger', NULL, NULL, NULL, 5, 0),
            (2, 'prt_2', 'msg_2', 'ses_9', 2, 0, 'tool', '{"path": "ledger.py"}', 'read', 'c1',
             'completed', 26, 10);
        INSERT INTO tool_outputs (part_pk, output) VALUES (2, 'def settle(): pass');
        INSERT INTO context_items (session_id, position, kind, item_id, token_count) VALUES
            ('ses_9', 1, 'message', 'msg_1', 9), ('ses_9', 2, 'message', 'msg_2', 30);
        INSERT INTO search_backlog (fts_rowid) VALUES (1), (2);
        "#,
    )
    .unwrap();
    conn
}

fn parts_sql(conn: &Connection) -> String {
    conn.query_row(
        "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'parts'",
        [],
        |row| row.get(0),
    )
    .unwrap()
}

fn insert_part(conn: &Connection, pk: i64, kind: &str) -> rusqlite::Result<usize> {
    conn.execute(
        "INSERT INTO parts (pk, id, message_id, session_id, msg_seq, ord, kind, body, token_count)
         VALUES (?1, 'prt_raw_' || ?1, 'msg_2', 'ses_9', 2, ?1, ?2, '{}', 0)",
        rusqlite::params![pk, kind],
    )
}

#[test]
fn a_version_9_file_takes_reasoning_parts_with_every_row_kept() {
    use lossless_core::parts::{Part, Reasoning, Role};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v9.db");
    let path = path.to_str().unwrap();
    // Open before the upgrade, and kept open through it.
    let before = version_9_file(path);
    assert!(insert_part(&before, 90, "reasoning").is_err());

    let mut store = Store::open(path, &OpenOptions::default()).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let history = store.history("ses_9").unwrap();
    assert_eq!(history.len(), 2);
    match &history[1].parts[0].part {
        Part::Tool(call) => assert_eq!(call.output.as_deref(), Some("def settle(): pass")),
        other => panic!("expected the tool call, got {other:?}"),
    }
    let payload = r#"{"type": "thinking", "thinking": "read it first", "signature": "c2ln"}"#;
    let reasoning = Part::Reasoning(Reasoning {
        provider: "anthropic".into(),
        text: Some("read it first".into()),
        payload: Some(payload.into()),
    });
    store
        .append_message(
            "ses_9",
            Role::Assistant,
            std::slice::from_ref(&reasoning),
            None,
        )
        .unwrap();
    assert_eq!(store.history("ses_9").unwrap()[2].parts[0].part, reasoning);
    let hits = store
        .grep("settle", Some("ses_9"), GrepMode::Text, 10)
        .unwrap();
    assert_eq!(hits.len(), 2);

    // The table reads as a new file's, and the file checks out whole.
    let fresh_dir = tempfile::tempdir().unwrap();
    let fresh = fresh_dir.path().join("new.db");
    drop(Store::open(fresh.to_str().unwrap(), &OpenOptions::default()).unwrap());
    let conn = support::raw(path);
    assert_eq!(
        parts_sql(&conn),
        parts_sql(&support::raw(fresh.to_str().unwrap()))
    );
    let verdict: String = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(verdict, "ok");
    // The connection open through the upgrade reads the new constraint, which
    // still refuses a kind nobody declared.
    insert_part(&before, 91, "reasoning").unwrap();
    assert!(insert_part(&before, 92, "hologram").is_err());
    assert!(insert_part(&conn, 93, "hologram").is_err());

    // A second open finds the current version and changes nothing.
    drop(store);
    let version: i64 = conn
        .query_row("PRAGMA schema_version", [], |row| row.get(0))
        .unwrap();
    drop(Store::open(path, &OpenOptions::default()).unwrap());
    let again: i64 = conn
        .query_row("PRAGMA schema_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(again, version);
}

#[test]
fn a_version_10_file_takes_provider_compaction_parts_with_every_row_kept() {
    use lossless_core::parts::{Part, ProviderCompaction, Role};

    // A version-10 file: a user turn with its reasoning.
    let dir10 = tempfile::tempdir().unwrap();
    let path10 = dir10.path().join("v10.db");
    let path10 = path10.to_str().unwrap();
    let before = support::raw(path10);
    before.execute_batch(SCHEMA_V10).unwrap();
    before
        .execute_batch(
            r#"
            INSERT INTO sessions (id, model, created_at, config, view_version, next_seq, next_position)
                VALUES ('ses_9', 'anthropic/claude-sonnet-4-5', 1, '{}', 2, 2, 2);
            INSERT INTO messages (id, session_id, seq, role, created_at, status, token_count) VALUES
                ('msg_1', 'ses_9', 1, 'user', 1, 'complete', 9);
            INSERT INTO parts (pk, id, message_id, session_id, msg_seq, ord, kind, body, token_count)
                VALUES (1, 'prt_1', 'msg_1', 'ses_9', 1, 0, 'text', 'settle the ledger', 5),
                       (2, 'prt_2', 'msg_1', 'ses_9', 1, 1, 'reasoning',
                        '{"provider":"anthropic","text":"first","payload":null}', 0);
            INSERT INTO context_items (session_id, position, kind, item_id, token_count) VALUES
                ('ses_9', 1, 'message', 'msg_1', 9);
            INSERT INTO search_backlog (fts_rowid) VALUES (1), (2);
            "#,
        )
        .unwrap();
    let refused = before.execute(
        "INSERT INTO parts (pk, id, message_id, session_id, msg_seq, ord, kind, body, token_count)
         VALUES (3, 'prt_3', 'msg_1', 'ses_9', 1, 2, 'provider_compaction', '{}', 0)",
        [],
    );
    assert!(refused.is_err());

    let mut store = Store::open(path10, &OpenOptions::default()).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let block = Part::ProviderCompaction(ProviderCompaction {
        provider: "anthropic".into(),
        text: Some("The ledger balances.".into()),
        payload: r#"{"type": "compaction", "content": "The ledger balances."}"#.into(),
    });
    store
        .append_message("ses_9", Role::Assistant, std::slice::from_ref(&block), None)
        .unwrap();
    let history = store.history("ses_9").unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[0].parts.len(), 2);
    assert_eq!(history[1].parts[0].part, block);
    let hits = store
        .grep("balances", Some("ses_9"), GrepMode::Text, 10)
        .unwrap();
    assert_eq!(hits.len(), 1);
    // The table reads as a new file's, and the file checks out whole.
    let fresh_dir = tempfile::tempdir().unwrap();
    let fresh = fresh_dir.path().join("new.db");
    drop(Store::open(fresh.to_str().unwrap(), &OpenOptions::default()).unwrap());
    let conn = support::raw(path10);
    assert_eq!(
        parts_sql(&conn),
        parts_sql(&support::raw(fresh.to_str().unwrap()))
    );
    let verdict: String = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(verdict, "ok");
}

#[test]
fn every_older_version_gets_the_widened_kind_constraint() {
    let dir = tempfile::tempdir().unwrap();
    let fresh = dir.path().join("new.db");
    drop(Store::open(fresh.to_str().unwrap(), &OpenOptions::default()).unwrap());
    let expected = parts_sql(&support::raw(fresh.to_str().unwrap()));
    for (version, schema) in [
        (1, SCHEMA_V1),
        (2, SCHEMA_V2),
        (3, SCHEMA_V3),
        (4, SCHEMA_V4),
        (9, SCHEMA_V9),
        (10, SCHEMA_V10),
    ] {
        let path = dir.path().join(format!("v{version}.db"));
        let path = path.to_str().unwrap();
        support::raw(path).execute_batch(schema).unwrap();
        drop(Store::open(path, &OpenOptions::default()).unwrap());
        assert_eq!(
            parts_sql(&support::raw(path)),
            expected,
            "from version {version}"
        );
    }
}

#[test]
fn a_version_10_file_takes_media_parts_and_keeps_their_bytes_once() {
    use lossless_core::parts::{Media, MediaInput, Part, Role};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v10.db");
    let path = path.to_str().unwrap();
    support::raw(path).execute_batch(SCHEMA_V10).unwrap();
    let conn = support::raw(path);
    conn.execute(
        "INSERT INTO sessions (id, model, created_at, config, view_version, next_seq, next_position)
         VALUES ('ses_10', 'gpt-4o', 1, '{}', 0, 1, 1)",
        [],
    )
    .unwrap();
    let mut store = Store::open(path, &OpenOptions::default()).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    png.extend(640_u32.to_be_bytes());
    png.extend(480_u32.to_be_bytes());
    png.extend(b"a screenshot's pixels");
    let image = Part::Media(
        Media::from_input(
            MediaInput {
                data: Some(png.clone()),
                caption: Some("the login page".into()),
                ..MediaInput::default()
            },
            "parts[0]",
        )
        .unwrap(),
    );
    for _ in 0..2 {
        store
            .append_message("ses_10", Role::User, std::slice::from_ref(&image), None)
            .unwrap();
    }
    let Part::Media(media) = &image else {
        unreachable!()
    };
    let (media_type, bytes) = store.read_media(&media.media_id).unwrap().unwrap();
    assert_eq!((media_type.as_str(), bytes), ("image/png", png));
    let rows: i64 = conn
        .query_row("SELECT count(*) FROM media", [], |row| row.get(0))
        .unwrap();
    assert_eq!(rows, 1, "the same bytes twice are stored once");
    // Stored content is never replaced, changed or deleted.
    assert!(conn.execute("DELETE FROM media", []).is_err());
    assert!(conn.execute("UPDATE media SET data = x'00'", []).is_err());
    let verdict: String = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(verdict, "ok");
}
