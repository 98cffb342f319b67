//! File ID extraction throughput on 1 MB of text with 1,000 IDs, as
//! ~80-character lines and as a single line.

use std::fmt::Write as _;
use std::hint::black_box;

mod rng;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use lossless_core::fileids::extract_file_ids;
use rng::XorShift;

const WORDS: &[&str] = &[
    "the",
    "profile",
    "files",
    "file",
    "_file",
    "deadbeef",
    "cafe",
    "result",
    "of",
    "loading",
    "file_",
    "is",
    "stored",
    "in",
    "a",
    "buffer",
    "see",
    "log",
    "0123456789",
    "ok",
    "x",
];

/// About 1 MB of ~80-character lines; every 12th line carries a file ID so
/// that 1,000 IDs are spread over the text.
fn corpus() -> String {
    const SIZE: usize = 1 << 20;
    let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
    let mut text = String::with_capacity(SIZE + 128);
    let mut ids = 0;
    let mut line_no = 0;
    while text.len() < SIZE {
        let mut line = String::with_capacity(96);
        if line_no % 12 == 0 && ids < 1000 {
            let _ = write!(line, "file_{:016x} ", rng.next());
            ids += 1;
        }
        while line.len() < 80 {
            line.push_str(WORDS[rng.below(WORDS.len() as u64)]);
            line.push(' ');
        }
        line.pop();
        text.push_str(&line);
        text.push('\n');
        line_no += 1;
    }
    assert_eq!(ids, 1000);
    text
}

fn extract(c: &mut Criterion) {
    let lines = corpus();
    let single = lines.replace('\n', " ");
    assert_eq!(extract_file_ids(&lines).len(), 1000);
    assert_eq!(extract_file_ids(&single).len(), 1000);

    let mut group = c.benchmark_group("extract_file_ids_1mb");
    group.throughput(Throughput::Bytes(lines.len() as u64));
    group.bench_function("lines", |b| b.iter(|| extract_file_ids(black_box(&lines))));
    group.throughput(Throughput::Bytes(single.len() as u64));
    group.bench_function("single_line", |b| {
        b.iter(|| extract_file_ids(black_box(&single)));
    });
    group.finish();
}

criterion_group!(benches, extract);
criterion_main!(benches);
