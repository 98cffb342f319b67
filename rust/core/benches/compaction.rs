//! Compaction at 10,000 messages: the prune scan, level-3 truncation, a commit,
//! and a full round with the extractive summariser (its summary committed in the
//! call that reads the span, and as two calls).
//!
//! Run with `cargo bench -p lossless-core --bench compaction`. The fixture (an
//! agent-like session of 10,000 messages, half of them user turns, 30% of the
//! assistant turns carrying a 2-8 KB tool output) is built once per run; benches
//! that write work on a fresh copy of it each iteration (the copy, and a first write
//! that creates its WAL file, are not timed).

#[path = "../tests/support/mod.rs"]
mod support;

use lossless_core::plan::Tail;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkGroup, Criterion};
use lossless_core::store::{OpenOptions, Store};

const MESSAGES: usize = 10_000;
const PROTECT_TOKENS: i64 = 40_000;
const PRUNE_MINIMUM: i64 = 20_000;
const SUMMARY_TOKENS: i64 = 2_048;
/// The budget of a round's summary: the fixture's 200-odd file ids alone take
/// more than `SUMMARY_TOKENS` in its footer.
const ROUND_SUMMARY_TOKENS: i64 = 8_000;

struct Fixture {
    _dir: tempfile::TempDir,
    path: PathBuf,
    session: String,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("fixture.db");
    let session = {
        let mut store = Store::open(path.to_str().unwrap(), &OpenOptions::default()).unwrap();
        let session = store.create_session(support::MODEL, "{}", None).unwrap();
        support::agent_session(&mut store, &session, MESSAGES, 2, 7);
        session
    };
    // The store is closed: its WAL is checkpointed into the main file, which can be copied.
    Fixture {
        _dir: dir,
        path,
        session,
    }
}

/// A store on a fresh copy of the fixture, its view loaded as in a running session.
fn fresh_copy(fixture: &Fixture, scratch: &Path) -> Store {
    let copy = scratch.join("copy.db");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", copy.display()));
    }
    std::fs::copy(&fixture.path, &copy).unwrap();
    let mut store = Store::open(copy.to_str().unwrap(), &OpenOptions::default()).unwrap();
    store.view_stats(&fixture.session).unwrap();
    // A running session has written before: the first write of a fresh copy creates
    // its WAL file (several ms) and would be charged to whatever is measured.
    store
        .append_event(&fixture.session, "bench_warmup", "{}")
        .unwrap();
    store
}

fn benches(c: &mut Criterion) {
    let fixture = fixture();
    let scratch = tempfile::tempdir().unwrap();
    let session = fixture.session.as_str();
    let tools = vec!["skill".to_string()];
    let mut group = c.benchmark_group("compaction_10k");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(8))
        .warm_up_time(Duration::from_secs(2));

    let mut store = fresh_copy(&fixture, scratch.path());
    let span = store.compaction_span(session, Tail::user_turns(2)).unwrap();
    assert!(span.message_ids.len() > 9_990);

    // 1. The prune scan: which outputs lie outside the protected tail and the window,
    //    and whether tombstoning them is worth a write (here: not, so nothing is written).
    group.bench_function("prune_scan", |b| {
        b.iter(|| {
            store
                .prune(
                    session,
                    PROTECT_TOKENS,
                    i64::MAX,
                    &tools,
                    Tail::user_turns(2),
                )
                .unwrap()
        });
    });
    // The scan plus the tombstones it decides to write (every marker counted).
    group.bench_function("prune_scan_and_write", |b| {
        b.iter_batched(
            || fresh_copy(&fixture, scratch.path()),
            |mut store| {
                let result = store
                    .prune(
                        session,
                        PROTECT_TOKENS,
                        PRUNE_MINIMUM,
                        &tools,
                        Tail::user_turns(2),
                    )
                    .unwrap();
                // Returned, so that closing the store (a WAL checkpoint) is not timed.
                (store, result)
            },
            BatchSize::PerIteration,
        );
    });
    // 2. Level 3 over the whole span.
    group.bench_function("level3", |b| {
        b.iter(|| {
            store
                .truncate_summary(&span.message_ids, SUMMARY_TOKENS)
                .unwrap()
        });
    });
    group.bench_function("extractive_summary", |b| {
        b.iter(|| {
            store
                .extractive_summary(&span.message_ids, SUMMARY_TOKENS)
                .unwrap()
        });
    });
    group.bench_function("transcript_capped_150k", |b| {
        b.iter(|| {
            store
                .transcript(&span.message_ids, None, Some(150_000))
                .unwrap()
        });
    });
    group.bench_function("commit", |b| {
        b.iter_batched(
            || fresh_copy(&fixture, scratch.path()),
            |mut store| {
                let result = store
                    .commit_summary(session, "summary", 3, &span.message_ids, &[], None)
                    .unwrap();
                (store, result)
            },
            BatchSize::PerIteration,
        );
    });
    rounds(&mut group, &fixture, scratch.path(), &tools);
    group.finish();
}

/// 3. Full rounds with the built-in summariser.
fn rounds(
    group: &mut BenchmarkGroup<'_, WallTime>,
    fixture: &Fixture,
    scratch: &Path,
    tools: &[String],
) {
    let session = fixture.session.as_str();
    // A full round as the engine runs it with the built-in summariser: prune
    //    (written only if it alone would bring the view to the goal), span, and the
    //    extractive summary committed in the call that reads the span.
    group.bench_function("round_extractive", |b| {
        b.iter_batched(
            || fresh_copy(fixture, scratch),
            |mut store| {
                // The engine's goal for a 200k window: half the soft limit.
                let goal = 52_000;
                let view = store.view_stats(session).unwrap().tokens;
                let minimum = PRUNE_MINIMUM.max(view - goal);
                store
                    .prune(session, PROTECT_TOKENS, minimum, tools, Tail::user_turns(2))
                    .unwrap();
                let span = store.compaction_span(session, Tail::user_turns(2)).unwrap();
                let done = store
                    .commit_extractive_summary(&span, ROUND_SUMMARY_TOKENS)
                    .unwrap();
                assert!(done.committed.is_some());
                let after = store.view_stats(session).unwrap();
                (store, after)
            },
            BatchSize::PerIteration,
        );
    });
    // The same round with the summary and its commit as two calls.
    group.bench_function("round_extractive_two_calls", |b| {
        b.iter_batched(
            || fresh_copy(fixture, scratch),
            |mut store| {
                let span = store.compaction_span(session, Tail::user_turns(2)).unwrap();
                let summary = store
                    .extractive_summary(&span.message_ids, ROUND_SUMMARY_TOKENS)
                    .unwrap();
                store
                    .commit_summary(session, &summary.text, 1, &span.message_ids, &[], None)
                    .unwrap();
                (store, summary)
            },
            BatchSize::PerIteration,
        );
    });
}

criterion_group!(compaction, benches);
criterion_main!(compaction);
