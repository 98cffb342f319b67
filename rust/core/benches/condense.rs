//! Condensing eight summaries of about 1,500 tokens each into 1,500 tokens without
//! a model: merged section by section (`condense_merge`), beside the level-3
//! truncation (`condense_truncate`) as the baseline. Once with summaries in the
//! extractive summariser's sections, once with prose summaries (as a model writes),
//! which a merge keeps or leaves out whole.
//!
//! Run with `cargo bench -p lossless-core --bench condense`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::fmt::Write as _;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use lossless_core::parts::Role;
use lossless_core::store::Store;
use lossless_core::tokens::TokenCounter;
use support::{append, file_id, temp_store, text, words, MODEL};

const SUMMARIES: usize = 8;
const SUMMARY_TOKENS: usize = 1_500;
const TARGET_TOKENS: i64 = 1_500;

/// A summary in the extractive summariser's sections, of about `SUMMARY_TOKENS`.
fn sectioned(index: usize) -> String {
    let seed = index as u64 * 1_000;
    let mut out = format!("## Goal\nStep {index}: {}", words(seed, 30));
    let sections: [(&str, usize, usize); 6] = [
        ("## Instructions and constraints", 12, 14),
        ("## Discoveries", 30, 18),
        ("## Completed", 12, 14),
        ("## Remaining", 8, 14),
        ("## Relevant files", 20, 4),
        ("## Failed tools", 4, 10),
    ];
    for (title, items, item_words) in sections {
        let _ = write!(out, "\n\n{title}");
        for item in 0..items {
            let seed = seed + (title.len() * 100 + item) as u64;
            let _ = write!(out, "\n- {}", words(seed, item_words).replace('\n', " "));
        }
    }
    let _ = write!(out, "\n\n## In progress\n{}", words(seed + 7, 20));
    let _ = write!(
        out,
        "\n\n## Other context\n- Messages covered: 40 (seq {}-{}); user 10, assistant 30, system 0",
        index * 40 + 1,
        index * 40 + 40
    );
    out
}

/// Prose of about `SUMMARY_TOKENS`, naming a file id.
fn prose(index: usize) -> String {
    format!(
        "{} about {}",
        words(index as u64 + 77, SUMMARY_TOKENS - 20),
        file_id(index as u64)
    )
}

/// `SUMMARIES` live leaves over ten messages each, written by `summary`.
fn leaves(store: &mut Store, summary: fn(usize) -> String) -> Vec<String> {
    let session = store.create_session(MODEL, "{}", None).unwrap();
    (0..SUMMARIES)
        .map(|index| {
            let messages: Vec<String> = (0..10)
                .map(|n| append(store, &session, Role::User, &[text(&format!("turn {n}"))]))
                .collect();
            store
                .commit_summary(&session, &summary(index), 1, &messages, &[], None)
                .unwrap()
                .summary_id
        })
        .collect()
}

fn benches(c: &mut Criterion) {
    let counter = TokenCounter::new(MODEL, 1.0);
    let tokens = counter.count(&sectioned(0));
    assert!(
        (1_200..1_800).contains(&tokens),
        "{tokens} tokens a summary"
    );
    let mut group = c.benchmark_group("condense_8x1500");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(6))
        .warm_up_time(Duration::from_secs(2));
    for (name, summary) in [
        ("sectioned", sectioned as fn(usize) -> String),
        ("prose", prose),
    ] {
        let (_dir, _path, mut store) = temp_store();
        let ids = leaves(&mut store, summary);
        group.bench_function(format!("merge_{name}"), |b| {
            b.iter(|| store.condense_merge(&ids, TARGET_TOKENS).unwrap());
        });
        group.bench_function(format!("truncate_{name}"), |b| {
            b.iter(|| store.condense_truncate(&ids, TARGET_TOKENS).unwrap());
        });
    }
    group.finish();
}

criterion_group!(condense, benches);
criterion_main!(condense);
