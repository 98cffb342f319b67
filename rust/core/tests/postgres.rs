//! The PostgreSQL backend's groundwork against a real throwaway server: the schema
//! beside SQLite's, migrations, append-only triggers, typed errors that hide the
//! password, the compaction lease as a lock, and full-text terms under a GIN index.

mod pg_cluster;

use std::collections::{BTreeMap, BTreeSet};

use lossless_core::lang::Language;
use lossless_core::pg::{self, fts, lease, Database};
use lossless_core::query::{self, Terms};
use lossless_core::store::{schema::SCHEMA_VERSION, OpenOptions, Store};
use lossless_core::Error;
use pg_cluster::database;

fn open(db: &pg_cluster::Database) -> Database {
    Database::open(&db.url()).expect("open the PostgreSQL database")
}

/// Every table of a new SQLite store and its columns, without the full-text
/// index's virtual tables.
fn sqlite_tables() -> BTreeMap<String, BTreeSet<String>> {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("store.db");
    let path = path.to_str().expect("a UTF-8 path");
    drop(Store::open(path, &OpenOptions::default()).expect("a SQLite store"));
    let conn = rusqlite::Connection::open(path).expect("raw connection");
    let mut names = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table'
             AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'fts%'",
        )
        .expect("tables");
    let tables: Vec<String> = names
        .query_map([], |row| row.get(0))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("names");
    tables
        .into_iter()
        .map(|table| {
            let mut info = conn
                .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
                .expect("columns");
            let columns = info
                .query_map([], |row| row.get(0))
                .expect("rows")
                .collect::<Result<_, _>>()
                .expect("names");
            (table, columns)
        })
        .collect()
}

fn postgres_tables(client: &mut postgres::Client) -> BTreeMap<String, BTreeSet<String>> {
    let mut tables: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for row in client
        .query(
            "SELECT table_name::text, column_name::text FROM information_schema.columns
             WHERE table_schema = current_schema()",
            &[],
        )
        .expect("columns")
    {
        tables.entry(row.get(0)).or_default().insert(row.get(1));
    }
    tables
}

#[test]
fn the_schema_has_every_table_and_column_of_the_sqlite_one() {
    assert_eq!(pg::schema::SCHEMA_VERSION, SCHEMA_VERSION);
    let db = database();
    let mut store = open(&db);
    let mut ours = postgres_tables(store.client());
    // Its own: the version row, and the full-text index in place of FTS5's table.
    assert!(ours.remove("lossless_schema").is_some());
    let index = ours.remove("search_index").expect("search_index");
    assert!(index.contains("terms") && index.contains("fts_rowid"));
    // SQLite's erasure grant is a transaction's setting here (`lossless.erasing`).
    let mut theirs = sqlite_tables();
    assert!(theirs.remove("erasure_grants").is_some());
    // Each tenant table's own: the tenant of its rows.
    assert!(index.contains("tenant"));
    for table in pg::schema::TENANT_TABLES {
        if let Some(columns) = ours.get_mut(table) {
            assert!(columns.remove("tenant"), "{table} has a tenant");
        }
    }
    assert_eq!(ours, theirs);
}

#[test]
fn a_second_open_finds_the_schema_and_creates_nothing() {
    let db = database();
    let mut first = open(&db);
    first
        .client()
        .execute(
            "INSERT INTO sessions (id, model, created_at, config) VALUES ('s', 'm', 1, '{}')",
            &[],
        )
        .expect("a session");
    let mut second = open(&db);
    assert_eq!(
        pg::stored_version(second.client()).expect("version"),
        Some(SCHEMA_VERSION)
    );
    let sessions: i64 = second
        .client()
        .query_one("SELECT count(*) FROM sessions", &[])
        .expect("count")
        .get(0);
    assert_eq!(sessions, 1);
}

#[test]
fn workers_opening_a_new_database_together_create_its_schema_once() {
    let db = database();
    let url = db.url();
    let workers: Vec<_> = (0..6)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || Database::open(&url).map(|_| ()))
        })
        .collect();
    for worker in workers {
        worker.join().expect("worker").expect("open");
    }
    let mut admin = db.admin();
    let versions: i64 = admin
        .query_one("SELECT count(*) FROM lossless_schema", &[])
        .expect("count")
        .get(0);
    assert_eq!(versions, 1);
}

/// Workers that found no schema and then waited for the migration lock: each must
/// see the schema the first one created once the lock is theirs, however long it
/// waited, and never take it for another application's tables.
#[test]
fn workers_that_waited_for_the_migration_lock_find_the_schema_created_meanwhile() {
    let db = database();
    let url = db.url();
    let mut holder = db.admin();
    holder
        .execute("SELECT pg_advisory_lock($1)", &[&pg::MIGRATION_LOCK])
        .expect("hold the migration lock");
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || Database::open(&url).map(|_| ()))
        })
        .collect();
    wait_for_lock_waiters(&mut holder, 4);
    holder
        .execute("SELECT pg_advisory_unlock($1)", &[&pg::MIGRATION_LOCK])
        .expect("release the migration lock");
    for worker in workers {
        worker.join().expect("worker").expect("open");
    }
}

/// Waits until `count` other connections wait for an advisory lock.
fn wait_for_lock_waiters(client: &mut postgres::Client, count: i64) {
    for _ in 0..500 {
        let waiting: i64 = client
            .query_one(
                "SELECT count(*) FROM pg_locks
                 WHERE locktype = 'advisory' AND NOT granted
                   AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                &[],
            )
            .expect("pg_locks")
            .get(0);
        if waiting >= count {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("the workers never waited for the migration lock");
}

fn session_and_message(client: &mut postgres::Client) {
    client
        .batch_execute(
            "INSERT INTO sessions (id, model, created_at, config) VALUES ('ses_1', 'm', 1, '{}');
             INSERT INTO messages (id, session_id, seq, role, created_at, status)
                 VALUES ('msg_1', 'ses_1', 1, 'user', 1, 'streaming');",
        )
        .expect("a session and a message");
}

fn immutable(result: Result<u64, postgres::Error>) -> String {
    match pg::from_postgres(&result.expect_err("refused")) {
        Error::Immutable(text) => text,
        other => panic!("expected an immutability error, got {other:?}"),
    }
}

#[test]
fn stored_content_cannot_be_rewritten_deleted_or_truncated() {
    let db = database();
    let mut store = open(&db);
    let client = store.client();
    session_and_message(client);
    let text = immutable(client.execute(
        "UPDATE messages SET role = 'assistant' WHERE id = 'msg_1'",
        &[],
    ));
    assert!(
        text.contains("only unset token, cost and finish fields"),
        "{text}"
    );
    immutable(client.execute("DELETE FROM messages", &[]));
    immutable(client.execute("TRUNCATE messages CASCADE", &[]));
    immutable(client.execute(
        "INSERT INTO messages (id, session_id, seq, role, created_at, status)
         VALUES ('msg_1', 'ses_1', 2, 'user', 1, 'complete')",
        &[],
    ));
    immutable(client.execute(
        "INSERT INTO sessions (id, model, created_at, config) VALUES ('ses_1', 'other', 1, '{}')
         ON CONFLICT (id) DO UPDATE SET model = excluded.model",
        &[],
    ));
    // What the store may still write: the fields of a reply as it finishes.
    client
        .execute(
            "UPDATE messages SET status = 'complete', token_count = 5 WHERE id = 'msg_1'",
            &[],
        )
        .expect("finishing a reply is allowed");
    immutable(client.execute(
        "UPDATE messages SET token_count = 6 WHERE id = 'msg_1'",
        &[],
    ));
    // The view is the one mutable table.
    client
        .batch_execute(
            "INSERT INTO context_items VALUES ('ses_1', 1, 'message', 'msg_1', 5);
             DELETE FROM context_items;",
        )
        .expect("the view changes");
}

#[test]
fn every_append_only_table_refuses_delete_and_truncate() {
    let db = database();
    let mut store = open(&db);
    let client = store.client();
    for table in [
        "sessions",
        "messages",
        "parts",
        "tool_outputs",
        "summaries",
        "summary_sources",
        "file_refs",
        "events",
        "arena_entries",
        "file_contents",
        "file_chunks",
        "map_runs",
        "map_inputs",
        "map_outcomes",
        "session_parents",
    ] {
        let text = immutable(client.execute(&format!("TRUNCATE {table} CASCADE"), &[]));
        assert!(text.contains(table), "{text}");
        let triggers: i64 = client
            .query_one(
                "SELECT count(*) FROM pg_trigger WHERE tgrelid = $1::text::regclass
                 AND NOT tgisinternal",
                &[&table],
            )
            .expect("triggers")
            .get(0);
        assert_eq!(triggers, 3, "{table}");
    }
}

#[test]
fn an_unreachable_server_is_named_without_its_password() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("port")
        .local_addr()
        .expect("address")
        .port();
    // Nothing listens on the port once the probe is dropped.
    let url = format!("postgresql://app:hunter2secret@127.0.0.1:{port}/db");
    let err = Database::open(&url).err().expect("refused");
    assert!(matches!(err, Error::CannotOpen { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains(&format!("postgresql://app:***@127.0.0.1:{port}/db")),
        "{text}"
    );
    assert!(!text.contains("hunter2secret"), "{text}");
}

#[test]
fn wrong_credentials_are_refused_as_access_denied() {
    let db = database();
    let err = Database::open(&db.url_with_password("not-the-password"))
        .err()
        .expect("refused");
    assert!(matches!(err, Error::AccessDenied { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("password authentication failed"), "{text}");
    assert!(!text.contains("not-the-password"), "{text}");
    let no_password = db.url_with_password("").replace(":@", "@");
    let err = Database::open(&no_password).err().expect("refused");
    assert!(matches!(err, Error::AccessDenied { .. }), "{err:?}");
}

#[test]
fn a_missing_database_cannot_be_opened() {
    let db = database();
    let url = db.url().replace(&db.name, "no_such_database");
    let err = Database::open(&url).err().expect("refused");
    assert!(matches!(err, Error::CannotOpen { .. }), "{err:?}");
    assert!(err.to_string().contains("no_such_database"), "{err}");
    assert!(
        !err.to_string().contains(&pg_cluster::cluster().password),
        "{err}"
    );
}

#[test]
fn a_database_of_another_application_is_refused_untouched() {
    let db = database();
    let mut admin = db.admin();
    admin
        .batch_execute("CREATE TABLE invoices (id int); GRANT ALL ON invoices TO lossless;")
        .expect("another application's table");
    let err = Database::open(&db.url()).err().expect("refused");
    assert!(matches!(err, Error::NotADatabase { .. }), "{err:?}");
    assert!(err.to_string().contains("another application"), "{err}");
    let tables: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'",
            &[],
        )
        .expect("count")
        .get(0);
    assert_eq!(tables, 1);
}

#[test]
fn a_schema_newer_than_this_build_is_refused() {
    let db = database();
    open(&db)
        .client()
        .execute("UPDATE lossless_schema SET version = 99", &[])
        .expect("a newer version");
    let err = Database::open(&db.url()).err().expect("refused");
    match &err {
        Error::SchemaTooNew {
            found,
            supported,
            path,
        } => {
            assert_eq!((*found, *supported), (99, SCHEMA_VERSION));
            assert!(path.contains("***") && !path.contains(&pg_cluster::cluster().password));
        }
        other => panic!("expected SchemaTooNew, got {other:?}"),
    }
}

#[test]
fn a_version_8_database_gets_the_arena_s_cut_counts() {
    let db = database();
    // The version 8 layout: the arena's table without `full_tokens`.
    open(&db)
        .client()
        .batch_execute(
            "ALTER TABLE arena_entries DROP COLUMN full_tokens;
             DROP TABLE media; DROP INDEX parts_media;
             DROP TABLE session_keys, session_forks, sync_inputs;
             DROP TABLE erasure_receipts, session_subjects, retention_rules, store_keys;
             DROP TABLE ledger_items, ledger_marks;
             DROP FUNCTION lossless_keep_receipts();
             UPDATE lossless_schema SET version = 8;",
        )
        .expect("a version 8 schema");
    let mut upgraded = open(&db);
    let columns: i64 = upgraded
        .client()
        .query_one(
            "SELECT count(*) FROM information_schema.columns
             WHERE table_name = 'arena_entries' AND column_name = 'full_tokens'",
            &[],
        )
        .expect("columns")
        .get(0);
    let version: i64 = upgraded
        .client()
        .query_one("SELECT version FROM lossless_schema", &[])
        .expect("version")
        .get(0);
    assert_eq!((columns, version), (1, SCHEMA_VERSION));
}

/// The kind constraint's definition as the server holds it.
fn kind_constraint(client: &mut postgres::Client) -> String {
    client
        .query_one(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint
             WHERE conrelid = 'parts'::regclass AND conname = 'parts_kind_check'",
            &[],
        )
        .expect("the kind constraint")
        .get(0)
}

#[test]
fn a_version_9_database_takes_reasoning_parts_with_every_row_kept() {
    use lossless_core::parts::{Part, Reasoning, Role};

    let db = database();
    let mut store = Store::open(&db.url(), &OpenOptions::default()).expect("a store");
    let session = store
        .create_session("anthropic/claude-sonnet-4-5", "{}", None)
        .expect("a session");
    let said = [Part::Text("settle the ledger".into())];
    store
        .append_message(&session, Role::User, &said, None)
        .expect("a turn");
    drop(store);
    let fresh = kind_constraint(open(&db).client());
    // The version 9 layout: the column's constraint as version 9 declared it,
    // unnamed (PostgreSQL names it `parts_kind_check`).
    let mut admin = db.admin();
    admin
        .batch_execute(
            "ALTER TABLE parts DROP CONSTRAINT parts_kind_check;
             ALTER TABLE parts ADD CHECK (kind IN ('text', 'tool', 'file_ref', 'compaction_marker'));
             DROP TABLE media; DROP INDEX parts_media;
             DROP TABLE session_keys, session_forks, sync_inputs;
             DROP TABLE erasure_receipts, session_subjects, retention_rules, store_keys;
             DROP TABLE ledger_items, ledger_marks;
             DROP FUNCTION lossless_keep_receipts();
             UPDATE lossless_schema SET version = 9;",
        )
        .expect("a version 9 schema");
    assert!(!kind_constraint(&mut admin).contains("reasoning"));

    let mut store = Store::open(&db.url(), &OpenOptions::default()).expect("the upgrade");
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(kind_constraint(&mut admin), fresh);
    let reasoning = Part::Reasoning(Reasoning {
        provider: "anthropic".into(),
        text: Some("read it first".into()),
        payload: Some(
            r#"{"type": "thinking", "thinking": "read it first", "signature": "c2ln"}"#.into(),
        ),
    });
    store
        .append_message(
            &session,
            Role::Assistant,
            std::slice::from_ref(&reasoning),
            None,
        )
        .expect("a reasoning part");
    let history = store.history(&session).unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[0].parts[0].part, said[0]);
    assert_eq!(history[1].parts[0].part, reasoning);
    let refused = admin.execute(
        "INSERT INTO parts (id, message_id, session_id, msg_seq, ord, kind, body, token_count)
         VALUES ('prt_x', $1, $2, 2, 1, 'hologram', '{}', 0)",
        &[&history[1].id, &session],
    );
    assert!(refused.is_err());
}

#[test]
fn a_version_11_database_takes_provider_compaction_parts() {
    use lossless_core::parts::{Part, ProviderCompaction, Role};

    let db = database();
    let mut store = Store::open(&db.url(), &OpenOptions::default()).expect("a store");
    let session = store
        .create_session("anthropic/claude-sonnet-4-5", "{}", None)
        .expect("a session");
    drop(store);
    let fresh = kind_constraint(open(&db).client());
    // The version 11 layout: its kinds, before provider_compaction.
    let mut admin = db.admin();
    admin
        .batch_execute(
            "DROP INDEX parts_provider_compaction;
             ALTER TABLE parts DROP CONSTRAINT parts_kind_check,
             ADD CONSTRAINT parts_kind_check CHECK (kind IN
                 ('text', 'tool', 'file_ref', 'reasoning', 'media', 'compaction_marker'));
             DROP TABLE session_keys, session_forks, sync_inputs;
             DROP TABLE erasure_receipts, session_subjects, retention_rules, store_keys;
             DROP TABLE ledger_items, ledger_marks;
             DROP FUNCTION lossless_keep_receipts();
             UPDATE lossless_schema SET version = 11;",
        )
        .expect("a version 11 schema");
    assert!(!kind_constraint(&mut admin).contains("provider_compaction"));

    let mut store = Store::open(&db.url(), &OpenOptions::default()).expect("the upgrade");
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(kind_constraint(&mut admin), fresh);
    let block = Part::ProviderCompaction(ProviderCompaction {
        provider: "anthropic".into(),
        text: Some("The ledger balances.".into()),
        payload: r#"{"type": "compaction", "content": "The ledger balances."}"#.into(),
    });
    store
        .append_message(
            &session,
            Role::Assistant,
            std::slice::from_ref(&block),
            None,
        )
        .expect("a compaction part");
    assert_eq!(store.history(&session).unwrap()[0].parts[0].part, block);
}

#[test]
fn a_text_that_is_not_a_url_is_invalid_input() {
    let err = Database::open("postgresql://app:pw@127.0.0.1:notaport/db")
        .err()
        .expect("refused");
    assert!(matches!(err, Error::InvalidInput { .. }), "{err:?}");
    assert!(!err.to_string().contains(":pw@"), "{err}");
    // libpq's key=value strings are not taken: only a URL's password can be hidden.
    let err = Database::open("host=127.0.0.1 password=secret")
        .err()
        .expect("refused");
    assert!(matches!(err, Error::InvalidInput { .. }), "{err:?}");
}

#[test]
fn a_connection_lost_mid_transaction_writes_nothing() {
    let db = database();
    let mut store = open(&db);
    let mut admin = db.admin();
    let mut tx = store.client().transaction().expect("transaction");
    tx.execute(
        "INSERT INTO sessions (id, model, created_at, config) VALUES ('ses_x', 'm', 1, '{}')",
        &[],
    )
    .expect("insert");
    admin
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
            &[],
        )
        .expect("terminate");
    let err = tx.commit().expect_err("the connection is gone");
    let err = pg::from_postgres(&err).with_path(store.url());
    assert!(matches!(err, Error::Io { .. }), "{err:?}");
    let sessions: i64 = admin
        .query_one("SELECT count(*) FROM sessions", &[])
        .expect("count")
        .get(0);
    assert_eq!(sessions, 0);
}

fn connect(db: &pg_cluster::Database) -> postgres::Client {
    pg::connect(&db.url()).expect("connect")
}

#[test]
fn one_connection_at_a_time_holds_a_sessions_compaction_lease() {
    let db = database();
    let (mut first, mut second) = (connect(&db), connect(&db));
    assert!(!lease::is_held(&mut first, "ses_a").expect("held?"));
    assert!(lease::try_acquire(&mut first, "ses_a").expect("acquire"));
    assert!(lease::is_held(&mut second, "ses_a").expect("held?"));
    assert!(!lease::try_acquire(&mut second, "ses_a").expect("acquire"));
    // Another session's lease is free.
    assert!(lease::try_acquire(&mut second, "ses_b").expect("acquire"));
    assert!(lease::release(&mut first, "ses_a").expect("release"));
    assert!(!lease::release(&mut first, "ses_a").expect("release twice"));
    assert!(lease::try_acquire(&mut second, "ses_a").expect("acquire"));
}

#[test]
fn a_lease_is_freed_when_its_connection_ends() {
    let db = database();
    let mut holder = connect(&db);
    let mut other = connect(&db);
    assert!(lease::try_acquire(&mut holder, "ses_a").expect("acquire"));
    drop(holder);
    // The server notices the closed socket at once, but ends the backend on its own time.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !lease::try_acquire(&mut other, "ses_a").expect("acquire") {
        assert!(
            std::time::Instant::now() < deadline,
            "the lease was never freed"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn lease_keys_are_stable_and_differ_by_session() {
    assert_eq!(lease::lease_key("ses_a"), lease::lease_key("ses_a"));
    assert_ne!(lease::lease_key("ses_a"), lease::lease_key("ses_b"));
}

fn index(client: &mut postgres::Client, rowid: i64, text: &str) {
    let (terms, _) = fts::document_vector(text);
    client
        .execute(
            "INSERT INTO search_index (fts_rowid, session_id, owner_id, part_id, body, terms)
             VALUES ($1, 's', 'o', 'p', $2, $3::text::tsvector)",
            &[&rowid, &text, &terms],
        )
        .expect("index a document");
}

fn search(client: &mut postgres::Client, text: &str, languages: &[Language]) -> Vec<i64> {
    let parsed = query::parse(text, &Terms::Stemmed(languages.to_vec())).expect("a query");
    let literal = fts::query_literal(&parsed, languages);
    client
        .query(
            "SELECT fts_rowid FROM search_index, (SELECT $1::text::tsquery AS q) AS query
             WHERE terms @@ q ORDER BY ts_rank_cd(terms, q) DESC, fts_rowid",
            &[&literal],
        )
        .expect("search")
        .iter()
        .map(|row| row.get(0))
        .collect()
}

#[test]
fn full_text_search_stems_each_document_in_its_language() {
    let db = database();
    let mut store = open(&db);
    let client = store.client();
    index(
        client,
        1,
        "The runners kept running through the rain, and it's running still.",
    );
    index(
        client,
        2,
        "Les chats mangeaient les croquettes pendant que la pluie tombait.",
    );
    index(
        client,
        3,
        "Nothing about that here: only a deployment note for the cluster.",
    );
    let both = [Language::English, Language::French];
    assert_eq!(search(client, "run", &both), vec![1]);
    assert_eq!(search(client, "chat", &both), vec![2]);
    assert_eq!(search(client, "\"kept running\"", &both), vec![1]);
    assert_eq!(search(client, "\"running kept\"", &both), Vec::<i64>::new());
    // Stopwords are kept: a query of only stopwords still finds its documents.
    let mut only_stopwords = search(client, "the", &both);
    only_stopwords.sort_unstable();
    assert_eq!(only_stopwords, vec![1, 3]);
    // Optional words rank: the document holding more of them comes first.
    assert_eq!(search(client, "deployment cluster rain", &both), vec![3, 1]);
    // Quotes and backslashes in a document are only characters.
    index(client, 4, r"it's a 'quoted' back\slash");
    assert_eq!(search(client, "slash", &both), vec![4]);
}

#[test]
fn the_gin_index_serves_full_text_queries() {
    let db = database();
    let mut store = open(&db);
    let client = store.client();
    for rowid in 1..=200 {
        index(
            client,
            rowid,
            &format!("document number {rowid} about topic{}", rowid % 7),
        );
    }
    client
        .batch_execute("ANALYZE search_index; SET enable_seqscan = off;")
        .expect("analyze");
    let plan: Vec<String> = client
        .query(
            "EXPLAIN SELECT fts_rowid FROM search_index WHERE terms @@ $1::text::tsquery",
            &[&"'topic3'"],
        )
        .expect("explain")
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert!(
        plan.iter().any(|line| line.contains("search_index_terms")),
        "{plan:#?}"
    );
    assert_eq!(search(client, "topic3", &[Language::English]).len(), 29);
}
