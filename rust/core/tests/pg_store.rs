//! The store on a PostgreSQL URL, against a real throwaway server: a session's
//! turns, its tool results, its assembled view, a compaction round, and what a
//! second store on the same database sees.

mod pg_cluster;
mod support;

use lossless_core::fileids::extract_file_ids;
use lossless_core::parts::{Part, Role, ToolStatus};
use lossless_core::plan::{RoundRules, Tail};
use lossless_core::store::{
    schema::SCHEMA_VERSION, GrepMode, ItemKind, LeafWriter, OpenOptions, Store,
};
use lossless_core::Error;
use pg_cluster::database;
use support::{append, text, tool, tool_with, words, MODEL};

fn open(url: &str) -> Store {
    Store::open(url, &OpenOptions::default()).expect("a store on PostgreSQL")
}

fn rules(soft_limit: i64) -> RoundRules {
    RoundRules {
        soft_limit,
        usable: i64::MAX,
        tail: Tail {
            user_turns: 2,
            max_tokens: RoundRules::default_tail_tokens(soft_limit),
            max_messages: 40,
        },
        prune_protect_tokens: 40_000,
        prune_minimum_tokens: 1,
        protected_tools: Vec::new(),
        summary_max_tokens: 2_000,
        leaf_chunk_tokens: 20_000,
    }
}

/// A session's turns and tool results, and a second worker's view of them.
fn records_turns(url: &str) {
    let mut store = open(url);
    let session = store
        .create_session(MODEL, "{}", Some("Be brief."))
        .unwrap();
    append(&mut store, &session, Role::User, &[text("List the files.")]);
    let pending = tool_with("ls", "call_1", None, ToolStatus::Pending);
    append(&mut store, &session, Role::Assistant, &[pending]);
    store
        .update_tool(
            &session,
            "call_1",
            ToolStatus::Completed,
            Some("README.md\nsrc/main.rs"),
            None,
        )
        .unwrap();
    let assembled = store.assemble(&session, 100_000).unwrap();
    assert_eq!(assembled.item_ids().count(), 2);
    let history = store.history(&session).unwrap();
    assert_eq!(history.len(), 2);
    let Part::Tool(call) = &history[1].parts[0].part else {
        panic!("a tool call")
    };
    assert_eq!(call.status, ToolStatus::Completed);
    assert_eq!(call.output.as_deref(), Some("README.md\nsrc/main.rs"));

    // A second worker on the same database sees every turn, and the first
    // worker's view notices the second one's write.
    let mut other = open(url);
    append(
        &mut other,
        &session,
        Role::User,
        &[text("Now read main.rs.")],
    );
    assert_eq!(store.history(&session).unwrap().len(), 3);
    assert!(store.assemble(&session, 100_000).unwrap().tokens > assembled.tokens);

    // Full-text and regex search find the tool's result and the user's turn.
    let found = store
        .grep("main.rs", Some(&session), GrepMode::Text, 10)
        .unwrap();
    assert!(!found.is_empty(), "no hit for main.rs");
    assert!(found.iter().all(|hit| hit.session_id == session));
    assert!(
        found.iter().any(|hit| hit.snippet.contains("main")),
        "{found:?}"
    );
    let regex = store
        .grep(r"src/\w+\.rs", None, GrepMode::Regex, 10)
        .unwrap();
    assert_eq!(regex.len(), 1, "{regex:?}");
    assert!(regex[0].snippet.contains("[src/main.rs]"), "{regex:?}");
    let none = store
        .grep("kubernetes", Some(&session), GrepMode::Text, 10)
        .unwrap();
    assert!(none.is_empty(), "{none:?}");

    // A finished call cannot be finished again: typed, and nothing changes.
    let again = store.update_tool(&session, "call_1", ToolStatus::Completed, Some("x"), None);
    assert!(again.is_err(), "{again:?}");
    assert_eq!(store.history(&session).unwrap().len(), 3);
}

#[test]
fn a_session_records_its_turns_and_tool_results_on_postgres() {
    let db = database();
    assert_eq!(open(&db.url()).schema_version().unwrap(), SCHEMA_VERSION);
    records_turns(&db.url());
}

#[test]
fn a_session_records_its_turns_and_tool_results_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    records_turns(dir.path().join("store.db").to_str().unwrap());
}

#[test]
fn a_compaction_round_commits_its_summary_on_postgres() {
    let db = database();
    let mut store = open(&db.url());
    let session = store.create_session(MODEL, "{}", None).unwrap();
    append(&mut store, &session, Role::User, &[text("Fix the build.")]);
    for call in 0..30 {
        let output = words(call, 40);
        let part = tool("run", &format!("c{call}"), &output);
        append(
            &mut store,
            &session,
            Role::Assistant,
            &[text("running"), part],
        );
    }
    let before = store.view_stats(&session).unwrap().tokens;
    let outcome = store
        .compaction_round(&session, &rules(before / 2), before, LeafWriter::BuiltIn)
        .expect("round");
    assert!(!outcome.committed.is_empty(), "a summary was committed");
    let after = store.view_stats(&session).unwrap().tokens;
    assert!(after < before);
    // Nothing is lost: every message is still stored.
    assert_eq!(store.history(&session).unwrap().len(), 31);
}

#[test]
fn a_missing_session_and_a_bad_url_are_typed_errors() {
    let db = database();
    let mut store = open(&db.url());
    assert!(matches!(
        store.assemble("ses_missing", 1_000),
        Err(Error::SessionNotFound(_))
    ));
    let refused = Store::open(
        &db.url_with_password("wrong-secret"),
        &OpenOptions::default(),
    );
    let Err(err) = refused else {
        panic!("a wrong password opened the store")
    };
    assert!(matches!(err, Error::AccessDenied { .. }), "{err:?}");
    assert!(!err.to_string().contains("wrong-secret"), "{err}");
}

/// Waits until `taken` holds or ten seconds pass: the server ends a closed
/// connection's backend, and frees its locks, on its own time.
fn eventually(mut taken: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        if taken() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

#[test]
fn the_compaction_lease_is_the_connection_that_holds_it() {
    let db = database();
    let mut worker = open(&db.url());
    let mut other = open(&db.url());
    let session = worker.create_session(MODEL, "{}", None).unwrap();
    assert!(worker
        .acquire_compaction_lease(&session, "round-1", 1)
        .unwrap());
    // No expiry: a millisecond's lifetime later it is still held, and renewable
    // only by its holder.
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert!(!other
        .acquire_compaction_lease(&session, "round-2", 60_000)
        .unwrap());
    assert!(worker
        .acquire_compaction_lease(&session, "round-1", 1)
        .unwrap());
    assert!(!worker
        .acquire_compaction_lease(&session, "round-3", 60_000)
        .unwrap());
    // Giving back as another holder changes nothing; as the holder, it frees it.
    worker
        .release_compaction_lease(&session, "round-2")
        .unwrap();
    assert!(!other
        .acquire_compaction_lease(&session, "round-2", 60_000)
        .unwrap());
    worker
        .release_compaction_lease(&session, "round-1")
        .unwrap();
    assert!(other
        .acquire_compaction_lease(&session, "round-2", 60_000)
        .unwrap());
    // A worker that ends without giving it back (killed) frees it with its
    // connection.
    drop(other);
    assert!(eventually(|| worker
        .acquire_compaction_lease(&session, "round-4", 60_000)
        .unwrap()));
    // No lease row is written on PostgreSQL.
    let rows: i64 = db
        .admin()
        .query_one("SELECT count(*) FROM compaction_leases", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 0);
}

#[test]
fn a_write_the_server_picks_to_break_a_deadlock_is_run_again() {
    let db = database();
    let mut store = open(&db.url());
    let session = store.create_session(MODEL, "{}", None).unwrap();
    append(&mut store, &session, Role::User, &[text("first turn")]);
    // Another connection holds the search backlog's table, which the store's
    // append writes after locking its session's row, and then asks for that row:
    // a cycle. It waits ten times longer than the store's connection before
    // looking for cycles, so the server breaks this one by rolling the append back.
    let mut rival = db.admin();
    rival
        .batch_execute(
            "SET deadlock_timeout = '10s'; BEGIN;
             LOCK TABLE search_backlog IN SHARE ROW EXCLUSIVE MODE",
        )
        .unwrap();
    let locked = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let rival_thread = {
        let session = session.clone();
        let locked = locked.clone();
        std::thread::spawn(move || {
            // Once the append waits on the table.
            std::thread::sleep(std::time::Duration::from_millis(300));
            rival
                .query_one(
                    "SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE",
                    &[&session],
                )
                .unwrap();
            locked.store(true, std::sync::atomic::Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(200));
            rival.batch_execute("ROLLBACK").unwrap();
        })
    };
    let appended = store.append_message(&session, Role::User, &[text("second turn")], None);
    rival_thread.join().unwrap();
    let appended = appended.expect("the append was run again");
    // The rival got the session's row: the append's first run was rolled back.
    assert!(locked.load(std::sync::atomic::Ordering::SeqCst));
    assert_eq!(store.history(&session).unwrap().len(), 2);
    assert_eq!(
        store.get_message(&appended.id).unwrap().parts.len(),
        1,
        "written once"
    );
}

/// Assembly under a budget too small for the view names the file ids of what it
/// leaves out, messages and summaries alike, read with PostgreSQL's JSON functions.
fn left_out_items_keep_their_file_ids(url: &str) {
    let mut store = open(url);
    let session = store.create_session(MODEL, "{}", None).unwrap();
    let filler = "the parser keeps its state between chunks ".repeat(20);
    for n in 0..24 {
        let body = format!("see file_{n:016x} for turn {n}. {filler}");
        append(&mut store, &session, Role::User, &[text(&body)]);
    }
    for _ in 0..2 {
        let sources: Vec<String> = store
            .view_items(&session)
            .unwrap()
            .iter()
            .filter(|item| item.kind == ItemKind::Message)
            .take(4)
            .map(|item| item.id.clone())
            .collect();
        let body = "the parser state was discussed at length. ".repeat(30);
        store
            .commit_summary(&session, &body, 1, &sources, &[], None)
            .unwrap();
    }
    let assembled = store.assemble(&session, 700).unwrap();
    assert!(assembled.omitted > 0, "the budget leaves items out");
    let shown: Vec<String> = assembled
        .messages()
        .filter_map(|message| message.content.clone())
        .collect();
    let present = extract_file_ids(&shown.join("\n"));
    for n in 0..24 {
        let id = format!("file_{n:016x}");
        assert!(present.contains(&id), "{id} left the context");
    }
}

#[test]
fn left_out_items_keep_their_file_ids_on_postgres() {
    left_out_items_keep_their_file_ids(&database().url());
}

#[test]
fn left_out_items_keep_their_file_ids_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    left_out_items_keep_their_file_ids(dir.path().join("store.db").to_str().unwrap());
}

#[test]
fn a_text_holding_nul_is_refused_on_postgres_and_nothing_is_written() {
    let db = database();
    let mut store = open(&db.url());
    let session = store.create_session(MODEL, "{}", None).unwrap();
    for parts in [
        vec![text("before\0after")],
        vec![text("plain"), tool("dump", "c1", "\0binary\0")],
    ] {
        let refused = store.append_message(&session, Role::Assistant, &parts, None);
        assert!(
            matches!(refused, Err(Error::InvalidInput { ref reason, .. }) if reason.contains("NUL")),
            "{refused:?}"
        );
    }
    assert!(store.history(&session).unwrap().is_empty());
    append(&mut store, &session, Role::User, &[text("still writable")]);
    assert_eq!(store.history(&session).unwrap().len(), 1);
}

/// A full-text hit's snippet keeps the text's line breaks on both backends.
fn snippets_keep_line_breaks(url: &str) {
    let mut store = open(url);
    let session = store.create_session(MODEL, "{}", None).unwrap();
    append(
        &mut store,
        &session,
        Role::User,
        &[text("look here\notter")],
    );
    let hits = store
        .grep("otter", Some(&session), GrepMode::Text, 10)
        .unwrap();
    let snippets: Vec<&str> = hits.iter().map(|hit| hit.snippet.as_str()).collect();
    assert_eq!(snippets, ["look here\n[otter]"]);
}

#[test]
fn snippets_keep_line_breaks_on_postgres() {
    snippets_keep_line_breaks(&database().url());
}

#[test]
fn snippets_keep_line_breaks_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    snippets_keep_line_breaks(dir.path().join("store.db").to_str().unwrap());
}

#[test]
fn workers_moving_the_search_backlog_at_once_index_every_row_once() {
    let db = database();
    let url = db.url();
    let workers: Vec<_> = (0..4)
        .map(|worker| {
            let url = url.clone();
            std::thread::spawn(move || {
                let mut store = open(&url);
                let session = store.create_session(MODEL, "{}", None).unwrap();
                for turn in 0..25 {
                    let body = format!("worker{worker} turn{turn} heron");
                    append(&mut store, &session, Role::User, &[text(&body)]);
                    store.flush_search_index().expect("the backlog moves");
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("a worker");
    }
    let mut store = open(&url);
    assert_eq!(store.search_backlog().unwrap(), 0);
    let hits = store.grep("heron", None, GrepMode::Text, 1_000).unwrap();
    assert_eq!(hits.len(), 100, "every turn indexed once");
}

#[test]
fn a_read_only_store_on_postgres_refuses_writes_but_searches() {
    let db = database();
    let mut writer = open(&db.url());
    let session = writer.create_session(MODEL, "{}", None).unwrap();
    append(
        &mut writer,
        &session,
        Role::User,
        &[text("a cobalt lantern")],
    );
    let mut reader = Store::open_read_only(&db.url(), &OpenOptions::default()).unwrap();
    assert!(reader.create_session(MODEL, "{}", None).is_err());
    let refused = reader.append_message(&session, Role::User, &[text("no")], None);
    assert!(refused.is_err(), "{refused:?}");
    // Searching moves the backlog into the index, the store's own bookkeeping.
    let hits = reader.grep("cobalt", None, GrepMode::Text, 10).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(writer.history(&session).unwrap().len(), 1);
}

/// Pages of a long history and of its event tape read the rows asked for, on both
/// backends: a fork's page takes the shared part from its parent's rows.
fn pages_of_history_and_events(url: &str) {
    use lossless_core::store::EventPage;

    let mut store = open(url);
    let parent = store.create_session(MODEL, "{}", None).unwrap();
    for turn in 1..=6 {
        let role = if turn % 2 == 1 {
            Role::User
        } else {
            Role::Assistant
        };
        append(&mut store, &parent, role, &[text(&format!("turn {turn}"))]);
        store
            .append_event(&parent, "request_built", &format!("{{\"seq\": {turn}}}"))
            .unwrap();
        store.append_event(&parent, "other", "{}").unwrap();
    }
    let seqs = |records: &[lossless_core::store::MessageRecord]| -> Vec<i64> {
        records.iter().map(|record| record.seq).collect()
    };
    assert_eq!(seqs(&store.history_range(&parent, 3, 4).unwrap()), [3, 4]);
    assert_eq!(seqs(&store.history_range(&parent, 0, 2).unwrap()), [1, 2]);
    assert_eq!(seqs(&store.history_range(&parent, 5, 99).unwrap()), [5, 6]);
    assert!(store.history_range(&parent, 7, 9).unwrap().is_empty());
    let child = store.fork_session(&parent, 4, 0, None).unwrap();
    append(&mut store, &child, Role::User, &[text("turn 5, edited")]);
    let page = store.history_range(&child, 3, 5).unwrap();
    assert_eq!(seqs(&page), [3, 4, 5]);
    assert_eq!(page[1].session_id, parent);
    assert_eq!(page[2].session_id, child);

    let page = |after, before, name, limit, newest_first| EventPage {
        after,
        before,
        name,
        limit,
        newest_first,
    };
    let names = |rows: Vec<lossless_core::store::EventRow>| -> Vec<(i64, String)> {
        rows.into_iter().map(|row| (row.seq, row.name)).collect()
    };
    let all = store
        .events_page(&parent, &page(None, None, None, 100, false))
        .unwrap();
    assert_eq!(all.len(), 12);
    let newest = store
        .events_page(&parent, &page(None, None, Some("request_built"), 2, true))
        .unwrap();
    assert_eq!(
        names(newest),
        [
            (11, "request_built".to_string()),
            (9, "request_built".to_string())
        ]
    );
    let between = store
        .events_page(&parent, &page(Some(2), Some(6), None, 10, false))
        .unwrap();
    assert_eq!(
        names(between),
        [
            (3, "request_built".to_string()),
            (4, "other".to_string()),
            (5, "request_built".to_string())
        ]
    );
    let after = store
        .events_page(&parent, &page(Some(10), None, Some("other"), 10, false))
        .unwrap();
    assert_eq!(names(after), [(12, "other".to_string())]);
    assert!(store
        .events_page(&parent, &page(None, None, None, 0, false))
        .unwrap()
        .is_empty());
    assert!(store
        .events_page("ses_missing", &page(None, None, None, 1, false))
        .is_err());
}

#[test]
fn pages_of_history_and_events_on_postgres() {
    pages_of_history_and_events(&database().url());
}

#[test]
fn pages_of_history_and_events_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    pages_of_history_and_events(dir.path().join("store.db").to_str().unwrap());
}
