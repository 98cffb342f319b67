//! Opening refuses what is not a usable lossless database before writing to it.

mod support;

use std::time::Duration;

use lossless_core::parts::{Part, Role};
use lossless_core::store::{Durability, OpenOptions, Store, MAX_BUSY_TIMEOUT_MS};
use lossless_core::Error;
use support::{raw, temp_store, MODEL};

/// The bytes of the main file of a store holding one session of 30 messages, closed.
fn closed_database() -> (tempfile::TempDir, Vec<u8>) {
    let (dir, path, mut store) = temp_store();
    let session = store.create_session(MODEL, "{}", None).unwrap();
    for turn in 0..30 {
        let text = Part::Text(format!("turn {turn}: {}", "lorem ipsum ".repeat(40)));
        store
            .append_message(&session, Role::User, &[text], None)
            .unwrap();
    }
    drop(store);
    let bytes = std::fs::read(&path).unwrap();
    (dir, bytes)
}

fn open(path: &std::path::Path) -> lossless_core::Result<Store> {
    Store::open(path.to_str().unwrap(), &OpenOptions::default())
}

#[test]
fn a_file_cut_short_is_damaged_and_stays_as_it_was() {
    let (dir, bytes) = closed_database();
    let cut = dir.path().join("cut.db");
    std::fs::write(&cut, &bytes[..5_000]).unwrap();
    let err = open(&cut).err().expect("a cut file is refused");
    assert!(matches!(&err, Error::Corrupt { path, .. } if path == cut.to_str().unwrap()));
    assert_eq!(std::fs::read(&cut).unwrap(), &bytes[..5_000]);
}

#[test]
fn the_main_file_of_a_database_in_use_holds_its_schema() {
    let (dir, path, mut store) = temp_store();
    let session = store.create_session(MODEL, "{}", None).unwrap();
    store
        .append_message(&session, Role::User, &[Part::Text("hi".into())], None)
        .unwrap();
    // The store is still open: its latest writes are in the -wal file only.
    let cut = dir.path().join("copy.db");
    let main = std::fs::read(&path).unwrap();
    std::fs::write(&cut, &main[..5_000.min(main.len())]).unwrap();
    assert!(matches!(open(&cut), Err(Error::Corrupt { .. })));
}

#[test]
fn a_database_of_another_application_is_refused_without_a_byte_changed() {
    let (dir, _, _) = temp_store();
    let path = dir.path().join("accounts.db");
    let conn = raw(path.to_str().unwrap());
    conn.execute_batch("CREATE TABLE accounts (owner TEXT); INSERT INTO accounts VALUES ('ada');")
        .unwrap();
    drop(conn);
    let before = std::fs::read(&path).unwrap();
    assert!(matches!(open(&path), Err(Error::NotADatabase { .. })));
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn a_lossless_version_without_its_tables_is_damaged() {
    let (dir, _, _) = temp_store();
    let path = dir.path().join("hollow.db");
    raw(path.to_str().unwrap())
        .execute_batch("PRAGMA user_version = 3")
        .unwrap();
    let err = open(&path).err().expect("refused");
    assert!(
        err.to_string().contains("tables are missing: sessions"),
        "{err}"
    );
}

#[test]
fn a_busy_timeout_sqlite_cannot_take_is_refused() {
    let (_dir, path, _) = temp_store();
    for ms in [-1, i64::from(i32::MAX) + 1, i64::MAX] {
        assert!(matches!(
            OpenOptions::new(Durability::Normal, ms),
            Err(Error::InvalidInput { field, .. }) if field == "busy_timeout_ms"
        ));
    }
    let options = OpenOptions {
        busy_timeout: Duration::from_millis(MAX_BUSY_TIMEOUT_MS + 1),
        ..OpenOptions::default()
    };
    assert!(matches!(
        Store::open(&path, &options),
        Err(Error::InvalidInput { .. })
    ));
    let longest = OpenOptions::new(Durability::Full, MAX_BUSY_TIMEOUT_MS as i64).unwrap();
    assert!(Store::open(&path, &longest).is_ok());
}
