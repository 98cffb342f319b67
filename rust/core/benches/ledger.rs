//! The ledger's cost in the core: reading 1,000 messages of an agent session (one
//! in three from the user, 30% with a tool call) into items, folding them into a
//! live ledger of 200 items and rendering it under its caps.

use std::hint::black_box;

mod rng;

use criterion::{criterion_group, criterion_main, Criterion};
use lossless_core::extractive::{SourceMessage, SourceTool};
use lossless_core::ledger::{extract, merge, render, Item, Origin};
use lossless_core::tokens::{warm, TokenCounter};
use rng::XorShift;

/// Filler vocabulary.
const WORDS: &[&str] = &[
    "the", "parser", "test", "fails", "when", "input", "is", "empty", "we", "that", "config",
    "value", "returns", "error", "in", "module", "please", "check", "again", "and", "then", "run",
    "function", "file", "line", "code", "output", "build", "with", "for", "this", "it", "a", "to",
];

/// Sentences that are ledger items, with a value each.
const STATEMENTS: &[&str] = &[
    "Never push to the branch release-{n}.",
    "The vault code is QX{n}-44-ZB.",
    "Budget cap is ${n} total. Never exceed it.",
    "We decided to use engine-{n} for the queue.",
    "I prefer replies under {n} words.",
    "The goal is to close epic EP-{n}.",
];

fn text(rng: &mut XorShift, statement_percent: usize) -> String {
    let mut s = String::new();
    for sentence in 0..(2 + rng.below(5)) {
        if sentence > 0 {
            s.push(' ');
        }
        if rng.below(100) < statement_percent {
            let template = STATEMENTS[rng.below(STATEMENTS.len() as u64)];
            s.push_str(&template.replace("{n}", &rng.below(10_000).to_string()));
            continue;
        }
        for w in 0..(6 + rng.below(12)) {
            if w > 0 {
                s.push(' ');
            }
            s.push_str(WORDS[rng.below(WORDS.len() as u64)]);
        }
        s.push('.');
    }
    s
}

struct Corpus {
    texts: Vec<String>,
    inputs: Vec<String>,
    output: String,
}

fn corpus(n: usize, statement_percent: usize) -> Corpus {
    let mut rng = XorShift(0xD1B5_4A32_D192_ED03);
    Corpus {
        texts: (0..n).map(|_| text(&mut rng, statement_percent)).collect(),
        inputs: (0..200)
            .map(|i| match i % 2 {
                0 => format!(r#"{{"path": "src/module_{i}/file.rs"}}"#),
                _ => format!(r#"{{"command": "cargo test -p crate_{i}"}}"#),
            })
            .collect(),
        output: format!("{}\nexit code: 1", "x".repeat(780)),
    }
}

fn messages(c: &Corpus) -> Vec<SourceMessage<'_>> {
    let mut rng = XorShift(0x1234_5678_9ABC_DEF1);
    c.texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let mut m = SourceMessage {
                role: if i % 3 == 0 { "user" } else { "assistant" },
                seq: i as i64,
                texts: vec![text.as_str()],
                ..SourceMessage::default()
            };
            if rng.below(10) < 3 {
                m.tools.push(SourceTool {
                    name: ["read_file", "bash", "edit_file"][rng.below(3)],
                    input: &c.inputs[rng.below(c.inputs.len() as u64)],
                    status: if rng.below(10) == 0 {
                        "error"
                    } else {
                        "completed"
                    },
                    output: Some(&c.output),
                    error: None,
                });
            }
            m
        })
        .collect()
}

fn live_items(n: usize) -> Vec<Item> {
    (0..n)
        .map(|i| Item {
            id: format!("led_{i}"),
            kind: lossless_core::ledger::Kind::ALL[i % 10],
            subject: format!("subject {i}"),
            text: format!("The value of subject {i} is V-{i}-{}.", i * 7),
            origin: Origin::Extracted,
            first_seq: i as i64,
            seq: i as i64,
            ord: i as i64,
            changed: i % 7 == 0,
            message_ids: Vec::new(),
        })
        .collect()
}

fn ledger_1k(c: &mut Criterion) {
    warm();
    let counter = TokenCounter::new("gpt-4o", 1.0);
    let count = |s: &str| counter.count(s);
    let mut group = c.benchmark_group("ledger_1k_messages");
    for (label, percent) in [("prose", 3), ("statement_dense", 40)] {
        let corpus = corpus(1_000, percent);
        let msgs = messages(&corpus);
        group.bench_function(format!("extract/{label}"), |b| {
            b.iter(|| extract(black_box(&msgs)));
        });
        let found = extract(&msgs);
        let live = live_items(200);
        group.bench_function(format!("merge_into_200/{label}"), |b| {
            b.iter(|| merge(black_box(&live), black_box(&found)));
        });
    }
    let live = live_items(200);
    group.bench_function("render_200_items", |b| {
        b.iter(|| render(black_box(&live), (1_024, 384), &count));
    });
    group.finish();
}

criterion_group!(benches, ledger_1k);
criterion_main!(benches);
