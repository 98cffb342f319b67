//! Token counting throughput against calling tiktoken-rs directly: 10,000
//! short messages, and one message of a 500-character text plus a 4 KB tool
//! output (the size the append target is set for).

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

/// Benchmarks `TokenCounter::count_many` on `texts` against tiktoken-rs called
/// directly, after checking that both give the same counts.
fn against_tiktoken(c: &mut Criterion, group: &str, texts: &[&str]) {
    let counter = TokenCounter::new("gpt-4o", 1.0);
    let bpe = tiktoken_rs::o200k_base_singleton();
    let direct = |texts: &[&str]| -> Vec<usize> {
        texts.iter().map(|t| bpe.encode_ordinary(t).len()).collect()
    };
    assert_eq!(counter.count_many(texts), direct(texts));
    let mut group = c.benchmark_group(group);
    group.bench_function("token_counter", |b| {
        b.iter(|| counter.count_many(black_box(texts)));
    });
    group.bench_function("tiktoken_direct", |b| {
        b.iter(|| direct(black_box(texts)));
    });
    group.finish();
}

fn count_many_10k(c: &mut Criterion) {
    warm();
    let owned = messages(10_000);
    let texts: Vec<&str> = owned.iter().map(String::as_str).collect();
    against_tiktoken(c, "count_many_10k", &texts);
}

const IDENTS: &[&str] = &[
    "lookup_rate",
    "settle_invoice",
    "apply_refund",
    "parse_ledger",
    "retry_policy",
    "currency_code",
];
const AREAS: &[&str] = &["fx", "ledger", "billing", "reports", "api"];
const MODULES: &[&str] = &["service", "models", "client", "views", "utils"];

fn sentence(rng: &mut XorShift) -> String {
    let n = 6 + rng.below(13);
    let mut words: Vec<&str> = (0..n)
        .map(|_| WORDS[rng.below(WORDS.len() as u64)])
        .collect();
    if rng.below(3) == 0 {
        words.insert(rng.below(n as u64), IDENTS[rng.below(IDENTS.len() as u64)]);
    }
    words.join(" ") + "."
}

/// Log-like tool output: grep hits, calls and test results, as an agent's
/// tools print them.
fn tool_output(rng: &mut XorShift, len: usize) -> String {
    let mut out = String::with_capacity(len + 200);
    while out.len() < len {
        let path = format!(
            "payhub/{}/{}.py",
            AREAS[rng.below(AREAS.len() as u64)],
            MODULES[rng.below(MODULES.len() as u64)]
        );
        let line = match rng.below(4) {
            0 | 1 => format!("{path}:{}: {}", 1 + rng.below(900), sentence(rng)),
            2 => format!(
                "    {}(value={}, retries={})",
                IDENTS[rng.below(IDENTS.len() as u64)],
                rng.below(10_000),
                rng.below(6)
            ),
            _ => format!(
                "tests/test_{}.py::test_{} PASSED [{}%]",
                WORDS[rng.below(WORDS.len() as u64)].trim_matches(|c: char| !c.is_alphanumeric()),
                IDENTS[rng.below(IDENTS.len() as u64)],
                1 + rng.below(99)
            ),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out.truncate(len);
    out
}

fn count_message_4k6(c: &mut Criterion) {
    warm();
    let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
    let mut text = String::new();
    while text.len() < 500 {
        text.push_str(&sentence(&mut rng));
        text.push(' ');
    }
    text.truncate(500);
    let output = tool_output(&mut rng, 4096);
    against_tiktoken(c, "count_message_4k6", &[text.as_str(), output.as_str()]);
}

criterion_group!(benches, count_many_10k, count_message_4k6);
criterion_main!(benches);
