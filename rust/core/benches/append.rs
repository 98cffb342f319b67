//! Appending one message (a 500-character text and a tool call with a 4 KB
//! output) to a store on a real file, as a session does every turn, next to the
//! same append of a two-character message (the store's fixed cost).
//!
//! Criterion reports a mean over a long run on one growing file, so its figure
//! holds the periodic WAL checkpoints and full-text index batches; the Python
//! benchmark (`benches/bench_append.py`) reports the median the target is set on.
//!
//! Run with `cargo bench -p lossless-core --bench append`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use lossless_core::parts::{Part, Role, ToolCallPart, ToolStatus};
use lossless_core::tokens::warm;

fn benches(c: &mut Criterion) {
    warm();
    let (_dir, _path, mut store) = support::temp_store();
    let session = store.create_session(support::MODEL, "{}", None).unwrap();
    let text = support::words(1, 120)[..500].to_string();
    let output: String = support::words(2, 1_000).chars().take(4096).collect();
    let mut group = c.benchmark_group("append");
    let mut call = 0_u64;
    group.bench_function("text_500_and_tool_output_4k", |b| {
        b.iter(|| {
            call += 1;
            let parts = [
                Part::Text(text.clone()),
                Part::Tool(ToolCallPart {
                    name: "read_file".into(),
                    call_id: format!("call_{call}"),
                    input: r#"{"path": "payhub/fx/service.py"}"#.into(),
                    output: Some(output.clone()),
                    status: ToolStatus::Completed,
                    error: None,
                }),
            ];
            black_box(
                store
                    .append_message(&session, Role::Assistant, &parts, None)
                    .unwrap(),
            )
        });
    });
    group.bench_function("two_characters", |b| {
        b.iter(|| {
            black_box(
                store
                    .append_message(&session, Role::User, &[Part::Text("ok".into())], None)
                    .unwrap(),
            )
        });
    });
    group.finish();
}

criterion_group!(append, benches);
criterion_main!(append);
