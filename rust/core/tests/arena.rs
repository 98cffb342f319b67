//! The arena's rows in the store: writes under the ceiling, removals, reopening,
//! the upgrade from version 5, and recall of what left the view.

mod support;

use std::sync::Arc;

use lossless_core::arena::{
    ArenaRules, Candidate, CeilingPolicy, ControllerRules, Observed, PlanRules, Priority, Zone,
    ZoneLimits,
};
use lossless_core::parts::Role;
use lossless_core::store::schema::SCHEMA_VERSION;
use lossless_core::store::{ArenaWrite, Ceiling, OpenOptions, Store};
use support::{append, raw, temp_store, text, MODEL};

fn write(zone: Zone, key: &str, text: Option<&str>) -> ArenaWrite {
    ArenaWrite {
        zone,
        key: key.into(),
        source: "user".into(),
        priority: Priority::High,
        text: text.map(str::to_string),
        once: false,
        external: false,
        cap_tokens: 1_000,
        zone_cap: true,
    }
}

const CEILING: Ceiling = Ceiling {
    max_entries: 4_096,
    policy: CeilingPolicy::DropRecall,
};

#[test]
fn the_newest_entry_of_a_key_wins_and_survives_reopening() {
    let (_dir, path, mut store) = temp_store();
    let session = store.create_session(MODEL, "{}", None).unwrap();
    let writes = [
        write(Zone::Truth, "rule", Some("never touch legacy_billing/")),
        write(Zone::TaskState, "task", Some("refactor the payout client")),
        write(
            Zone::Truth,
            "rule",
            Some("never touch legacy_billing/ or vendor/"),
        ),
        write(Zone::MemoryWorking, "scratch", Some("notes")),
        write(Zone::MemoryWorking, "scratch", None),
    ];
    let outcomes = store.arena_write(&session, &writes, CEILING, None).unwrap();
    assert!(outcomes.iter().all(|o| o.accepted));
    drop(store);
    let mut store = Store::open(&path, &OpenOptions::default()).unwrap();
    let live = store.arena_entries(&session).unwrap();
    let keys: Vec<(&str, &str)> = live
        .iter()
        .map(|e| (e.key.as_str(), e.text.as_str()))
        .collect();
    assert_eq!(
        keys,
        [
            ("task", "refactor the payout client"),
            ("rule", "never touch legacy_billing/ or vendor/")
        ]
    );
    // Rows are never rewritten or deleted.
    let conn = raw(&path);
    assert!(conn.execute("DELETE FROM arena_entries", []).is_err());
    assert!(conn
        .execute("UPDATE arena_entries SET text = 'x'", [])
        .is_err());
    let rows: i64 = conn
        .query_row("SELECT count(*) FROM arena_entries", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 5);
}

#[test]
fn bad_writes_change_nothing() {
    let (_dir, _path, mut store) = temp_store();
    let session = store.create_session(MODEL, "{}", None).unwrap();
    let writes = [
        write(Zone::Truth, "fine", Some("kept?")),
        write(Zone::Truth, "empty", Some("   ")),
    ];
    assert!(store.arena_write(&session, &writes, CEILING, None).is_err());
    assert!(store
        .arena_write(
            &session,
            &[write(Zone::Truth, "", Some("x"))],
            CEILING,
            None
        )
        .is_err());
    assert!(store.arena_entries(&session).unwrap().is_empty());
}

#[test]
fn an_oversized_text_is_cut_to_its_cap_keeping_both_ends() {
    let (_dir, _path, mut store) = temp_store();
    let session = store.create_session(MODEL, "{}", None).unwrap();
    let long = format!("START {} END", "filler words here ".repeat(400));
    let mut big = write(Zone::MemoryWorking, "notes", Some(&long));
    big.cap_tokens = 100;
    let outcome = &store.arena_write(&session, &[big], CEILING, None).unwrap()[0];
    assert!(outcome.tokens <= 100);
    assert!(outcome.cut_from.unwrap() > 1_000);
    let live = store.arena_entries(&session).unwrap();
    assert!(live[0].text.starts_with("START") && live[0].text.ends_with("END"));
}

#[test]
fn at_the_ceiling_the_policy_decides_and_updates_still_land() {
    let (_dir, _path, mut store) = temp_store();
    let session = store.create_session(MODEL, "{}", None).unwrap();
    let ceiling = Ceiling {
        max_entries: 2,
        policy: CeilingPolicy::DropRecall,
    };
    let writes = [
        write(Zone::RagExternal, "ext", Some("an external hit")),
        write(Zone::Truth, "a", Some("fact a")),
        write(Zone::Truth, "b", Some("fact b")),
        write(Zone::Truth, "a", Some("fact a, updated")),
        write(Zone::Truth, "c", Some("fact c")),
    ];
    let outcomes = store.arena_write(&session, &writes, ceiling, None).unwrap();
    assert_eq!(outcomes[2].evicted, ["ext"]);
    assert!(outcomes[2].enforced);
    assert!(outcomes[3].accepted && !outcomes[3].enforced);
    assert!(!outcomes[4].accepted && outcomes[4].enforced);
    let live = store.arena_entries(&session).unwrap();
    let texts: Vec<&str> = live.iter().map(|e| e.text.as_str()).collect();
    assert_eq!(texts, ["fact b", "fact a, updated"]);
}

#[test]
fn another_connection_s_writes_are_seen() {
    let (_dir, path, mut store) = temp_store();
    let session = store.create_session(MODEL, "{}", None).unwrap();
    store
        .arena_write(
            &session,
            &[write(Zone::Truth, "a", Some("one"))],
            CEILING,
            None,
        )
        .unwrap();
    assert_eq!(store.arena_entries(&session).unwrap().len(), 1);
    let mut other = Store::open(&path, &OpenOptions::default()).unwrap();
    other
        .arena_write(
            &session,
            &[write(Zone::Truth, "b", Some("two"))],
            CEILING,
            None,
        )
        .unwrap();
    assert_eq!(store.arena_entries(&session).unwrap().len(), 2);
    store
        .set_arena_state(&session, "{\"turns\": 1}", None)
        .unwrap();
    assert_eq!(
        other.arena_state(&session).unwrap().as_deref(),
        Some("{\"turns\": 1}")
    );
}

const SCHEMA_V5: &str = include_str!("fixtures/schema_v5.sql");

#[test]
fn a_version_5_file_gets_the_arena_tables_and_keeps_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v5.db");
    let path = path.to_str().unwrap();
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(SCHEMA_V5).unwrap();
    conn.execute_batch(
        r"
        INSERT INTO sessions (id, model, created_at, config, view_version, next_seq, next_position)
            VALUES ('ses_5', 'gpt-4o', 1, '{}', 1, 2, 2);
        INSERT INTO messages (id, session_id, seq, role, created_at, status, token_count) VALUES
            ('msg_1', 'ses_5', 1, 'user', 1, 'complete', 9);
        INSERT INTO parts (pk, id, message_id, session_id, msg_seq, ord, kind, body, token_count)
            VALUES (1, 'prt_1', 'msg_1', 'ses_5', 1, 0, 'text', 'keep the ledger', 5);
        INSERT INTO context_items (session_id, position, kind, item_id, token_count)
            VALUES ('ses_5', 1, 'message', 'msg_1', 9);
        ",
    )
    .unwrap();
    drop(conn);

    let mut store = Store::open(path, &OpenOptions::default()).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(store.history("ses_5").unwrap().len(), 1);
    assert!(store.arena_entries("ses_5").unwrap().is_empty());
    store
        .arena_write(
            "ses_5",
            &[write(Zone::Truth, "rule", Some("pinned"))],
            CEILING,
            None,
        )
        .unwrap();
    assert_eq!(store.arena_entries("ses_5").unwrap()[0].text, "pinned");
    let conn = raw(path);
    assert!(conn.execute("DELETE FROM arena_entries", []).is_err());
}

#[test]
fn recall_finds_what_left_the_view_and_not_what_is_in_it() {
    let (_dir, _path, mut store) = temp_store();
    let session = store.create_session(MODEL, "{}", None).unwrap();
    let old = append(
        &mut store,
        &session,
        Role::User,
        &[text("the staging password rotates every ninety days")],
    );
    let reply = append(
        &mut store,
        &session,
        Role::Assistant,
        &[text("noted the rotation schedule")],
    );
    let visible = append(
        &mut store,
        &session,
        Role::User,
        &[text("the staging password lives in vault")],
    );
    // Nothing has left the view yet.
    assert!(store
        .recall(
            &session,
            "how often does the staging password rotate",
            5,
            200
        )
        .unwrap()
        .is_empty());
    store
        .commit_summary(
            &session,
            "talked about credentials",
            3,
            &[old.clone(), reply],
            &[],
            None,
        )
        .unwrap();
    let hits = store
        .recall(
            &session,
            "how often does the staging password rotate",
            5,
            200,
        )
        .unwrap();
    assert_eq!(hits[0].message_id, old);
    assert!(hits.iter().all(|hit| hit.message_id != visible));
    assert!(
        hits[0].score > 0.3 && hits[0].score <= 1.0,
        "{}",
        hits[0].score
    );
    // Deterministic.
    assert_eq!(
        hits,
        store
            .recall(
                &session,
                "how often does the staging password rotate",
                5,
                200
            )
            .unwrap()
    );
    assert!(store.recall(&session, "!!!", 5, 200).unwrap().is_empty());
}

#[test]
fn the_newest_question_is_recalled_once_until_the_view_loses_something() {
    let (_dir, path, mut store) = temp_store();
    let session = store.create_session(MODEL, "{}", None).unwrap();
    let question = "how often does the staging password rotate";
    let old = append(
        &mut store,
        &session,
        Role::User,
        &[text("the staging password rotates every ninety days")],
    );
    let reply = append(&mut store, &session, Role::Assistant, &[text("noted")]);
    append(&mut store, &session, Role::User, &[text(question)]);
    let before = store.recall_newest(&session, 4, 200).unwrap().unwrap();
    assert_eq!(before.question, question);
    assert!(before.hits.is_empty(), "nothing has left the view");

    store
        .commit_summary(&session, "credentials", 3, &[old.clone(), reply], &[], None)
        .unwrap();
    let after = store.recall_newest(&session, 4, 200).unwrap().unwrap();
    assert_eq!(
        after.hits[0].message_id, old,
        "a summary changed what recall finds"
    );

    // A tool run after the question adds to the view: the recall is kept as it was.
    append(
        &mut store,
        &session,
        Role::Assistant,
        &[text("checking the vault")],
    );
    let kept = store.recall_newest(&session, 4, 200).unwrap().unwrap();
    assert!(Arc::ptr_eq(&after, &kept));
    // Another connection's write is not this store's to vouch for: recalled anew, alike.
    let mut other = Store::open(&path, &OpenOptions::default()).unwrap();
    append(
        &mut other,
        &session,
        Role::Assistant,
        &[text("still checking")],
    );
    let reread = store.recall_newest(&session, 4, 200).unwrap().unwrap();
    assert!(!Arc::ptr_eq(&after, &reread));
    assert_eq!(reread.hits, after.hits);
    // A new question is recalled for itself.
    append(
        &mut store,
        &session,
        Role::User,
        &[text("what did we note")],
    );
    let next = store.recall_newest(&session, 4, 200).unwrap().unwrap();
    assert_eq!(next.question, "what did we note");
}

#[test]
fn a_key_names_an_entry_within_its_zone() {
    let (_dir, path, mut store) = temp_store();
    let session = store.create_session(MODEL, "{}", None).unwrap();
    let writes = [
        write(Zone::Truth, "task", Some("never deploy on Fridays")),
        write(Zone::TaskState, "task", Some("refactor the payout client")),
    ];
    store.arena_write(&session, &writes, CEILING, None).unwrap();
    let zones = |store: &mut Store| -> Vec<(Zone, String)> {
        let live = store.arena_entries(&session).unwrap();
        live.iter().map(|e| (e.zone, e.text.clone())).collect()
    };
    assert_eq!(
        zones(&mut store),
        [
            (Zone::Truth, "never deploy on Fridays".to_string()),
            (Zone::TaskState, "refactor the payout client".to_string()),
        ]
    );
    // Removing the key in one zone leaves the other zone's entry.
    let gone = store
        .arena_write(&session, &[write(Zone::Truth, "task", None)], CEILING, None)
        .unwrap();
    assert!(gone[0].accepted);
    let missing = store
        .arena_write(
            &session,
            &[write(Zone::Identity, "task", None)],
            CEILING,
            None,
        )
        .unwrap();
    assert!(!missing[0].accepted);
    let expected = [(Zone::TaskState, "refactor the payout client".to_string())];
    assert_eq!(zones(&mut store), expected);
    drop(store);
    let mut store = Store::open(&path, &OpenOptions::default()).unwrap();
    assert_eq!(zones(&mut store), expected);
}

#[test]
fn text_is_stored_without_surrounding_whitespace() {
    let (_dir, _path, mut store) = temp_store();
    let session = store.create_session(MODEL, "{}", None).unwrap();
    let outcome = store
        .arena_write(
            &session,
            &[write(
                Zone::Truth,
                "rule",
                Some("\n  never deploy on Fridays \t\n"),
            )],
            CEILING,
            None,
        )
        .unwrap();
    let live = store.arena_entries(&session).unwrap();
    assert_eq!(live[0].text, "never deploy on Fridays");
    assert_eq!(outcome[0].tokens, live[0].tokens);
    let blank = store.arena_write(
        &session,
        &[write(Zone::Truth, "x", Some(" \n\t "))],
        CEILING,
        None,
    );
    assert!(blank.is_err());
}

#[test]
fn a_text_cut_to_its_zone_s_cap_remembers_what_it_counted() {
    let (_dir, path, mut store) = temp_store();
    let session = store.create_session(MODEL, "{}", None).unwrap();
    let long = format!("START {} END", "filler words here ".repeat(400));
    let mut zone_cut = write(Zone::MemoryWorking, "notes", Some(&long));
    zone_cut.cap_tokens = 100;
    // A limit of the entry's own (a tool failure's) is not the zone truncated.
    let mut own_limit = write(Zone::ToolFailures, "tool:ls", Some(&long));
    own_limit.cap_tokens = 100;
    own_limit.zone_cap = false;
    store
        .arena_write(&session, &[zone_cut, own_limit], CEILING, None)
        .unwrap();
    drop(store);
    let mut store = Store::open(&path, &OpenOptions::default()).unwrap();
    let live = store.arena_entries(&session).unwrap();
    assert!(
        live[0].tokens <= 100 && live[0].full_tokens > 1_000,
        "{:?}",
        live[0].full_tokens
    );
    assert_eq!(live[1].full_tokens, live[1].tokens);
}

#[test]
fn a_version_8_file_gets_the_cut_counts_and_reads_its_entries_whole() {
    let (_dir, path, mut store) = temp_store();
    let session = store.create_session(MODEL, "{}", None).unwrap();
    store
        .arena_write(
            &session,
            &[write(Zone::Truth, "rule", Some("pinned"))],
            CEILING,
            None,
        )
        .unwrap();
    drop(store);
    // The version 8 layout: the arena's table without `full_tokens`.
    let conn = raw(&path);
    conn.execute_batch(
        "ALTER TABLE arena_entries DROP COLUMN full_tokens; PRAGMA user_version = 8;",
    )
    .unwrap();
    drop(conn);
    let mut store = Store::open(&path, &OpenOptions::default()).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let live = store.arena_entries(&session).unwrap();
    assert_eq!(
        (live[0].text.as_str(), live[0].full_tokens),
        ("pinned", live[0].tokens)
    );
    let long = "filler words here ".repeat(400);
    let mut cut = write(Zone::MemoryWorking, "notes", Some(&long));
    cut.cap_tokens = 50;
    store.arena_write(&session, &[cut], CEILING, None).unwrap();
    assert!(store.arena_entries(&session).unwrap()[1].full_tokens > 50);
}

fn arena_rules(adaptive: bool) -> ArenaRules {
    ArenaRules {
        plan: PlanRules {
            limits: [ZoneLimits { floor: 0, cap: 400 }; 7],
            relax_order: vec![Zone::MemoryRecall, Zone::ToolFailures],
            cascade: true,
            min_cut_tokens: 16,
        },
        controller: ControllerRules {
            enabled: adaptive,
            ..ControllerRules::default()
        },
        max_entries: 100,
        policy: CeilingPolicy::DropRecall,
    }
}

#[test]
fn a_plan_is_kept_until_an_entry_its_state_or_its_inputs_change() {
    let (_dir, _path, mut store) = temp_store();
    let session = store.create_session(MODEL, "{}", None).unwrap();
    let rules = arena_rules(false);
    let writes = [
        write(Zone::Truth, "rule", Some("never touch legacy_billing/")),
        write(Zone::MemoryWorking, "old", Some("an early note")),
        write(Zone::TaskState, "task", Some("refactor the payout client")),
    ];
    store.arena_write(&session, &writes, CEILING, None).unwrap();
    let first = store.arena_plan(&session, &rules, 1, 2_000, &[]).unwrap();
    let again = store.arena_plan(&session, &rules, 1, 2_000, &[]).unwrap();
    assert_eq!(first.generation, again.generation);
    assert!(Arc::ptr_eq(&first, &again));

    // Removing an entry older than the newest still changes the plan.
    let removal = [write(Zone::MemoryWorking, "old", None)];
    store
        .arena_write(&session, &removal, CEILING, None)
        .unwrap();
    let after_removal = store.arena_plan(&session, &rules, 1, 2_000, &[]).unwrap();
    assert_ne!(after_removal.generation, first.generation);
    assert!(!after_removal.turn.injected.contains(&"old".to_string()));

    let other_cap = store.arena_plan(&session, &rules, 1, 1_000, &[]).unwrap();
    assert_ne!(other_cap.generation, after_removal.generation);
    let other_rules = store.arena_plan(&session, &rules, 2, 1_000, &[]).unwrap();
    assert_ne!(other_rules.generation, other_cap.generation);
    let hit = Candidate {
        zone: "memory_recall".into(),
        key: "hit".into(),
        source: "recall".into(),
        priority: "normal".into(),
        text: "the payout client lives in billing/payouts.py".into(),
    };
    let with_hit = store
        .arena_plan(&session, &rules, 2, 1_000, std::slice::from_ref(&hit))
        .unwrap();
    assert_ne!(with_hit.generation, other_rules.generation);
    assert!(with_hit.turn.injected.contains(&"hit".to_string()));

    let zones = [(10, 10, 0); 7];
    store
        .arena_observe(&session, &rules, &zones, &[], None)
        .unwrap();
    let after_state = store
        .arena_plan(&session, &rules, 2, 1_000, std::slice::from_ref(&hit))
        .unwrap();
    assert_ne!(after_state.generation, with_hit.generation);
}

#[test]
fn an_observed_shift_is_stored_with_its_event_and_a_reset_forgets_it() {
    let (_dir, _path, mut store) = temp_store();
    let session = store.create_session(MODEL, "{}", None).unwrap();
    let rules = arena_rules(true);
    let bad = store.arena_observe(&session, &rules, &[(1, 1, 0)], &[], None);
    assert!(bad.is_err());
    let mut observed = Observed::default();
    for _ in 0..40 {
        // The task zone keeps asking for more than it gets; memory asks for nothing.
        let mut zones = [(0_i64, 0_i64, 0_i64); 7];
        zones[Zone::TaskState.index()] = (2_000, 400, 600);
        observed = store
            .arena_observe(&session, &rules, &zones, &[], Some("arena_zone_adapted"))
            .unwrap();
    }
    assert!(observed.turns >= 40, "{observed:?}");
    let learned = store.arena_learned_caps(&session, &rules).unwrap().unwrap();
    assert!(learned[Zone::TaskState.index()] > 400, "{learned:?}");
    let events = store.events(&session).unwrap();
    let adapted: Vec<_> = events
        .iter()
        .filter(|event| event.name == "arena_zone_adapted")
        .collect();
    assert!(!adapted.is_empty());
    assert!(
        adapted[0].payload.contains("\"moved_tokens\""),
        "{}",
        adapted[0].payload
    );
    // A write to the zone's cap is cut at the cap the controller learned; a write
    // with a smaller limit of its own keeps to its limit.
    let long = "the payout client retries with backoff ".repeat(60);
    let mut to_zone_cap = write(Zone::TaskState, "task", Some(&long));
    to_zone_cap.cap_tokens = 400;
    let mut own_limit = write(Zone::TaskState, "note", Some(&long));
    own_limit.cap_tokens = 300;
    let outcomes = store
        .arena_write_under(&session, vec![to_zone_cap, own_limit], &rules, None)
        .unwrap();
    assert!(outcomes[0].tokens > 400, "{outcomes:?}");
    assert!(
        outcomes[0].tokens <= learned[Zone::TaskState.index()],
        "{outcomes:?}"
    );
    assert!(outcomes[1].tokens <= 300, "{outcomes:?}");
    let reset = lossless_core::store::WriteEvent::parse("arena_reset", "{}").unwrap();
    store.arena_reset(&session, &reset).unwrap();
    assert_eq!(store.arena_learned_caps(&session, &rules).unwrap(), None);
}
