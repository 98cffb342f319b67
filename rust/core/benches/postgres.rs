//! The PostgreSQL floor under the store's hot paths, on a throwaway server on this
//! machine: one statement's round trip, and the statements of one appended turn (a
//! 500-character text and a tool call with a 4 KB output, as `benches/append.rs`)
//! in one transaction, over the Unix socket and over 127.0.0.1.
//!
//! The store does not run on PostgreSQL yet; these are the figures its append is
//! built on (target: ≤ 1 ms median). The test server runs with `fsync` and
//! `synchronous_commit` off, so a commit waits for no disk: on a durable server add
//! one WAL flush per turn.
//!
//! Run with `cargo bench -p lossless-core --bench postgres`.

#[path = "../tests/pg_cluster/mod.rs"]
mod pg_cluster;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use lossless_core::pg::{self, fts};
use lossless_core::store::BACKLOG_LIMIT;
use postgres::{Client, Statement};

/// The statements of one appended turn, as the store's append path makes them:
/// the session's counters, the message, its two parts, the tool output, the view
/// item and the two full-text backlog rows, with the backlog's size read last (and
/// the backlog emptied when it reaches the store's bound, as the store does).
struct Turn {
    lock: Statement,
    counters: Statement,
    message: Statement,
    part: Statement,
    output: Statement,
    item: Statement,
    backlog: Statement,
    waiting: Statement,
    drain: Statement,
}

impl Turn {
    fn prepare(client: &mut Client) -> Self {
        let mut prepare = |sql: &str| client.prepare(sql).expect("prepare");
        Self {
            lock: prepare("SELECT view_version FROM sessions WHERE id = $1 FOR UPDATE"),
            counters: prepare(
                "UPDATE sessions SET next_seq = next_seq + 1, next_position = next_position + 1,
                     view_version = view_version + 1
                 WHERE id = $1 RETURNING next_seq - 1, next_position - 1, view_version",
            ),
            message: prepare(
                "INSERT INTO messages (id, session_id, seq, role, created_at, status, token_count)
                 VALUES ($1, $2, $3, 'assistant', 0, 'complete', $4)",
            ),
            part: prepare(
                "INSERT INTO parts (id, message_id, session_id, msg_seq, ord, kind, tool_name,
                     call_id, tool_status, token_count, body)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING pk",
            ),
            output: prepare("INSERT INTO tool_outputs (part_pk, output) VALUES ($1, $2)"),
            item: prepare(
                "INSERT INTO context_items (session_id, position, kind, item_id, token_count)
                 VALUES ($1, $2, 'message', $3, $4)",
            ),
            backlog: prepare(
                "INSERT INTO search_backlog (fts_rowid) VALUES ($1) ON CONFLICT DO NOTHING",
            ),
            waiting: prepare("SELECT count(*) FROM search_backlog"),
            drain: prepare("DELETE FROM search_backlog"),
        }
    }

    fn append(&self, client: &mut Client, session: &str, call: u64, text: &str, output: &str) {
        let mut tx = client.transaction().expect("begin");
        tx.query_one(&self.lock, &[&session]).expect("lock");
        let row = tx.query_one(&self.counters, &[&session]).expect("counters");
        let (seq, position): (i64, i64) = (row.get(0), row.get(1));
        let message = format!("msg_{session}_{call}");
        let tokens = 1_200_i64;
        tx.execute(&self.message, &[&message, &session, &seq, &tokens])
            .expect("message");
        let none: Option<&str> = None;
        let text_pk: i64 = tx
            .query_one(
                &self.part,
                &[
                    &format!("prt_{session}_{call}_0"),
                    &message,
                    &session,
                    &seq,
                    &0_i64,
                    &"text",
                    &none,
                    &none,
                    &none,
                    &125_i64,
                    &text,
                ],
            )
            .expect("text part")
            .get(0);
        let call_id = format!("call_{call}");
        let tool_pk: i64 = tx
            .query_one(
                &self.part,
                &[
                    &format!("prt_{session}_{call}_1"),
                    &message,
                    &session,
                    &seq,
                    &1_i64,
                    &"tool",
                    &Some("read_file"),
                    &Some(call_id.as_str()),
                    &Some("completed"),
                    &1_075_i64,
                    &r#"{"path": "payhub/fx/service.py"}"#,
                ],
            )
            .expect("tool part")
            .get(0);
        tx.execute(&self.output, &[&tool_pk, &output])
            .expect("output");
        tx.execute(&self.item, &[&session, &position, &message, &tokens])
            .expect("view item");
        for pk in [text_pk, tool_pk] {
            tx.execute(&self.backlog, &[&pk]).expect("backlog");
        }
        let waiting: i64 = tx.query_one(&self.waiting, &[]).expect("waiting").get(0);
        if waiting >= BACKLOG_LIMIT {
            // The store moves the backlog into the index here; its cost per row is
            // `document_vector_4k` plus an insert, and is left out of this figure.
            tx.execute(&self.drain, &[]).expect("drain");
        }
        tx.commit().expect("commit");
    }
}

fn words(count: usize) -> String {
    let vocabulary = [
        "ledger", "rate", "service", "payhub", "retry", "the", "of", "timeout",
    ];
    (0..count)
        .map(|i| vocabulary[(i * 7 + i / 3) % vocabulary.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

fn benches(c: &mut Criterion) {
    let db = pg_cluster::database();
    let mut prepared = pg::Database::open(&db.url()).expect("schema");
    prepared
        .client()
        .batch_execute(
            "INSERT INTO sessions (id, model, created_at, config) VALUES ('ses_socket', 'm', 0, '{}'),
                 ('ses_tcp', 'm', 0, '{}')",
        )
        .expect("sessions");
    let text: String = words(120).chars().take(500).collect();
    let output: String = words(1_000).chars().take(4096).collect();
    let mut group = c.benchmark_group("postgres");
    for (name, url) in [("socket", db.admin_url()), ("tcp", db.url())] {
        let mut client = pg::connect(&url).expect("connect");
        let ping = client.prepare("SELECT 1").expect("prepare");
        group.bench_function(format!("round_trip_{name}"), |b| {
            b.iter(|| black_box(client.query_one(&ping, &[]).expect("ping")));
        });
        let turn = Turn::prepare(&mut client);
        let session = format!("ses_{name}");
        let mut call = 0_u64;
        group.bench_function(format!("append_turn_{name}"), |b| {
            b.iter(|| {
                call += 1;
                turn.append(&mut client, &session, call, &text, &output);
            });
        });
    }
    // The index row of the 4 KB output, made by the store's tokenizer.
    group.bench_function("document_vector_4k", |b| {
        b.iter(|| black_box(fts::document_vector(&output)));
    });
    group.finish();
}

criterion_group!(postgres_benches, benches);
criterion_main!(postgres_benches);
