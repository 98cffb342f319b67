//! The store's schema in PostgreSQL: the tables, indexes and append-only triggers
//! of the SQLite schema of the same version (`db/schema.rs`), translated.
//!
//! The translation, table by table, keeps names, columns and keys, so the store's
//! queries read the same on both. What differs and why:
//! - `INTEGER` is `BIGINT` (SQLite's integers are 64 bits), `REAL` is
//!   `DOUBLE PRECISION`, `BLOB` is `BYTEA`; flags stay integers, so rows decode
//!   the same way on both.
//! - An explicit rowid (`pk INTEGER PRIMARY KEY`) is an identity column; the store
//!   reads a new row's key with `RETURNING pk` where SQLite has
//!   `last_insert_rowid()`.
//! - The full-text index is the table `search_index`: a `tsvector` of the terms the
//!   store's own tokenizer makes (see `fts.rs`) under a GIN index, beside the text
//!   a snippet is cut from, with the same keys as SQLite's `fts` rows.
//! - The append-only triggers call one PL/pgSQL function that raises the trigger's
//!   message; `IS NOT` is `IS DISTINCT FROM`. SQLite's `*_no_replace` triggers guard
//!   against `INSERT OR REPLACE`, which PostgreSQL does not have: its way to
//!   rewrite a row on insert (`ON CONFLICT DO UPDATE`) fires the update triggers,
//!   and a plain duplicate fails on the key. `TRUNCATE` skips row triggers, so every
//!   append-only table has a statement trigger that refuses it.
//! - Every `TEXT` column compares and sorts bytewise (`COLLATE "C"`), as SQLite's
//!   do: ids are ordered by their bytes, whatever the database's default collation.
//! - The schema version is a row of `lossless_schema`, not `PRAGMA user_version`.

use std::fmt::Write as _;

/// The schema version these tables are: the SQLite schema's, whose tables they
/// translate (a test compares the two).
pub const SCHEMA_VERSION: i64 = 15;

/// The version row and the function every append-only trigger calls.
pub(super) const META: &str = r"
CREATE TABLE lossless_schema (
    singleton BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (singleton),
    version   BIGINT NOT NULL
);
";

/// The function every append-only trigger calls (as of version 14). It refuses,
/// except a row delete inside an erasure's transaction, which sets
/// `lossless.erasing` with `SET LOCAL` (see `erasure/`): the one way through.
pub(super) const REFUSE: &str = r"
CREATE OR REPLACE FUNCTION lossless_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND TG_LEVEL = 'ROW'
       AND current_setting('lossless.erasing', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION USING MESSAGE = TG_ARGV[0];
END
$$;
";

/// Erasure receipts, subjects, retention rules and the database's keys (SQLite
/// version 14). The redaction key is 32 bytes from two random UUIDs (244 random
/// bits), hashed: the server's own strong random source without `pgcrypto`.
pub(super) const GOVERNANCE: &str = r#"
CREATE TABLE store_keys (
    name TEXT COLLATE "C" PRIMARY KEY,
    key  BYTEA NOT NULL
);
INSERT INTO store_keys (name, key) VALUES
    ('redaction', sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8')));
CREATE TABLE erasure_receipts (
    id          TEXT COLLATE "C" PRIMARY KEY,
    target_kind TEXT COLLATE "C" NOT NULL CHECK (target_kind IN ('session', 'message', 'subject')),
    target      TEXT COLLATE "C" NOT NULL,
    erased_by   TEXT COLLATE "C" NOT NULL,
    reason      TEXT NOT NULL,
    erased_at   BIGINT NOT NULL,
    counts      TEXT NOT NULL
);
CREATE TABLE session_subjects (
    subject    TEXT COLLATE "C" NOT NULL,
    session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions(id),
    created_at BIGINT NOT NULL,
    PRIMARY KEY (subject, session_id)
);
CREATE INDEX session_subjects_by_session ON session_subjects (session_id);
CREATE TABLE retention_rules (
    target_kind TEXT COLLATE "C" NOT NULL CHECK (target_kind IN ('session', 'subject')),
    target      TEXT COLLATE "C" NOT NULL,
    ord         BIGINT NOT NULL,
    ttl_ms      BIGINT,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (target_kind, target, ord)
);
"#;

/// The tables whose rows belong to a tenant (as of version 14): every table but the
/// version row, the languages the index holds (no content) and the database's keys
/// (one fingerprint key for the file, so no tenant can read another's markers
/// anyway).
pub const TENANT_TABLES: [&str; 31] = [
    "sessions",
    "messages",
    "context_items",
    "file_refs",
    "events",
    "compaction_leases",
    "parts",
    "tool_outputs",
    "summaries",
    "summary_sources",
    "stream_checkpoints",
    "stream_chunks",
    "arena_entries",
    "arena_state",
    "file_contents",
    "file_chunks",
    "map_runs",
    "map_inputs",
    "map_outcomes",
    "session_parents",
    "media",
    "session_keys",
    "session_forks",
    "sync_inputs",
    "search_backlog",
    "search_index",
    "erasure_receipts",
    "session_subjects",
    "retention_rules",
    "ledger_items",
    "ledger_marks",
];

/// The tenant of a connection: `lossless.tenant` (set in the URL's `options`), or
/// none (the empty tenant) when it is not set.
const TENANT_FUNCTION: &str = r"
CREATE OR REPLACE FUNCTION lossless_tenant() RETURNS text LANGUAGE sql STABLE AS $$
    SELECT COALESCE(current_setting('lossless.tenant', true), '')
$$;
";

/// Keys that content or a caller's name decides, so two tenants may hold the same
/// one: each is unique per tenant.
const TENANT_KEYS: [(&str, &str, &str); 6] = [
    (
        "session_keys",
        "session_keys_pkey",
        "PRIMARY KEY (tenant, key, ord)",
    ),
    ("media", "media_media_id_key", "UNIQUE (tenant, media_id)"),
    (
        "file_refs",
        "file_refs_pkey",
        "PRIMARY KEY (tenant, file_id)",
    ),
    (
        "file_contents",
        "file_contents_pkey",
        "PRIMARY KEY (tenant, file_id)",
    ),
    (
        "file_chunks",
        "file_chunks_file_id_ord_key",
        "UNIQUE (tenant, file_id, ord)",
    ),
    (
        "retention_rules",
        "retention_rules_pkey",
        "PRIMARY KEY (tenant, target_kind, target, ord)",
    ),
];

/// Version 14's tenant column on every tenant table (those a later version adds get
/// theirs when its step runs them again) (the connection's tenant by
/// default, so no insert names it) and the per-tenant keys. Row-level security is
/// turned on separately (`tenants::enable`): without it the column costs a few
/// bytes a row and nothing else.
pub(super) fn tenant_columns() -> String {
    let mut sql = TENANT_FUNCTION.to_string();
    for table in TENANT_TABLES {
        let _ = writeln!(
            sql,
            "ALTER TABLE IF EXISTS {table} ADD COLUMN IF NOT EXISTS tenant TEXT COLLATE \"C\" NOT NULL
                 DEFAULT lossless_tenant();"
        );
    }
    for (table, constraint, key) in TENANT_KEYS {
        let _ = writeln!(
            sql,
            "ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {constraint},
                 ADD CONSTRAINT {constraint} {key};"
        );
    }
    sql
}

/// The append-only triggers of the version 14 tables. Receipts are kept even
/// through an erasure: their delete trigger does not ask the function.
pub(super) fn governance_triggers() -> String {
    let mut sql = String::new();
    for table in ["session_subjects", "retention_rules", "store_keys"] {
        sql.push_str(&append_only_triggers(table, None));
    }
    sql + &format!(
        "CREATE FUNCTION lossless_keep_receipts() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN RAISE EXCEPTION USING MESSAGE = '{}: erasure receipts are kept'; END $$;
         CREATE TRIGGER erasure_receipts_kept BEFORE DELETE OR UPDATE ON erasure_receipts
         FOR EACH ROW EXECUTE FUNCTION lossless_keep_receipts();
         CREATE TRIGGER erasure_receipts_no_truncate BEFORE TRUNCATE ON erasure_receipts
         FOR EACH STATEMENT EXECUTE FUNCTION lossless_keep_receipts();",
        crate::error::IMMUTABLE_MARKER
    )
}

/// The session ledger (SQLite version 15).
pub(super) const LEDGER: &str = r#"
CREATE TABLE IF NOT EXISTS ledger_items (
    session_id  TEXT COLLATE "C" NOT NULL REFERENCES sessions(id),
    ord         BIGINT NOT NULL,
    id          TEXT COLLATE "C" NOT NULL UNIQUE,
    kind        TEXT COLLATE "C" NOT NULL CHECK (kind IN ('rule', 'constraint', 'fact',
                    'decision', 'preference', 'goal', 'state', 'error', 'command', 'file')),
    subject     TEXT COLLATE "C" NOT NULL,
    text        TEXT COLLATE "C" NOT NULL,
    removed     BIGINT NOT NULL DEFAULT 0,
    changed     BIGINT NOT NULL DEFAULT 0,
    origin      TEXT COLLATE "C" NOT NULL CHECK (origin IN ('extracted', 'model', 'caller')),
    msg_seq     BIGINT NOT NULL,
    message_ids TEXT COLLATE "C",
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (session_id, ord)
);
CREATE INDEX IF NOT EXISTS ledger_items_by_subject ON ledger_items (session_id, subject, ord);
CREATE TABLE IF NOT EXISTS ledger_marks (
    session_id   TEXT COLLATE "C" PRIMARY KEY REFERENCES sessions(id),
    absorbed_seq BIGINT NOT NULL,
    stable_cap   BIGINT NOT NULL,
    volatile_cap BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
"#;

const TABLES: &str = r#"
CREATE TABLE sessions (
    id            TEXT COLLATE "C" PRIMARY KEY,
    model         TEXT COLLATE "C" NOT NULL,
    created_at    BIGINT NOT NULL,
    config        TEXT COLLATE "C" NOT NULL,
    system_prompt TEXT COLLATE "C",
    view_version  BIGINT NOT NULL DEFAULT 0,
    next_seq      BIGINT NOT NULL DEFAULT 1,
    next_position BIGINT NOT NULL DEFAULT 1
);
CREATE TABLE messages (
    id            TEXT COLLATE "C" PRIMARY KEY,
    session_id    TEXT COLLATE "C" NOT NULL REFERENCES sessions(id),
    seq           BIGINT NOT NULL,
    role          TEXT COLLATE "C" NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
    created_at    BIGINT NOT NULL,
    model         TEXT COLLATE "C",
    status        TEXT COLLATE "C" NOT NULL CHECK (status IN ('complete', 'streaming', 'incomplete')),
    token_count   BIGINT,
    input_tokens  BIGINT,
    output_tokens BIGINT,
    cost          DOUBLE PRECISION,
    finish_reason TEXT COLLATE "C",
    UNIQUE (session_id, seq)
);
CREATE TABLE context_items (
    session_id  TEXT COLLATE "C" NOT NULL,
    position    BIGINT NOT NULL,
    kind        TEXT COLLATE "C" NOT NULL CHECK (kind IN ('message', 'summary')),
    item_id     TEXT COLLATE "C" NOT NULL,
    token_count BIGINT NOT NULL,
    PRIMARY KEY (session_id, position)
);
CREATE TABLE file_refs (
    file_id      TEXT COLLATE "C" PRIMARY KEY,
    content_hash TEXT COLLATE "C" NOT NULL,
    path         TEXT COLLATE "C" NOT NULL,
    file_type    TEXT COLLATE "C" NOT NULL,
    token_count  BIGINT NOT NULL,
    summary      TEXT COLLATE "C" NOT NULL,
    created_at   BIGINT NOT NULL
);
CREATE TABLE events (
    session_id TEXT COLLATE "C" NOT NULL,
    seq        BIGINT NOT NULL,
    id         TEXT COLLATE "C" NOT NULL,
    name       TEXT COLLATE "C" NOT NULL,
    payload    TEXT COLLATE "C" NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE compaction_leases (
    session_id TEXT COLLATE "C" PRIMARY KEY,
    holder     TEXT COLLATE "C" NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE TABLE parts (
    pk               BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    id               TEXT COLLATE "C" NOT NULL UNIQUE,
    message_id       TEXT COLLATE "C" NOT NULL REFERENCES messages(id),
    session_id       TEXT COLLATE "C" NOT NULL,
    msg_seq          BIGINT NOT NULL,
    ord              BIGINT NOT NULL,
    kind             TEXT COLLATE "C" NOT NULL
                     CONSTRAINT parts_kind_check CHECK (kind IN (KIND_NAMES)),
    tool_name        TEXT COLLATE "C",
    call_id          TEXT COLLATE "C",
    tool_status      TEXT COLLATE "C" CHECK (tool_status IN ('pending', 'running', 'completed', 'error')),
    token_count      BIGINT NOT NULL,
    output_tokens    BIGINT NOT NULL DEFAULT 0,
    file_ids         TEXT COLLATE "C",
    compacted_at     BIGINT,
    compacted_tokens BIGINT,
    body             TEXT COLLATE "C" NOT NULL,
    tool_error       TEXT COLLATE "C"
);
CREATE TABLE tool_outputs (
    part_pk BIGINT PRIMARY KEY REFERENCES parts(pk),
    output  TEXT COLLATE "C" NOT NULL
);
CREATE TABLE summaries (
    pk             BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    id             TEXT COLLATE "C" NOT NULL UNIQUE,
    session_id     TEXT COLLATE "C" NOT NULL REFERENCES sessions(id),
    kind           TEXT COLLATE "C" NOT NULL CHECK (kind IN ('leaf', 'condensed')),
    level          BIGINT NOT NULL CHECK (level IN (1, 2, 3)),
    text           TEXT COLLATE "C" NOT NULL,
    token_count    BIGINT NOT NULL,
    span_start_seq BIGINT NOT NULL,
    span_end_seq   BIGINT NOT NULL,
    message_count  BIGINT NOT NULL,
    depth          BIGINT NOT NULL,
    file_ids       TEXT COLLATE "C",
    created_at     BIGINT NOT NULL,
    superseded_by  TEXT COLLATE "C"
);
CREATE TABLE summary_sources (
    summary_id  TEXT COLLATE "C" NOT NULL,
    source_id   TEXT COLLATE "C" NOT NULL,
    ord         BIGINT NOT NULL,
    source_kind TEXT COLLATE "C" NOT NULL CHECK (source_kind IN ('message', 'summary')),
    PRIMARY KEY (summary_id, source_id, ord, source_kind)
);
CREATE TABLE stream_checkpoints (
    message_id TEXT COLLATE "C" PRIMARY KEY REFERENCES messages(id),
    session_id TEXT COLLATE "C" NOT NULL,
    owner      TEXT COLLATE "C" NOT NULL,
    chars      BIGINT NOT NULL DEFAULT 0,
    beat_at    BIGINT NOT NULL
);
CREATE TABLE stream_chunks (
    message_id TEXT COLLATE "C" NOT NULL,
    ord        BIGINT NOT NULL,
    text       TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (message_id, ord)
);
CREATE TABLE arena_entries (
    session_id  TEXT COLLATE "C" NOT NULL REFERENCES sessions(id),
    seq         BIGINT NOT NULL,
    zone        TEXT COLLATE "C" NOT NULL CHECK (zone IN ('identity', 'truth', 'task_state', 'tool_failures',
                                              'memory_working', 'memory_recall', 'rag_external')),
    key         TEXT COLLATE "C" NOT NULL,
    source      TEXT COLLATE "C" NOT NULL,
    priority    TEXT COLLATE "C" NOT NULL CHECK (priority IN ('critical', 'high', 'normal', 'low')),
    once        BIGINT NOT NULL DEFAULT 0,
    external    BIGINT NOT NULL DEFAULT 0,
    removed     BIGINT NOT NULL DEFAULT 0,
    token_count BIGINT NOT NULL,
    created_at  BIGINT NOT NULL,
    text        TEXT COLLATE "C" NOT NULL,
    full_tokens BIGINT,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE arena_state (
    session_id TEXT COLLATE "C" PRIMARY KEY REFERENCES sessions(id),
    state      TEXT COLLATE "C" NOT NULL,
    updated_at BIGINT NOT NULL
);
"#;

/// [`TABLES`] with the kind names the part kinds declare (`parts::kind_check`).
pub(super) fn tables() -> String {
    TABLES.replace("KIND_NAMES", &crate::parts::kind_check())
}

/// The bytes of images and documents (SQLite version 11). A duplicate is skipped
/// by the insert's `ON CONFLICT DO NOTHING`.
pub(super) const MEDIA: &str = r#"
CREATE TABLE media (
    pk         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    media_id   TEXT COLLATE "C" NOT NULL UNIQUE,
    media_type TEXT COLLATE "C" NOT NULL,
    byte_size  BIGINT NOT NULL,
    data       BYTEA NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX parts_media ON parts (session_id, msg_seq, ord) WHERE kind = 'media';
"#;

/// Names, forks and handed-over histories (SQLite version 13).
pub(super) const LINEAGE: &str = r#"
CREATE TABLE session_keys (
    key        TEXT COLLATE "C" NOT NULL,
    ord        BIGINT NOT NULL,
    session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions(id),
    created_at BIGINT NOT NULL,
    PRIMARY KEY (key, ord)
);
CREATE INDEX session_keys_by_session ON session_keys (session_id);
CREATE TABLE session_forks (
    session_id TEXT COLLATE "C" PRIMARY KEY REFERENCES sessions(id),
    parent_id  TEXT COLLATE "C" NOT NULL REFERENCES sessions(id),
    fork_seq   BIGINT NOT NULL,
    sync_from  BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX session_forks_by_parent ON session_forks (parent_id);
CREATE TABLE sync_inputs (
    session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions(id),
    position   BIGINT NOT NULL,
    digest     BYTEA NOT NULL,
    low_seq    BIGINT,
    high_seq   BIGINT NOT NULL,
    PRIMARY KEY (session_id, position)
);
"#;

/// Files kept whole and map runs (SQLite version 7).
pub(super) const FILES_AND_MAPS: &str = r#"
CREATE TABLE file_contents (
    file_id      TEXT COLLATE "C" PRIMARY KEY,
    byte_count   BIGINT NOT NULL,
    line_count   BIGINT NOT NULL,
    codec        TEXT COLLATE "C" NOT NULL CHECK (codec IN ('zstd')),
    chunk_count  BIGINT NOT NULL,
    stored_bytes BIGINT NOT NULL,
    is_text      BIGINT NOT NULL
);
CREATE TABLE file_chunks (
    pk         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    file_id    TEXT COLLATE "C" NOT NULL,
    ord        BIGINT NOT NULL,
    first_line BIGINT NOT NULL,
    raw_bytes  BIGINT NOT NULL,
    data       BYTEA NOT NULL,
    UNIQUE (file_id, ord)
);
CREATE TABLE map_runs (
    map_id     TEXT COLLATE "C" PRIMARY KEY,
    kind       TEXT COLLATE "C" NOT NULL CHECK (kind IN ('llm', 'agentic')),
    parent_id  TEXT COLLATE "C",
    spec       TEXT COLLATE "C" NOT NULL,
    item_count BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE TABLE map_inputs (
    map_id TEXT COLLATE "C" NOT NULL,
    idx    BIGINT NOT NULL,
    input  TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (map_id, idx)
);
CREATE TABLE map_outcomes (
    pk         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    map_id     TEXT COLLATE "C" NOT NULL,
    idx        BIGINT NOT NULL,
    status     TEXT COLLATE "C" NOT NULL CHECK (status IN ('succeeded', 'failed')),
    output     TEXT COLLATE "C",
    error_kind TEXT COLLATE "C",
    error      TEXT COLLATE "C",
    attempts   BIGINT NOT NULL,
    usage      TEXT COLLATE "C" NOT NULL,
    session_id TEXT COLLATE "C",
    created_at BIGINT NOT NULL
);
CREATE TABLE session_parents (
    session_id TEXT COLLATE "C" PRIMARY KEY REFERENCES sessions(id),
    parent_id  TEXT COLLATE "C" NOT NULL,
    map_id     TEXT COLLATE "C",
    idx        BIGINT,
    created_at BIGINT NOT NULL
);
"#;

/// The full-text index, its backlog and the languages it holds. `fts_rowid` is a
/// part's `pk`, or minus a summary's, as in SQLite's `fts`.
pub(super) const SEARCH: &str = r#"
CREATE TABLE search_backlog (fts_rowid BIGINT PRIMARY KEY);
CREATE TABLE search_languages (code TEXT COLLATE "C" PRIMARY KEY);
CREATE TABLE search_index (
    fts_rowid  BIGINT PRIMARY KEY,
    session_id TEXT COLLATE "C" NOT NULL,
    owner_id   TEXT COLLATE "C" NOT NULL,
    part_id    TEXT COLLATE "C" NOT NULL,
    body       TEXT COLLATE "C" NOT NULL,
    terms      TSVECTOR NOT NULL
);
"#;

pub(super) const INDEXES: &str = r"
CREATE UNIQUE INDEX parts_by_seq ON parts (session_id, msg_seq, ord);
CREATE INDEX parts_prunable
    ON parts (session_id, msg_seq, ord, output_tokens, tool_name, id, file_ids)
    WHERE kind = 'tool' AND compacted_at IS NULL AND tool_status = 'completed';
CREATE INDEX parts_open_calls ON parts (session_id, call_id, msg_seq)
    WHERE kind = 'tool' AND tool_status IN ('pending', 'running');
CREATE INDEX parts_file_ids ON parts (session_id, msg_seq, ord, file_ids)
    WHERE file_ids IS NOT NULL;
CREATE INDEX parts_provider_compaction ON parts (session_id, msg_seq, ord)
    WHERE kind = 'provider_compaction';
CREATE INDEX summaries_by_session ON summaries (session_id, created_at);
CREATE INDEX arena_entries_by_key ON arena_entries (session_id, key, seq);
CREATE INDEX file_chunks_by_line ON file_chunks (file_id, first_line, ord);
CREATE INDEX map_outcomes_by_item ON map_outcomes (map_id, idx);
CREATE UNIQUE INDEX map_outcomes_one_success
    ON map_outcomes (map_id, idx) WHERE status = 'succeeded';
CREATE INDEX session_parents_by_parent ON session_parents (parent_id);
CREATE INDEX session_parents_by_item ON session_parents (map_id, idx);
-- The full-text index proper, and a session's rows newest first (grep in a session).
CREATE INDEX search_index_terms ON search_index USING GIN (terms);
CREATE INDEX search_index_by_session ON search_index (session_id, fts_rowid);
";

/// The update guards whose SQLite triggers allow some changes: the condition under
/// which an update is refused, per table, in SQLite's words with `IS NOT` as
/// `IS DISTINCT FROM`.
pub(super) const CONDITIONAL_UPDATES: [(&str, &str, &str); 4] = [
    (
        "sessions",
        "NEW.id IS DISTINCT FROM OLD.id OR NEW.model IS DISTINCT FROM OLD.model
         OR NEW.created_at IS DISTINCT FROM OLD.created_at OR NEW.config IS DISTINCT FROM OLD.config
         OR NEW.system_prompt IS DISTINCT FROM OLD.system_prompt",
        "a session keeps its model, config and prompt",
    ),
    (
        "messages",
        "NEW.id IS DISTINCT FROM OLD.id OR NEW.session_id IS DISTINCT FROM OLD.session_id
         OR NEW.seq IS DISTINCT FROM OLD.seq OR NEW.role IS DISTINCT FROM OLD.role
         OR NEW.created_at IS DISTINCT FROM OLD.created_at OR NEW.model IS DISTINCT FROM OLD.model
         OR (OLD.status <> 'streaming' AND NEW.status IS DISTINCT FROM OLD.status)
         OR (OLD.token_count IS NOT NULL AND NEW.token_count IS DISTINCT FROM OLD.token_count)
         OR (OLD.input_tokens IS NOT NULL AND NEW.input_tokens IS DISTINCT FROM OLD.input_tokens)
         OR (OLD.output_tokens IS NOT NULL AND NEW.output_tokens IS DISTINCT FROM OLD.output_tokens)
         OR (OLD.cost IS NOT NULL AND NEW.cost IS DISTINCT FROM OLD.cost)
         OR (OLD.finish_reason IS NOT NULL AND NEW.finish_reason IS DISTINCT FROM OLD.finish_reason)",
        "only unset token, cost and finish fields of a message may be written",
    ),
    (
        "parts",
        "NEW.pk IS DISTINCT FROM OLD.pk OR NEW.id IS DISTINCT FROM OLD.id
         OR NEW.message_id IS DISTINCT FROM OLD.message_id
         OR NEW.session_id IS DISTINCT FROM OLD.session_id
         OR NEW.msg_seq IS DISTINCT FROM OLD.msg_seq OR NEW.ord IS DISTINCT FROM OLD.ord
         OR NEW.kind IS DISTINCT FROM OLD.kind OR NEW.body IS DISTINCT FROM OLD.body
         OR NEW.tool_name IS DISTINCT FROM OLD.tool_name OR NEW.call_id IS DISTINCT FROM OLD.call_id
         OR (OLD.tool_error IS NOT NULL AND NEW.tool_error IS DISTINCT FROM OLD.tool_error)
         OR ((OLD.kind <> 'tool' OR OLD.tool_status IN ('completed', 'error'))
             AND (NEW.tool_status IS DISTINCT FROM OLD.tool_status
                  OR NEW.tool_error IS DISTINCT FROM OLD.tool_error
                  OR NEW.token_count IS DISTINCT FROM OLD.token_count
                  OR NEW.output_tokens IS DISTINCT FROM OLD.output_tokens
                  OR NEW.file_ids IS DISTINCT FROM OLD.file_ids))
         OR (OLD.tool_status = 'running' AND NEW.tool_status = 'pending')
         OR (OLD.compacted_at IS NOT NULL AND NEW.compacted_at IS DISTINCT FROM OLD.compacted_at)
         OR (OLD.compacted_tokens IS NOT NULL
             AND NEW.compacted_tokens IS DISTINCT FROM OLD.compacted_tokens)",
        "only tool lifecycle fields and the tombstone of a part may be written",
    ),
    (
        "summaries",
        "NEW.pk IS DISTINCT FROM OLD.pk OR NEW.id IS DISTINCT FROM OLD.id
         OR NEW.session_id IS DISTINCT FROM OLD.session_id OR NEW.kind IS DISTINCT FROM OLD.kind
         OR NEW.level IS DISTINCT FROM OLD.level OR NEW.text IS DISTINCT FROM OLD.text
         OR NEW.token_count IS DISTINCT FROM OLD.token_count
         OR NEW.span_start_seq IS DISTINCT FROM OLD.span_start_seq
         OR NEW.span_end_seq IS DISTINCT FROM OLD.span_end_seq
         OR NEW.message_count IS DISTINCT FROM OLD.message_count
         OR NEW.depth IS DISTINCT FROM OLD.depth OR NEW.file_ids IS DISTINCT FROM OLD.file_ids
         OR NEW.created_at IS DISTINCT FROM OLD.created_at
         OR (OLD.superseded_by IS NOT NULL AND NEW.superseded_by IS DISTINCT FROM OLD.superseded_by)",
        "only superseded_by of a summary may be set, once",
    ),
];

/// Tables whose rows are never changed nor deleted once written.
pub(super) const FIXED_TABLES: [&str; 16] = [
    "tool_outputs",
    "summary_sources",
    "file_refs",
    "events",
    "arena_entries",
    "file_contents",
    "file_chunks",
    "map_runs",
    "map_inputs",
    "map_outcomes",
    "session_parents",
    "media",
    "session_keys",
    "session_forks",
    "sync_inputs",
    "ledger_items",
];

/// Whether `table`'s rows are append-only (its triggers refuse deletes, and updates
/// beyond what [`CONDITIONAL_UPDATES`] allows): a duplicate key there is an attempt to
/// replace stored content, since PostgreSQL has no `INSERT OR REPLACE`.
pub(super) fn is_append_only(table: &str) -> bool {
    FIXED_TABLES.contains(&table) || CONDITIONAL_UPDATES.iter().any(|(name, ..)| *name == table)
}

/// The append-only triggers of `table`: no delete, no truncate, and no update
/// (`refuse_update` None) or none under the condition given.
pub(super) fn append_only_triggers(table: &str, refuse_update: Option<(&str, &str)>) -> String {
    let message = |what: &str| format!("'{}: {what}'", crate::error::IMMUTABLE_MARKER);
    let mut sql = format!(
        "CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table}
         FOR EACH ROW EXECUTE FUNCTION lossless_refuse({});
         CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table}
         FOR EACH STATEMENT EXECUTE FUNCTION lossless_refuse({});",
        message(&format!("{table} rows cannot be deleted")),
        message(&format!("{table} cannot be truncated")),
    );
    let update = match refuse_update {
        Some((condition, what)) => format!(
            "CREATE TRIGGER {table}_fixed BEFORE UPDATE ON {table} FOR EACH ROW
             WHEN ({condition}) EXECUTE FUNCTION lossless_refuse({});",
            message(what)
        ),
        None => format!(
            "CREATE TRIGGER {table}_fixed BEFORE UPDATE ON {table} FOR EACH ROW
             EXECUTE FUNCTION lossless_refuse({});",
            message(&format!("{table} rows cannot be changed"))
        ),
    };
    sql.push_str(&update);
    sql
}

/// Every append-only trigger of the schema.
pub(super) fn triggers() -> String {
    let mut sql = String::new();
    for (table, condition, what) in CONDITIONAL_UPDATES {
        sql.push_str(&append_only_triggers(table, Some((condition, what))));
    }
    for table in FIXED_TABLES {
        sql.push_str(&append_only_triggers(table, None));
    }
    sql
}
