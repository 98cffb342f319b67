//! Files kept whole and map runs: stored in one transaction, read back exactly,
//! append-only, and added to a version 5 file by its upgrade.

mod support;

use std::io::Write;

use lossless_core::filescan::{scan_path, CHUNK_BYTES};
use lossless_core::store::schema::SCHEMA_VERSION;
use lossless_core::store::{MapOutcome, NewFile, OpenOptions, Store};
use lossless_core::Error;
use support::{raw, temp_store};

/// A text file of numbered lines, spanning several chunks.
fn numbered_lines(dir: &std::path::Path, lines: usize) -> (std::path::PathBuf, Vec<u8>) {
    let path = dir.join("lines.txt");
    let mut bytes = Vec::new();
    for n in 1..=lines {
        writeln!(bytes, "line {n} {}", "x".repeat(n % 97)).unwrap();
    }
    std::fs::write(&path, &bytes).unwrap();
    (path, bytes)
}

fn store_it(store: &mut Store, source: &std::path::Path) -> (String, bool) {
    let (scan, _) = scan_path(source).unwrap();
    let (record, stored) = store
        .store_file(&NewFile {
            source,
            sha256: &scan.sha256,
            path: "lines.txt",
            file_type: "text",
            token_count: 1,
            summary: "numbered lines",
        })
        .unwrap();
    (record.file_id, stored)
}

#[test]
fn a_file_of_several_chunks_reads_back_whole_and_by_any_line_range() {
    let (dir, _, mut store) = temp_store();
    let (source, bytes) = numbered_lines(dir.path(), 60_000);
    assert!(bytes.len() > 2 * CHUNK_BYTES);
    let (file_id, stored) = store_it(&mut store, &source);
    assert!(stored && file_id.starts_with("file_") && file_id.len() == 37);
    assert_eq!(store.read_file(&file_id, None).unwrap(), bytes);
    let record = store.file_record(&file_id).unwrap().unwrap();
    assert_eq!(record.line_count, 60_000);
    assert!(record.stored_bytes < record.byte_count / 2);
    let lines: Vec<&[u8]> = bytes.split_inclusive(|b| *b == b'\n').collect();
    for (first, last) in [
        (1, 1),
        (1, 3),
        (9_000, 30_000),
        (59_999, 60_000),
        (59_990, 70_000),
    ] {
        let expected: Vec<u8> = lines[first - 1..last.min(lines.len())].concat();
        let got = store
            .read_file(&file_id, Some((first as u64, last as u64)))
            .unwrap();
        assert_eq!(got, expected, "lines {first}..{last}");
    }
    assert!(store
        .read_file(&file_id, Some((70_001, 70_002)))
        .unwrap()
        .is_empty());
    assert!(matches!(
        store.read_file(&file_id, Some((0, 2))),
        Err(Error::InvalidInput { .. })
    ));
    // The same content again is the same reference, not a second copy.
    assert_eq!(store_it(&mut store, &source), (file_id, false));
}

#[test]
fn a_file_that_changed_after_its_scan_stores_nothing() {
    let (dir, path, mut store) = temp_store();
    let (source, _) = numbered_lines(dir.path(), 100);
    let (scan, _) = scan_path(&source).unwrap();
    std::fs::write(&source, b"something else\n").unwrap();
    let refused = store.store_file(&NewFile {
        source: &source,
        sha256: &scan.sha256,
        path: "lines.txt",
        file_type: "text",
        token_count: 1,
        summary: "s",
    });
    assert!(matches!(refused, Err(Error::InvalidInput { .. })));
    let conn = raw(&path);
    for table in ["file_refs", "file_contents", "file_chunks"] {
        let rows: i64 = conn
            .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 0, "{table}");
    }
}

#[test]
fn stored_files_and_outcomes_cannot_be_rewritten_or_deleted() {
    let (dir, path, mut store) = temp_store();
    let (source, _) = numbered_lines(dir.path(), 10);
    store_it(&mut store, &source);
    let map_id = store
        .create_map("llm", None, "{}", &["1".into(), "2".into()])
        .unwrap();
    let success = MapOutcome {
        idx: 1,
        succeeded: true,
        output: Some("\"ok\"".into()),
        attempts: 1,
        usage: "{}".into(),
        ..MapOutcome::default()
    };
    store.record_map_outcome(&map_id, &success).unwrap();
    let conn = raw(&path);
    for statement in [
        "DELETE FROM file_chunks",
        "UPDATE file_chunks SET data = x'00'",
        "UPDATE file_contents SET byte_count = 1",
        "DELETE FROM map_outcomes",
        "UPDATE map_outcomes SET status = 'failed'",
        "DELETE FROM map_inputs",
    ] {
        let err = conn.execute(statement, []).unwrap_err().to_string();
        assert!(err.contains("append-only"), "{statement}: {err}");
    }
}

#[test]
fn an_item_succeeds_at_most_once_and_failures_accumulate() {
    let (_dir, _, mut store) = temp_store();
    let map_id = store.create_map("llm", None, "{}", &["1".into()]).unwrap();
    let failure = MapOutcome {
        idx: 0,
        error_kind: Some("timeout".into()),
        error: Some("took too long".into()),
        attempts: 3,
        usage: "{}".into(),
        ..MapOutcome::default()
    };
    store.record_map_outcome(&map_id, &failure).unwrap();
    let success = MapOutcome {
        succeeded: true,
        output: Some("1".into()),
        ..failure.clone()
    };
    store.record_map_outcome(&map_id, &success).unwrap();
    assert!(matches!(
        store.record_map_outcome(&map_id, &success),
        Err(Error::AlreadySucceeded(_))
    ));
    let outcomes = store.map_outcomes(&map_id).unwrap();
    assert_eq!(outcomes.len(), 2);
    assert!(!outcomes[0].succeeded && outcomes[1].succeeded);
    let out_of_range = MapOutcome { idx: 1, ..failure };
    assert!(matches!(
        store.record_map_outcome(&map_id, &out_of_range),
        Err(Error::InvalidInput { .. })
    ));
}

#[test]
fn child_sessions_are_listed_under_their_parent() {
    let (_dir, _, mut store) = temp_store();
    let map_id = store
        .create_map(
            "agentic",
            Some("ses_parent"),
            "{}",
            &["1".into(), "2".into()],
        )
        .unwrap();
    let second = store
        .create_child_session("gpt-4o", "{}", None, "ses_parent", &map_id, 1)
        .unwrap();
    let first = store
        .create_child_session("gpt-4o", "{}", None, "ses_parent", &map_id, 0)
        .unwrap();
    let children: Vec<String> = store
        .child_sessions("ses_parent")
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(children, vec![first.clone(), second]);
    assert_eq!(store.item_session(&map_id, 0).unwrap(), Some(first));
    assert_eq!(store.item_session(&map_id, 5).unwrap(), None);
}

#[test]
fn a_version_5_file_gets_the_file_and_map_tables_and_keeps_its_rows() {
    let (_dir, path, mut store) = temp_store();
    let session = store.create_session("gpt-4o", "{}", None).unwrap();
    drop(store);
    // A version 5 file: today's schema without the tables version 7 added.
    let conn = raw(&path);
    for table in [
        "file_contents",
        "file_chunks",
        "map_runs",
        "map_inputs",
        "map_outcomes",
        "session_parents",
    ] {
        conn.execute_batch(&format!("DROP TABLE {table}")).unwrap();
    }
    conn.execute_batch("PRAGMA user_version = 5").unwrap();
    drop(conn);
    let mut store = Store::open(&path, &OpenOptions::default()).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(store.list_sessions().unwrap()[0].id, session);
    let map_id = store.create_map("llm", None, "{}", &["1".into()]).unwrap();
    assert_eq!(store.map_inputs(&map_id).unwrap(), vec!["1".to_string()]);
    let err = raw(&path)
        .execute("DELETE FROM map_runs", [])
        .unwrap_err()
        .to_string();
    assert!(err.contains("append-only"));
}
