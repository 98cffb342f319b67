//! Encryption at rest: a store opened with a key writes nothing readable to its
//! files, reads back with the key, and refuses a wrong key, a missing one and a
//! key for a plain file with `Error::EncryptionKey`, leaving the file untouched.

mod support;

use lossless_core::parts::Role;
use lossless_core::store::{encrypt_copy, DatabaseKey, GrepMode, OpenOptions, Store};
use lossless_core::Error;

const PLANTED: &str = "quetzalcoatl-ledger-7731";

fn keyed(byte: u8) -> OpenOptions {
    OpenOptions::default().with_key(Some(DatabaseKey::new(&[byte; 32]).unwrap()))
}

fn files_of(path: &str) -> Vec<Vec<u8>> {
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|suffix| std::fs::read(format!("{path}{suffix}")).ok())
        .collect()
}

fn holds(bytes: &[u8], needle: &str) -> bool {
    bytes
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

fn planted_store(path: &str, options: &OpenOptions) -> (Store, String) {
    let mut store = Store::open(path, options).unwrap();
    let session = store.create_session(support::MODEL, "{}", None).unwrap();
    let parts = [
        support::text(&format!("remember {PLANTED} for the audit")),
        support::tool("read_file", "call_1", &format!("ledger line: {PLANTED}")),
    ];
    support::append(&mut store, &session, Role::User, &parts);
    (store, session)
}

#[test]
fn a_keyed_store_writes_no_plaintext_and_reads_back_with_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("secret.db").to_string_lossy().into_owned();
    let (store, session) = planted_store(&path, &keyed(3));
    for bytes in files_of(&path) {
        assert!(!holds(&bytes, PLANTED));
        assert!(!holds(&bytes, "SQLite format 3"));
    }
    store.close();
    for bytes in files_of(&path) {
        assert!(!holds(&bytes, PLANTED));
    }
    let mut store = Store::open(&path, &keyed(3)).unwrap();
    let hits = store.grep(PLANTED, None, GrepMode::Text, 5).unwrap();
    assert_eq!(hits.len(), 2);
    let history = store.history(&session).unwrap();
    assert_eq!(history.len(), 1);
}

#[test]
fn a_wrong_key_no_key_and_a_key_for_a_plain_file_are_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("secret.db").to_string_lossy().into_owned();
    planted_store(&path, &keyed(3)).0.close();
    let before = std::fs::read(&path).unwrap();
    for options in [keyed(4), OpenOptions::default()] {
        let err = Store::open(&path, &options).err().unwrap();
        assert!(
            matches!(&err, Error::EncryptionKey { path: at, .. } if *at == path),
            "{err}"
        );
        let err = Store::open_read_only(&path, &options).err().unwrap();
        assert!(matches!(err, Error::EncryptionKey { .. }), "{err}");
    }
    assert_eq!(std::fs::read(&path).unwrap(), before);

    let plain = dir.path().join("plain.db").to_string_lossy().into_owned();
    planted_store(&plain, &OpenOptions::default()).0.close();
    let before = std::fs::read(&plain).unwrap();
    let err = Store::open(&plain, &keyed(3)).err().unwrap();
    assert!(err.to_string().contains("not encrypted"), "{err}");
    assert_eq!(std::fs::read(&plain).unwrap(), before);
}

#[test]
fn a_key_is_refused_on_a_postgres_url() {
    let err = Store::open("postgresql://u@127.0.0.1:1/db", &keyed(1))
        .err()
        .unwrap();
    assert!(matches!(err, Error::InvalidInput { field, .. } if field == "encryption_key"));
}

#[test]
fn a_plain_database_is_copied_encrypted() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.db").to_string_lossy().into_owned();
    let secret = dir.path().join("secret.db").to_string_lossy().into_owned();
    let (store, session) = planted_store(&plain, &OpenOptions::default());
    let version = store.schema_version().unwrap();
    store.close();
    let key = DatabaseKey::new(&[9; 32]).unwrap();
    encrypt_copy(&plain, &secret, &key).unwrap();
    assert!(!holds(&std::fs::read(&secret).unwrap(), PLANTED));
    let mut store = Store::open(&secret, &keyed(9)).unwrap();
    assert_eq!(store.schema_version().unwrap(), version);
    assert_eq!(store.history(&session).unwrap().len(), 1);
    let hits = store.grep(PLANTED, None, GrepMode::Text, 5).unwrap();
    assert_eq!(hits.len(), 2);
    // Never over an existing file.
    assert!(matches!(
        encrypt_copy(&plain, &secret, &key),
        Err(Error::InvalidInput { .. })
    ));
}
