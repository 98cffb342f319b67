//! Redaction throughput over about 8 MB of mixed text (prose, code, JSON tool
//! output, log lines, base64) with a secret every ~20 KB, and the time of one
//! typical turn (~4 KB of text, no secret). The bar is 200 MB/s
//! (docs/GOVERNANCE.md). A plain copy of the text sits in the group as the floor.
//!
//! Besides criterion's report, the figures are printed on one line each. Run with
//! `cargo bench -p lossless-core --bench redact`.

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::{Duration, Instant};

mod rng;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use lossless_core::redact::{Redactor, RuleSet};
use rng::XorShift;

const SIZE: usize = 8 << 20;
const SECRET_EVERY: usize = 20 << 10;
const TURN_SIZE: usize = 4 << 10;

const WORDS: &[&str] = &[
    "the",
    "model",
    "reads",
    "a",
    "file",
    "and",
    "writes",
    "tokens",
    "to",
    "context",
    "of",
    "session",
    "which",
    "keeps",
    "every",
    "turn",
    "key",
    "question",
    "is",
    "where",
    "secret",
    "password",
    "policy",
    "asks",
    "task",
    "summary",
    "compaction",
    "window",
    "store",
    "append",
];

const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const BASE64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn pick(rng: &mut XorShift, alphabet: &[u8], len: usize) -> String {
    (0..len)
        .map(|_| char::from(alphabet[rng.below(alphabet.len() as u64)]))
        .collect()
}

fn prose(rng: &mut XorShift, out: &mut String) {
    for _ in 0..8 {
        for _ in 0..14 {
            out.push_str(WORDS[rng.below(WORDS.len() as u64)]);
            out.push(' ');
        }
        out.push_str("done.\n");
    }
}

fn code(rng: &mut XorShift, out: &mut String) {
    let n = rng.below(1000);
    let _ = write!(
        out,
        "fn handle_{n}(config: &Config, tokens: &[u32]) -> Result<usize> {{\n    \
         let password = std::env::var(\"DB_PASSWORD\")?;\n    \
         let token = tokens[{n} % tokens.len()];\n    \
         let api_key: String = config.api_key.clone();\n    \
         Ok(token as usize + password.len() + api_key.len())\n}}\n\n\
         def handle_{n}(config, tokens):\n    secret = os.environ[\"SECRET_{n}\"]\n    \
         return tokenizer.encode(config.text)[{n}]\n\n"
    );
}

fn json(rng: &mut XorShift, out: &mut String) {
    let id = pick(rng, ALNUM, 12);
    let _ = writeln!(
        out,
        "{{\"id\": \"call_{id}\", \"status\": \"ok\", \"usage\": {{\"input_tokens\": {}, \
         \"output_tokens\": {}}}, \"next_page_token\": \"{}\", \"files\": [\"src/lib.rs\", \
         \"docs/GOVERNANCE.md\"], \"sha\": \"{}\"}}",
        rng.below(100_000),
        rng.below(4_000),
        pick(rng, ALNUM, 40),
        pick(rng, b"0123456789abcdef", 40)
    );
}

fn logs(rng: &mut XorShift, out: &mut String) {
    for _ in 0..6 {
        let _ = writeln!(
            out,
            "2024-05-01T12:{:02}:{:02}.{:03}Z INFO http: GET /v1/sessions/{} 200 {}ms \
             request_id=req_{} user=alice token_count={}",
            rng.below(60),
            rng.below(60),
            rng.below(1000),
            rng.below(10_000),
            rng.below(500),
            pick(rng, ALNUM, 16),
            rng.below(9000)
        );
    }
}

fn base64(rng: &mut XorShift, out: &mut String) {
    out.push_str("data:image/png;base64,");
    let len = 2048 + rng.below(2048);
    out.push_str(&pick(rng, BASE64, len));
    out.push_str("==\n");
}

/// A fake secret of one of a few rules, built at run time.
fn secret(rng: &mut XorShift) -> String {
    match rng.below(8) {
        0 => format!("ghp_{}", pick(rng, ALNUM, 36)),
        1 => format!("AKIA{}", pick(rng, b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)),
        2 => format!("sk_live_{}", pick(rng, ALNUM, 24)),
        3 => format!(
            "xoxb-{}-{}-{}",
            rng.below(1 << 40) + (1 << 40),
            rng.below(1 << 40) + (1 << 40),
            pick(rng, ALNUM, 24)
        ),
        4 => format!(
            "eyJ{}.eyJ{}.{}",
            pick(rng, ALNUM, 30),
            pick(rng, ALNUM, 60),
            pick(rng, ALNUM, 43)
        ),
        5 => format!("postgres://app:{}@db.internal/main", pick(rng, ALNUM, 16)),
        6 => format!("DATABASE_PASSWORD={}", pick(rng, ALNUM, 20)),
        _ => format!("sk-ant-api03-{}AA", pick(rng, ALNUM, 93)),
    }
}

/// About `size` bytes of mixed text, with a secret every `SECRET_EVERY` bytes when
/// `secrets` is set; and how many secrets it holds.
fn mixed(seed: u64, size: usize, secrets: bool) -> (String, usize) {
    let mut rng = XorShift(seed);
    let mut text = String::with_capacity(size + 8192);
    let mut planted = 0;
    let mut next_secret = SECRET_EVERY;
    while text.len() < size {
        match rng.below(5) {
            0 => prose(&mut rng, &mut text),
            1 => code(&mut rng, &mut text),
            2 => json(&mut rng, &mut text),
            3 => logs(&mut rng, &mut text),
            _ => base64(&mut rng, &mut text),
        }
        if secrets && text.len() >= next_secret {
            text.push(' ');
            text.push_str(&secret(&mut rng));
            text.push('\n');
            planted += 1;
            next_secret += SECRET_EVERY;
        }
    }
    (text, planted)
}

/// The mean time of `run` over about `budget` (once when run as a test).
fn time(budget: Duration, mut run: impl FnMut()) -> Duration {
    let measuring = std::env::args().any(|arg| arg == "--bench");
    let start = Instant::now();
    let mut rounds = 0_u32;
    loop {
        run();
        rounds += 1;
        if !measuring || start.elapsed() >= budget {
            return start.elapsed() / rounds;
        }
    }
}

fn benches(c: &mut Criterion) {
    let redactor = Redactor::new(&[0x42; 32], RuleSet::Defaults);
    let (corpus, planted) = mixed(0x2545_F491_4F6C_DD1D, SIZE, true);
    let (turn, _) = mixed(0x9E37_79B9_7F4A_7C15, TURN_SIZE, false);
    let found: usize = redactor.redact(&corpus).found.iter().map(|f| f.count).sum();
    assert_eq!(found, planted, "every planted secret, and nothing else");
    assert!(redactor.redact(&turn).found.is_empty());

    let mixed_time = time(Duration::from_secs(3), || {
        black_box(redactor.redact(black_box(&corpus)));
    });
    let turn_time = time(Duration::from_secs(1), || {
        black_box(redactor.redact(black_box(&turn)));
    });
    println!(
        "redact: {:.1} MB mixed text with {planted} secrets: {:.0} MB/s; one turn of {:.1} KB: {:.1} µs",
        corpus.len() as f64 / 1e6,
        corpus.len() as f64 / 1e6 / mixed_time.as_secs_f64(),
        turn.len() as f64 / 1e3,
        turn_time.as_secs_f64() * 1e6
    );

    let mut group = c.benchmark_group("redact_mixed_8mb");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(corpus.len() as u64));
    group.bench_function("redact", |b| b.iter(|| redactor.redact(black_box(&corpus))));
    group.bench_function("baseline_copy", |b| {
        b.iter(|| black_box(&corpus).to_owned());
    });
    group.finish();

    let mut group = c.benchmark_group("redact_turn_4kb");
    group.throughput(Throughput::Bytes(turn.len() as u64));
    group.bench_function("redact", |b| b.iter(|| redactor.redact(black_box(&turn))));
    group.finish();
}

criterion_group!(redact, benches);
criterion_main!(redact);
