//! Extractive summary of a 10,000-message transcript in which 30% of the
//! messages carry a tool call with a 4 KB output.

use std::hint::black_box;

mod rng;

use criterion::{criterion_group, criterion_main, Criterion};
use lossless_core::extractive::{extractive_summary, SourceFileRef, SourceMessage, SourceTool};
use lossless_core::tokens::{warm, TokenCounter};
use rng::XorShift;

/// Filler vocabulary.
const WORDS: &[&str] = &[
    "the", "parser", "test", "fails", "when", "input", "is", "empty", "we", "that", "config",
    "value", "returns", "error", "in", "module", "please", "check", "again", "and", "then", "run",
    "function", "file", "line", "code", "output", "build", "with", "for", "this", "it", "a", "to",
    "of", "on", "should", "will", "can", "see", "use", "call", "type", "struct",
];

/// Words that tag a sentence for one of the summary sections.
const KEYWORDS: &[&str] = &[
    "found", "because", "must", "never", "only", "next", "TODO", "fixed", "added", "always",
];

struct Corpus {
    texts: Vec<String>,
    inputs: Vec<String>,
    output: String,
    ids: Vec<String>,
}

/// `keyword_percent` sets how many words are summary keywords: about 2 in
/// ordinary prose, much higher for a worst case where most sentences are
/// picked up.
fn corpus(n: usize, keyword_percent: usize) -> Corpus {
    let mut rng = XorShift(0xD1B5_4A32_D192_ED03);
    let texts = (0..n)
        .map(|_| {
            let words = 20 + rng.below(60);
            let mut s = String::new();
            for w in 0..words {
                if w > 0 {
                    s.push_str(if rng.below(10) == 0 { ". " } else { " " });
                }
                if rng.below(100) < keyword_percent {
                    s.push_str(KEYWORDS[rng.below(KEYWORDS.len() as u64)]);
                } else {
                    s.push_str(WORDS[rng.below(WORDS.len() as u64)]);
                }
            }
            s.push('.');
            s
        })
        .collect();
    let inputs = (0..200)
        .map(|i| {
            format!(
                r#"{{"path": "src/module_{i}/file_{}.rs", "limit": 200}}"#,
                i % 37
            )
        })
        .collect();
    let ids = (0..50).map(|i| format!("file_{:08x}", i * 7919)).collect();
    Corpus {
        texts,
        inputs,
        output: "x".repeat(4096),
        ids,
    }
}

fn messages(c: &Corpus) -> Vec<SourceMessage<'_>> {
    let mut rng = XorShift(0x1234_5678_9ABC_DEF1);
    c.texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let role = if i % 3 == 0 { "user" } else { "assistant" };
            let mut m = SourceMessage {
                role,
                seq: i as i64,
                texts: vec![text.as_str()],
                tools: Vec::new(),
                file_refs: Vec::new(),
            };
            if rng.below(10) < 3 {
                let failed = rng.below(20) == 0;
                m.tools.push(SourceTool {
                    name: ["read_file", "bash", "edit_file", "grep"][rng.below(4)],
                    input: &c.inputs[rng.below(c.inputs.len() as u64)],
                    status: if failed { "error" } else { "completed" },
                    output: Some(&c.output),
                    error: failed.then_some("command exited with status 1\nstderr follows"),
                });
            }
            if rng.below(100) == 0 {
                m.file_refs.push(SourceFileRef {
                    file_id: &c.ids[rng.below(c.ids.len() as u64)],
                    path: "docs/attachment.pdf",
                });
            }
            m
        })
        .collect()
}

fn summary_10k(c: &mut Criterion) {
    warm();
    let counter = TokenCounter::new("gpt-4o", 1.0);
    let count = |s: &str| counter.count(s);

    let mut group = c.benchmark_group("extractive_10k");
    for (label, keyword_percent) in [("prose", 2), ("keyword_dense", 30)] {
        let corpus = corpus(10_000, keyword_percent);
        let msgs = messages(&corpus);
        for budget in [2_000usize, 20_000] {
            let out = extractive_summary(&msgs, budget, &count);
            assert!(count(&out) <= budget);
            group.bench_function(format!("{label}/budget_{budget}"), |b| {
                b.iter(|| extractive_summary(black_box(&msgs), budget, &count));
            });
        }
    }
    group.finish();
}

criterion_group!(benches, summary_10k);
criterion_main!(benches);
