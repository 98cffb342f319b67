//! Search in many languages: each document is stemmed in its own language, and
//! a query finds other forms of its words in every language the index holds.

mod support;

use lossless_core::parts::Role;
use lossless_core::store::{GrepMode, OpenOptions, Store};
use rusqlite::Connection;
use support::{append, raw, temp_store, text};

fn owners(store: &mut Store, session: &str, query: &str) -> Vec<String> {
    store
        .grep(query, Some(session), GrepMode::Text, 10)
        .unwrap()
        .into_iter()
        .map(|hit| hit.owner_id)
        .collect()
}

#[test]
fn a_query_finds_other_forms_of_its_words_in_each_language() {
    let (_dir, path, mut store) = temp_store();
    let session = store.create_session(support::MODEL, "{}", None).unwrap();
    let documents = [
        (
            "The deploy keys were rotated after the audit and stored in the vault.",
            "rotating key",
        ),
        (
            "Die Prüfungen der Schlüssel sind abgeschlossen und die Berichte liegen im Tresor.",
            "Prüfung Bericht",
        ),
        (
            "Les élèves ont terminé les examens et les résultats sont dans le coffre.",
            "élève résultat",
        ),
        (
            "Los informes de las auditorías están guardados en la bóveda del banco.",
            "informe auditoría",
        ),
        (
            "Ключи были заменены после проверки и хранятся в сейфе банка.",
            "ключ проверка",
        ),
        ("東京都の人口は千四百万人を超えています。", "東京都"),
    ];
    let mut ids = Vec::new();
    for (document, _) in documents {
        ids.push(append(&mut store, &session, Role::User, &[text(document)]));
    }
    for ((_, query), id) in documents.iter().zip(&ids) {
        let found = owners(&mut store, &session, query);
        assert_eq!(found.first(), Some(id), "{query}: {found:?}");
    }
    let languages: Vec<String> = raw(&path)
        .prepare("SELECT code FROM search_languages ORDER BY code")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(languages, ["de", "en", "es", "fr", "ru"]);
}

#[test]
fn a_word_is_stemmed_only_in_the_languages_the_index_holds() {
    let (_dir, _path, mut store) = temp_store();
    let session = store.create_session(support::MODEL, "{}", None).unwrap();
    append(
        &mut store,
        &session,
        Role::User,
        &[text("the rats ran off")],
    );
    // Spanish, French or Italian would stem "rates" to "rat"; the index holds English only.
    assert!(owners(&mut store, &session, "rates").is_empty());
    let snippet = store
        .grep("ran rats", Some(&session), GrepMode::Text, 1)
        .unwrap()[0]
        .snippet
        .clone();
    assert!(snippet.contains("[rats]"), "{snippet}");
}

#[test]
fn a_reader_learns_the_languages_another_connection_indexed() {
    let (_dir, path, mut writer) = temp_store();
    let session = writer.create_session(support::MODEL, "{}", None).unwrap();
    let mut reader = Store::open_read_only(&path, &OpenOptions::default()).unwrap();
    let id = append(
        &mut writer,
        &session,
        Role::User,
        &[text(
            "Die Berichte der Prüfungen liegen im Tresor der Bank.",
        )],
    );
    // Still queued: the reader indexes it in its own temporary index.
    assert_eq!(
        owners(&mut reader, &session, "Prüfung"),
        std::slice::from_ref(&id)
    );
    writer.flush_search_index().unwrap();
    let mut fresh = Store::open_read_only(&path, &OpenOptions::default()).unwrap();
    assert_eq!(owners(&mut fresh, &session, "Prüfung"), [id]);
}

const SCHEMA_V5: &str = include_str!("fixtures/schema_v5.sql");

/// A version-5 file (`porter` index) with one indexed message.
fn version_5_file(path: &str) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(SCHEMA_V5).unwrap();
    conn.execute_batch(
        r"
        INSERT INTO sessions (id, model, created_at, config, view_version, next_seq, next_position)
            VALUES ('ses_5', 'gpt-4o', 1, '{}', 1, 2, 2);
        INSERT INTO messages (id, session_id, seq, role, created_at, status, token_count)
            VALUES ('msg_1', 'ses_5', 1, 'user', 1, 'complete', 9);
        INSERT INTO parts (pk, id, message_id, session_id, msg_seq, ord, kind, body, token_count)
            VALUES (1, 'prt_1', 'msg_1', 'ses_5', 1, 0, 'text', 'the key rotates weekly', 5);
        INSERT INTO context_items (session_id, position, kind, item_id, token_count)
            VALUES ('ses_5', 1, 'message', 'msg_1', 9);
        INSERT INTO fts (rowid, body, session_id, owner_id, part_id)
            VALUES (1, 'the key rotates weekly', 'ses_5', 'msg_1', 'prt_1');
        ",
    )
    .unwrap();
}

#[test]
fn a_version_5_file_is_searched_as_it_is_read_only_and_migrated_when_opened() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v5.db");
    let path = path.to_str().unwrap();
    version_5_file(path);
    let mut reader = Store::open_read_only(path, &OpenOptions::default()).unwrap();
    assert_eq!(owners(&mut reader, "ses_5", "rotating keys"), ["msg_1"]);
    drop(reader);
    let mut store = Store::open(path, &OpenOptions::default()).unwrap();
    let fts_sql: String = raw(path)
        .query_row(
            "SELECT sql FROM sqlite_master WHERE name = 'fts'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert!(fts_sql.contains("'lossless'"), "{fts_sql}");
    assert_eq!(owners(&mut store, "ses_5", "rotating keys"), ["msg_1"]);
}
