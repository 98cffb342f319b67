//! The store's two hot paths on both backends, through the same `Store` calls:
//! appending one turn (a 500-character text and a tool call with a 4 KB output,
//! as `append.rs`) and assembling a 1,000-message session with a warm view.
//! PostgreSQL is a throwaway server on this machine, reached over 127.0.0.1 (the
//! slower of its two ways, see `postgres.rs`), running with `fsync` off.
//!
//! Run with `cargo bench -p lossless-core --bench store_backends`.

#[path = "../tests/pg_cluster/mod.rs"]
mod pg_cluster;
#[path = "../tests/support/mod.rs"]
mod support;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use lossless_core::parts::{Part, Role, ToolCallPart, ToolStatus};
use lossless_core::store::{OpenOptions, Store};
use lossless_core::tokens::warm;

/// Messages of the assembled session, and the budget it is assembled in (a 200k
/// window less the reply and the compaction reserve, as `benches/conftest.py`).
const MESSAGES: usize = 1_000;
const BUDGET: i64 = 175_424;

fn turn(call: u64, text: &str, output: &str) -> [Part; 2] {
    [
        Part::Text(text.to_string()),
        Part::Tool(ToolCallPart {
            name: "read_file".into(),
            call_id: format!("call_{call}"),
            input: r#"{"path": "payhub/fx/service.py"}"#.into(),
            output: Some(output.to_string()),
            status: ToolStatus::Completed,
            error: None,
        }),
    ]
}

/// A session of `MESSAGES` messages: user questions and assistant replies, one in
/// three replies with a tool call.
fn filled_session(store: &mut Store) -> String {
    let session = store.create_session(support::MODEL, "{}", None).unwrap();
    for n in 0..MESSAGES {
        let text = support::words(n as u64, 60);
        let parts = if n % 2 == 0 {
            vec![Part::Text(text)]
        } else if n % 3 == 0 {
            turn(n as u64, &text, &support::words(n as u64 + 7, 200)).to_vec()
        } else {
            vec![Part::Text(text)]
        };
        let role = if n % 2 == 0 {
            Role::User
        } else {
            Role::Assistant
        };
        store.append_message(&session, role, &parts, None).unwrap();
    }
    session
}

fn bench_backend(c: &mut Criterion, name: &str, db: &str) {
    let mut store = Store::open(db, &OpenOptions::default()).unwrap();
    let text = support::words(1, 120)[..500].to_string();
    let output: String = support::words(2, 1_000).chars().take(4096).collect();
    let appended = store.create_session(support::MODEL, "{}", None).unwrap();
    let assembled = filled_session(&mut store);
    let mut group = c.benchmark_group(format!("store_{name}"));
    let mut call = 0_u64;
    group.bench_function("append_text_500_and_tool_output_4k", |b| {
        b.iter(|| {
            call += 1;
            let parts = turn(call, &text, &output);
            black_box(
                store
                    .append_message(&appended, Role::Assistant, &parts, None)
                    .unwrap(),
            )
        });
    });
    store.assemble(&assembled, BUDGET).unwrap();
    group.bench_function("assemble_1000_warm", |b| {
        b.iter(|| black_box(store.assemble(&assembled, BUDGET).unwrap()));
    });
    group.finish();
}

fn benches(c: &mut Criterion) {
    warm();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    bench_backend(c, "sqlite", path.to_str().unwrap());
    let db = pg_cluster::database();
    bench_backend(c, "postgres", &db.url());
}

criterion_group!(store_backends, benches);
criterion_main!(store_backends);
