//! Closing the last store of this process on a file leaves every write in the file
//! itself, even while another process keeps the file open.

mod support;

use lossless_core::parts::Role;
use lossless_core::store::{OpenOptions, Store};
use support::{append, raw, temp_store, text, MODEL};

/// The length of the write-ahead log beside `path` (0 when there is none).
fn log_len(path: &str) -> u64 {
    std::fs::metadata(format!("{path}-wal")).map_or(0, |meta| meta.len())
}

/// A session of `turns` messages, each long enough that the log outgrows the file.
fn fill(store: &mut Store, turns: usize) -> String {
    let session = store.create_session(MODEL, "{}", None).unwrap();
    for turn in 0..turns {
        let body = format!("turn {turn}: {}", "lorem ipsum dolor ".repeat(60));
        append(store, &session, Role::User, &[text(&body)]);
    }
    session
}

/// Messages of `session` in a copy of the main file alone, opened without lossless.
fn messages_in_copy(dir: &tempfile::TempDir, path: &str, session: &str) -> i64 {
    let copy = dir.path().join("copy.db");
    std::fs::copy(path, &copy).unwrap();
    let conn = raw(copy.to_str().unwrap());
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    conn.query_row(
        "SELECT count(*) FROM messages WHERE session_id = ?1",
        [session],
        |row| row.get(0),
    )
    .unwrap()
}

#[test]
fn the_last_store_to_close_empties_the_log_while_another_process_keeps_the_file_open() {
    let (dir, path, mut store) = temp_store();
    let other = Store::open(&path, &OpenOptions::default()).unwrap();
    // A connection of its own, as another process's would be: it keeps the file open,
    // so SQLite itself would leave the log as it is when this process's stores close.
    let elsewhere = raw(&path);
    let session = fill(&mut store, 300);
    store.close();
    assert!(
        log_len(&path) > 0,
        "another store of this process is still open"
    );
    other.close();
    assert_eq!(log_len(&path), 0);
    assert_eq!(messages_in_copy(&dir, &path, &session), 300);
    drop(elsewhere);
}

#[test]
fn a_reader_of_another_process_neither_fails_nor_holds_up_closing() {
    let (dir, path, mut store) = temp_store();
    let session = fill(&mut store, 100);
    let mut elsewhere = raw(&path);
    let reading = elsewhere.transaction().unwrap();
    let seen: i64 = reading
        .query_row("SELECT count(*) FROM messages", [], |row| row.get(0))
        .unwrap();
    assert_eq!(seen, 100);
    fill(&mut store, 20);
    // The reader's snapshot pins the log: the copy stops where it would wait.
    store.close();
    drop(reading);
    drop(elsewhere);
    // The last connection to close (the reader's) finishes it.
    assert_eq!(log_len(&path), 0);
    assert_eq!(messages_in_copy(&dir, &path, &session), 100);
}
