//! Forks and handed-over histories in the core: a fork reads its parent's messages
//! up to the fork point and numbers its own after it; the fork point of a history
//! that changed; a file of schema version 12 upgraded.

use lossless_core::parts::{Part, Role};
use lossless_core::store::schema::SCHEMA_VERSION;
use lossless_core::store::{GrepMode, OpenOptions, Store};
use lossless_core::sync::{chain_next, chain_seed, Digest};

fn store(dir: &tempfile::TempDir) -> Store {
    let path = dir.path().join("lineage.db");
    Store::open(path.to_str().unwrap(), &OpenOptions::default()).unwrap()
}

fn said(store: &mut Store, session: &str, role: Role, text: &str) -> i64 {
    store
        .append_message(session, role, &[Part::Text(text.into())], None)
        .unwrap();
    store.newest_seq(session).unwrap()
}

fn texts(store: &mut Store, session: &str) -> Vec<String> {
    store
        .history(session)
        .unwrap()
        .into_iter()
        .map(|message| match &message.parts[0].part {
            Part::Text(text) => text.clone(),
            other => format!("{other:?}"),
        })
        .collect()
}

#[test]
fn a_fork_reads_the_parents_messages_up_to_its_fork_point() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store(&dir);
    let parent = store.create_session("gpt-4o", "{}", None).unwrap();
    said(&mut store, &parent, Role::User, "one");
    let at = said(&mut store, &parent, Role::Assistant, "two");
    said(&mut store, &parent, Role::User, "three");
    let child = store.fork_session(&parent, at, 0, Some("k")).unwrap();
    assert_eq!(texts(&mut store, &child), ["one", "two"]);
    let own = said(&mut store, &child, Role::User, "three, edited");
    assert_eq!(own, at + 1);
    assert_eq!(texts(&mut store, &child), ["one", "two", "three, edited"]);
    assert_eq!(texts(&mut store, &parent), ["one", "two", "three"]);
    assert_eq!(
        store.session_for_key("k").unwrap().as_deref(),
        Some(child.as_str())
    );
    let lineage = store.lineage(&child).unwrap();
    assert_eq!(lineage.holder_of(1), Some(parent.as_str()));
    assert_eq!(lineage.holder_of(own), Some(child.as_str()));
    // A fork of the fork, before the first fork point: the grandparent's rows only.
    let grandchild = store.fork_session(&child, 1, 0, None).unwrap();
    assert_eq!(texts(&mut store, &grandchild), ["one"]);
    assert!(store.fork_session(&parent, 99, 0, None).is_err());
}

fn chain(n: usize) -> Vec<Digest> {
    let mut digest = chain_seed(None);
    (0..n)
        .map(|i| {
            digest = chain_next(&digest, &[i as u8; 32]);
            digest
        })
        .collect()
}

#[test]
fn the_fork_point_keeps_what_no_later_position_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store(&dir);
    let session = store.create_session("gpt-4o", "{}", None).unwrap();
    let digests = chain(4);
    // Positions 0 and 1 wrote messages 1 and 2; position 2 wrote 3; position 3 (a
    // tool result) changed message 2.
    for (position, low, high) in [(0, 1, 1), (1, 2, 2), (2, 3, 3), (3, 2, 3)] {
        let one = &digests[position..=position];
        store
            .sync_append(&session, position, one, &[(Some(low), high)])
            .unwrap();
    }
    let found = store.sync_match(&session, &digests).unwrap();
    assert_eq!((found.stored, found.first_difference), (4, None));
    let mut edited = digests.clone();
    edited[3] = [7; 16];
    let found = store.sync_match(&session, &edited).unwrap();
    assert_eq!(found.first_difference, Some(3));
    // Position 3 changed message 2: the fork shares message 1 only, and stores
    // positions 1.. again.
    let point = store.sync_fork_point(&session, 3, None).unwrap();
    assert_eq!((point.fork_seq, point.replay_from), (1, 1));
    let point = store.sync_fork_point(&session, 1, None).unwrap();
    assert_eq!((point.fork_seq, point.replay_from), (1, 1));
    let point = store.sync_fork_point(&session, 0, None).unwrap();
    assert_eq!((point.fork_seq, point.replay_from), (0, 0));
    // A shorter history differs where it ends.
    let found = store.sync_match(&session, &digests[..2]).unwrap();
    assert_eq!(found.first_difference, Some(2));
    // Positions must follow on.
    assert!(store
        .sync_append(&session, 7, &digests[..1], &[(None, 3)])
        .is_err());
}

#[test]
fn a_version_12_file_gets_the_tables_of_forks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lineage.db");
    let path = path.to_str().unwrap();
    let session = {
        let mut store = Store::open(path, &OpenOptions::default()).unwrap();
        let session = store.create_session("gpt-4o", "{}", None).unwrap();
        said(&mut store, &session, Role::User, "kept");
        session
    };
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(
        "DROP TABLE session_keys; DROP TABLE session_forks; DROP TABLE sync_inputs;
         PRAGMA user_version = 12;",
    )
    .unwrap();
    drop(conn);
    // Read-only, the file stays at version 12: it has no keys or forks, and reads of
    // its sessions work as before.
    let mut reader = Store::open_read_only(path, &OpenOptions::default()).unwrap();
    assert_eq!(reader.schema_version().unwrap(), 12);
    assert!(reader.fork_of(&session).unwrap().is_none());
    assert!(reader.key_of(&session).unwrap().is_none());
    assert!(reader.session_for_key("k").unwrap().is_none());
    assert_eq!(texts(&mut reader, &session), ["kept"]);
    let hits = reader
        .grep("kept", Some(&session), GrepMode::Text, 5)
        .unwrap();
    assert_eq!(hits.len(), 1);
    drop(reader);
    let mut store = Store::open(path, &OpenOptions::default()).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(texts(&mut store, &session), ["kept"]);
    let child = store.fork_session(&session, 1, 0, None).unwrap();
    assert_eq!(texts(&mut store, &child), ["kept"]);
}
