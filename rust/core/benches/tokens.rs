//! Token counting throughput: `TokenCounter::count_many` against calling
//! tiktoken-rs directly on the same 10,000 short messages.

use std::hint::black_box;

mod rng;

use criterion::{criterion_group, criterion_main, Criterion};
use lossless_core::tokens::{warm, TokenCounter};
use rng::XorShift;

const WORDS: &[&str] = &[
    "the",
    "file",
    "test",
    "error",
    "function",
    "returns",
    "value",
    "src/lib.rs",
    "cargo",
    "build",
    "failed",
    "because",
    "missing",
    "import",
    "fix",
    "it",
    "please",
    "and",
    "run",
    "again",
    "{",
    "}",
    "()",
    "=>",
    "let",
    "x",
    "=",
    "42;",
    "Hello",
    "world",
    "OK",
    "TODO",
];

fn messages(n: usize) -> Vec<String> {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    (0..n)
        .map(|_| {
            let target = 20 + rng.below(181);
            let mut s = String::with_capacity(target + 16);
            while s.len() < target {
                if !s.is_empty() {
                    s.push(if rng.below(8) == 0 { '\n' } else { ' ' });
                }
                s.push_str(WORDS[rng.below(WORDS.len() as u64)]);
            }
            s.truncate(target);
            s
        })
        .collect()
}

fn count_many_10k(c: &mut Criterion) {
    warm();
    let owned = messages(10_000);
    let texts: Vec<&str> = owned.iter().map(String::as_str).collect();
    let counter = TokenCounter::new("gpt-4o", 1.0);
    let bpe = tiktoken_rs::o200k_base_singleton();
    assert_eq!(
        counter.count_many(&texts),
        texts
            .iter()
            .map(|t| bpe.encode_ordinary(t).len())
            .collect::<Vec<_>>()
    );

    let mut group = c.benchmark_group("count_many_10k");
    group.bench_function("token_counter", |b| {
        b.iter(|| counter.count_many(black_box(&texts)));
    });
    group.bench_function("tiktoken_direct", |b| {
        b.iter(|| {
            let mut out = Vec::with_capacity(texts.len());
            for t in black_box(&texts) {
                out.push(bpe.encode_ordinary(t).len());
            }
            out
        });
    });
    group.finish();
}

criterion_group!(benches, count_many_10k);
criterion_main!(benches);
