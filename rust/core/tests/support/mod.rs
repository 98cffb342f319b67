//! Fixtures shared by the compaction tests and benchmarks: stores on temporary
//! files, part builders, and a deterministic generator of agent-like sessions.
#![allow(dead_code)]

use lossless_core::parts::{FileRef, Part, Role, ToolCallPart, ToolStatus};
use lossless_core::store::{OpenOptions, Store};

pub const MODEL: &str = "gpt-4o";

/// A store on a fresh file in a temporary directory (kept alive by the guard).
pub fn temp_store() -> (tempfile::TempDir, String, Store) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("store.db").to_string_lossy().into_owned();
    let store = Store::open(&path, &OpenOptions::default()).expect("open store");
    (dir, path, store)
}

/// A second, plain SQLite connection on the store's file.
pub fn raw(path: &str) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).expect("raw connection");
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .expect("busy timeout");
    lossless_core::store::register_search_tokenizer(&conn).expect("tokenizer");
    conn
}

pub fn text(value: &str) -> Part {
    Part::Text(value.to_string())
}

pub fn tool(name: &str, call_id: &str, output: &str) -> Part {
    tool_with(name, call_id, Some(output), ToolStatus::Completed)
}

pub fn tool_with(name: &str, call_id: &str, output: Option<&str>, status: ToolStatus) -> Part {
    Part::Tool(ToolCallPart {
        name: name.to_string(),
        call_id: call_id.to_string(),
        input: format!("{{\"call\": \"{call_id}\"}}"),
        output: output.map(str::to_string),
        status,
        error: (status == ToolStatus::Error).then(|| "it failed".to_string()),
    })
}

pub fn file_ref(file_id: &str, path: &str) -> Part {
    Part::FileRef(FileRef {
        file_id: file_id.to_string(),
        path: path.to_string(),
        file_type: "text".to_string(),
        token_count: 50_000,
        summary: format!("a large file at {path}"),
    })
}

pub fn append(store: &mut Store, session: &str, role: Role, parts: &[Part]) -> String {
    store
        .append_message(session, role, parts, None)
        .expect("append")
        .id
}

/// `count` distinct words: roughly one token each.
pub fn words(seed: u64, count: usize) -> String {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut out = String::with_capacity(count * 7);
    for index in 0..count {
        if index > 0 {
            out.push(if index % 12 == 0 { '\n' } else { ' ' });
        }
        out.push_str(VOCAB[rng.below(VOCAB.len())]);
    }
    out
}

/// A small deterministic generator (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }
}

const VOCAB: &[&str] = &[
    "payment", "ledger", "refund", "invoice", "currency", "settle", "batch", "retry", "webhook",
    "merchant", "account", "balance", "charge", "capture", "dispute", "payout", "schedule",
    "config", "service", "handler", "request", "response", "timeout", "error", "value", "return",
    "import", "class", "def", "self", "test", "assert", "fixture", "module", "function", "string",
    "integer", "decimal", "round", "minor", "units",
];

/// A file id derived from `n`.
pub fn file_id(n: u64) -> String {
    format!("file_{:016x}", n.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// Appends `messages` messages of an agent-like session: a user turn every
/// `user_every` messages, assistant turns that read files (30% large outputs of
/// 2-8 KB, 20% small ones), occasional file references and file ids in text.
pub fn agent_session(
    store: &mut Store,
    session: &str,
    messages: usize,
    user_every: usize,
    seed: u64,
) -> Vec<String> {
    let mut rng = Rng(seed | 1);
    let mut ids = Vec::with_capacity(messages);
    for index in 0..messages {
        let word_seed = seed ^ (index as u64) << 8;
        let parts = if index % user_every == 0 {
            let mut parts = vec![text(&format!(
                "step {index}: {}",
                words(word_seed, 20 + rng.below(40))
            ))];
            if rng.below(40) == 0 {
                parts.push(file_ref(
                    &file_id(index as u64),
                    &format!("logs/run-{index}.log"),
                ));
            }
            (Role::User, parts)
        } else {
            let mut parts = vec![text(&words(word_seed, 10 + rng.below(60)))];
            let roll = rng.below(10);
            let call = format!("call_{index}");
            if roll < 3 {
                let size = 300 + rng.below(900);
                parts.push(tool("read_file", &call, &words(word_seed + 1, size)));
            } else if roll < 5 {
                parts.push(tool(
                    "grep",
                    &call,
                    &words(word_seed + 2, 20 + rng.below(40)),
                ));
            }
            if rng.below(50) == 0 {
                parts.push(text(&format!(
                    "see {} for the details",
                    file_id(index as u64)
                )));
            }
            (Role::Assistant, parts)
        };
        ids.push(append(store, session, parts.0, &parts.1));
    }
    ids
}
