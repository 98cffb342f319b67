//! One turn's arena plan over 4,096 live entries (the default entry ceiling): sort,
//! allocation, cuts at the zone boundaries and rendering. Target: <= 200 µs median.

use std::hint::black_box;

mod rng;

use criterion::{criterion_group, criterion_main, Criterion};
use lossless_core::arena::{
    plan_turn, ArenaRules, ArenaState, CeilingPolicy, ControllerRules, Entry, PlanRules, Priority,
    Zone, ZoneLimits,
};
use lossless_core::tokens::TokenCounter;
use rng::XorShift;

const WORDS: &[&str] = &[
    "ledger", "payout", "retry", "never", "touch", "billing", "the", "client", "schema", "tests",
];

fn entries(count: usize) -> Vec<Entry> {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    (0..count)
        .map(|seq| {
            let words = 8 + rng.below(60);
            let text: Vec<&str> = (0..words)
                .map(|_| WORDS[rng.below(WORDS.len() as u64)])
                .collect();
            let text = text.join(" ");
            Entry {
                seq: seq as i64,
                zone: Zone::ALL[rng.below(7)],
                key: format!("key-{seq}"),
                source: "bench".into(),
                priority: Priority::ALL[rng.below(4)],
                tokens: words as i64,
                full_tokens: words as i64,
                text,
                once: false,
                external: false,
            }
        })
        .collect()
}

fn rules() -> ArenaRules {
    let caps = [512, 1_024, 512, 640, 768, 1_024, 768];
    let floors = [0, 256, 128, 0, 0, 0, 0];
    let mut limits = [ZoneLimits::default(); 7];
    for (at, limit) in limits.iter_mut().enumerate() {
        *limit = ZoneLimits {
            floor: floors[at],
            cap: caps[at],
        };
    }
    ArenaRules {
        plan: PlanRules {
            limits,
            relax_order: vec![Zone::MemoryRecall, Zone::ToolFailures, Zone::MemoryWorking],
            cascade: true,
            min_cut_tokens: 32,
        },
        controller: ControllerRules::default(),
        max_entries: 4_096,
        policy: CeilingPolicy::DropRecall,
    }
}

fn bench(c: &mut Criterion) {
    let live = entries(4_096);
    let rules = rules();
    let state = ArenaState::default();
    let counter = TokenCounter::new("gpt-4o", 1.0);
    let count = |text: &str| counter.count(text);
    count("warm the encoder");
    c.bench_function("arena plan, 4,096 live entries", |b| {
        b.iter(|| black_box(plan_turn(&live, &[], &state, &rules, 4_096, &count)));
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
