//! The database schema, its immutability triggers and its version.
//!
//! Longer than most modules on purpose: the DDL of every table and each
//! migration from an older version read best together, since a migration must
//! produce exactly the tables a new database gets.

use rusqlite::Connection;

use crate::error::{Error, Result};

/// Schema version this build writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 15;

const TABLES: &str = r"
CREATE TABLE sessions (
    id            TEXT PRIMARY KEY,
    model         TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    config        TEXT NOT NULL,
    system_prompt TEXT,
    -- Bookkeeping the store advances; never content.
    view_version  INTEGER NOT NULL DEFAULT 0,
    next_seq      INTEGER NOT NULL DEFAULT 1,
    next_position INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE messages (
    id            TEXT PRIMARY KEY,
    session_id    TEXT NOT NULL REFERENCES sessions(id),
    seq           INTEGER NOT NULL,
    role          TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
    created_at    INTEGER NOT NULL,
    model         TEXT,
    status        TEXT NOT NULL CHECK (status IN ('complete', 'streaming', 'incomplete')),
    token_count   INTEGER,
    input_tokens  INTEGER,
    output_tokens INTEGER,
    cost          REAL,
    finish_reason TEXT,
    UNIQUE (session_id, seq)
);
CREATE TABLE context_items (
    session_id  TEXT NOT NULL,
    position    INTEGER NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('message', 'summary')),
    item_id     TEXT NOT NULL,
    token_count INTEGER NOT NULL,
    PRIMARY KEY (session_id, position)
) WITHOUT ROWID;
CREATE TABLE file_refs (
    file_id      TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    path         TEXT NOT NULL,
    file_type    TEXT NOT NULL,
    token_count  INTEGER NOT NULL,
    summary      TEXT NOT NULL,
    created_at   INTEGER NOT NULL
);
CREATE TABLE events (
    session_id TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    id         TEXT NOT NULL,
    name       TEXT NOT NULL,
    payload    TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE TABLE compaction_leases (
    session_id TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,
    expires_at INTEGER NOT NULL
);
";

/// The summaries table (shared by a new schema and the migration from version 1).
/// `pk` is an explicit rowid: the full-text index refers to it, and VACUUM keeps
/// explicit rowids.
const SUMMARIES: &str = r"
CREATE TABLE summaries (
    pk             INTEGER PRIMARY KEY,
    id             TEXT NOT NULL UNIQUE,
    session_id     TEXT NOT NULL REFERENCES sessions(id),
    kind           TEXT NOT NULL CHECK (kind IN ('leaf', 'condensed')),
    level          INTEGER NOT NULL CHECK (level IN (1, 2, 3)),
    text           TEXT NOT NULL,
    token_count    INTEGER NOT NULL,
    span_start_seq INTEGER NOT NULL,
    span_end_seq   INTEGER NOT NULL,
    message_count  INTEGER NOT NULL,
    depth          INTEGER NOT NULL,
    file_ids       TEXT,
    created_at     INTEGER NOT NULL,
    superseded_by  TEXT
);
";

/// The parts table and the tool outputs kept apart from it (shared by a new
/// schema and the migration from version 1).
///
/// A tool output (often several KB) lives in its own table, and large text comes
/// last in a part: a part row then fits with many others on a page, so the scans
/// over a session's parts (compaction, rendering) touch a few dense pages rather
/// than one page per call plus its overflow. `pk` is an explicit rowid: outputs
/// and the full-text index refer to it, and VACUUM keeps explicit rowids.
const PARTS: &str = r"
CREATE TABLE parts (
    pk               INTEGER PRIMARY KEY,
    id               TEXT NOT NULL UNIQUE,
    message_id       TEXT NOT NULL REFERENCES messages(id),
    session_id       TEXT NOT NULL,
    msg_seq          INTEGER NOT NULL,
    ord              INTEGER NOT NULL,
    kind             TEXT NOT NULL CHECK (kind IN (KIND_NAMES)),
    tool_name        TEXT,
    call_id          TEXT,
    tool_status      TEXT CHECK (tool_status IN ('pending', 'running', 'completed', 'error')),
    token_count      INTEGER NOT NULL,
    output_tokens    INTEGER NOT NULL DEFAULT 0,
    file_ids         TEXT,
    compacted_at     INTEGER,
    compacted_tokens INTEGER,
    body             TEXT NOT NULL,
    tool_error       TEXT
);
CREATE TABLE tool_outputs (
    part_pk INTEGER PRIMARY KEY REFERENCES parts(pk),
    output  TEXT NOT NULL
);
";

/// [`PARTS`] with the kind names the part kinds declare (`parts::kind_check`).
fn parts_table() -> String {
    PARTS.replace("KIND_NAMES", &crate::parts::kind_check())
}

/// The DAG edges table (shared by a new schema and the migration from version 1).
const SUMMARY_SOURCES: &str = r"
-- Every column is in the key, so INSERT OR REPLACE can only put back an identical
-- row: edges need no per-row guard trigger, which would dominate a commit of
-- tens of thousands of them. The key leads with (summary, source), which answers
-- 'does this summary cover that message'; the summary above a message is found
-- through the seq span of its session's summaries, so no second index is kept.
CREATE TABLE summary_sources (
    summary_id  TEXT NOT NULL,
    source_id   TEXT NOT NULL,
    ord         INTEGER NOT NULL,
    source_kind TEXT NOT NULL CHECK (source_kind IN ('message', 'summary')),
    PRIMARY KEY (summary_id, source_id, ord, source_kind)
) WITHOUT ROWID;
";

/// The full-text index and its backlog (both as of version 2).
///
/// An index row has the rowid of what it indexes: a part's rowid, or minus a
/// summary's. Writers only queue that rowid in `search_backlog`, inside their own
/// transaction; see `recall/index.rs` for when the queue moves into `fts`.
const SEARCH: &str = r"
CREATE TABLE search_backlog (fts_rowid INTEGER PRIMARY KEY);
";

/// The full-text index (as of version 6, stemmed in many languages): the
/// `lossless` tokenizer (`tokenizer.rs`) stems each document in its own
/// language, in the index; a query is stemmed in every language the index
/// holds (`search_languages`). It keeps stopwords: phrases match exactly, and a
/// query of only stopwords works.
const FTS: &str = r"
CREATE VIRTUAL TABLE fts USING fts5(
    body, session_id UNINDEXED, owner_id UNINDEXED, part_id UNINDEXED,
    tokenize = 'lossless'
);
";

/// The languages the full-text index holds documents in (as of version 6), by
/// ISO 639-1 code: a query stems its words in each. Only ever grows.
const LANGUAGES: &str = r"
CREATE TABLE IF NOT EXISTS search_languages (code TEXT PRIMARY KEY) WITHOUT ROWID;
";

/// Replies while they stream, and who streams them (as of version 4): the one row of
/// a message that changes while it streams (its owner's last write and the
/// characters checkpointed), and the text checkpointed so far, one row per
/// checkpoint holding only what arrived since the one before (a checkpoint costs its
/// delta, not the whole reply again). The transaction that finishes the message, or
/// flags it interrupted, deletes both, so they hold only replies in flight. Not
/// content: the text becomes a part when the message is finished.
const STREAMS: &str = r"
CREATE TABLE IF NOT EXISTS stream_checkpoints (
    message_id TEXT PRIMARY KEY REFERENCES messages(id),
    session_id TEXT NOT NULL,
    owner      TEXT NOT NULL,
    chars      INTEGER NOT NULL DEFAULT 0,
    beat_at    INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS stream_chunks (
    message_id TEXT NOT NULL,
    ord        INTEGER NOT NULL,
    text       TEXT NOT NULL,
    PRIMARY KEY (message_id, ord)
) WITHOUT ROWID;
";

/// The context arena (as of version 8): every entry written to a session's arena,
/// append-only (the newest row of a key in a zone is its live value; a `removed` row
/// takes it out), and the adaptive controller's state per session, which changes
/// every turn and is bookkeeping, not content. As of version 9, `full_tokens` holds
/// the count of a text cut to its zone's cap when written (NULL when it was not).
const ARENA: &str = r"
CREATE TABLE IF NOT EXISTS arena_entries (
    session_id  TEXT NOT NULL REFERENCES sessions(id),
    seq         INTEGER NOT NULL,
    zone        TEXT NOT NULL CHECK (zone IN ('identity', 'truth', 'task_state', 'tool_failures',
                                              'memory_working', 'memory_recall', 'rag_external')),
    key         TEXT NOT NULL,
    source      TEXT NOT NULL,
    priority    TEXT NOT NULL CHECK (priority IN ('critical', 'high', 'normal', 'low')),
    once        INTEGER NOT NULL DEFAULT 0,
    external    INTEGER NOT NULL DEFAULT 0,
    removed     INTEGER NOT NULL DEFAULT 0,
    token_count INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    text        TEXT NOT NULL,
    full_tokens INTEGER,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS arena_entries_by_key ON arena_entries (session_id, key, seq);
CREATE TABLE IF NOT EXISTS arena_state (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id),
    state      TEXT NOT NULL,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS arena_entries_no_replace BEFORE INSERT ON arena_entries
WHEN EXISTS (SELECT 1 FROM arena_entries WHERE session_id = NEW.session_id AND seq = NEW.seq)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: a stored arena entry cannot be replaced'); END;
CREATE TRIGGER IF NOT EXISTS arena_entries_no_delete BEFORE DELETE ON arena_entries
WHEN NOT EXISTS (SELECT 1 FROM erasure_grants)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: arena entries cannot be deleted'); END;
CREATE TRIGGER IF NOT EXISTS arena_entries_fixed BEFORE UPDATE ON arena_entries
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: arena entries cannot be changed'); END;
";

/// Indexes; `IF NOT EXISTS` so that a migration can run them over an older file.
const INDEXES: &str = r"
-- Unique: a message's (session, seq) names it, so this also keeps its part order unique.
CREATE UNIQUE INDEX IF NOT EXISTS parts_by_seq ON parts (session_id, msg_seq, ord);
-- Covering (as of version 3): the prune scan reads every column it needs here,
-- without a lookup of each tool part in the table.
CREATE INDEX IF NOT EXISTS parts_prunable
    ON parts (session_id, msg_seq, ord, output_tokens, tool_name, id, file_ids)
    WHERE kind = 'tool' AND compacted_at IS NULL AND tool_status = 'completed';
-- Tool calls waiting for their result, by call id: what a result is matched
-- against. A call leaves the index when it finishes, so an append of a finished
-- call writes no entry here.
CREATE INDEX IF NOT EXISTS parts_open_calls ON parts (session_id, call_id, msg_seq)
    WHERE kind = 'tool' AND tool_status IN ('pending', 'running');
-- Covering: the file ids of a span (every summary's footer) without reading its parts.
CREATE INDEX IF NOT EXISTS parts_file_ids ON parts (session_id, msg_seq, ord, file_ids)
    WHERE file_ids IS NOT NULL;
-- A provider's compaction blocks (as of version 12): where a request starts when
-- one stands in for what precedes it, found without reading the session's parts.
CREATE INDEX IF NOT EXISTS parts_provider_compaction ON parts (session_id, msg_seq, ord)
    WHERE kind = 'provider_compaction';
CREATE INDEX IF NOT EXISTS summaries_by_session ON summaries (session_id, created_at);
-- A session's images and documents, newest first (as of version 11): which a
-- request sends inline, without a scan of its other parts.
CREATE INDEX IF NOT EXISTS parts_media ON parts (session_id, msg_seq, ord)
    WHERE kind = 'media';
";

/// Triggers that make stored content append-only at the database level, for
/// every connection, not only this library's.
///
/// The `*_no_replace` triggers refuse an insert that collides with a stored row:
/// `INSERT OR REPLACE` deletes the old row without firing DELETE triggers (unless a
/// connection turned `recursive_triggers` on), so without them it rewrites content.
const TRIGGERS: &str = r"
CREATE TRIGGER IF NOT EXISTS sessions_no_replace BEFORE INSERT ON sessions
WHEN EXISTS (SELECT 1 FROM sessions WHERE id = NEW.id)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: a stored session cannot be replaced'); END;
CREATE TRIGGER IF NOT EXISTS messages_no_replace BEFORE INSERT ON messages
WHEN EXISTS (SELECT 1 FROM messages WHERE id = NEW.id)
  OR EXISTS (SELECT 1 FROM messages WHERE session_id = NEW.session_id AND seq = NEW.seq)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: a stored message cannot be replaced'); END;
CREATE TRIGGER IF NOT EXISTS parts_no_replace BEFORE INSERT ON parts
WHEN EXISTS (SELECT 1 FROM parts WHERE pk = NEW.pk)
  OR EXISTS (SELECT 1 FROM parts WHERE id = NEW.id)
  OR EXISTS (SELECT 1 FROM parts
             WHERE session_id = NEW.session_id AND msg_seq = NEW.msg_seq AND ord = NEW.ord)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: a stored part cannot be replaced'); END;
CREATE TRIGGER IF NOT EXISTS summaries_no_replace BEFORE INSERT ON summaries
WHEN EXISTS (SELECT 1 FROM summaries WHERE pk = NEW.pk)
  OR EXISTS (SELECT 1 FROM summaries WHERE id = NEW.id)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: a stored summary cannot be replaced'); END;
CREATE TRIGGER IF NOT EXISTS file_refs_no_replace BEFORE INSERT ON file_refs
WHEN EXISTS (SELECT 1 FROM file_refs WHERE file_id = NEW.file_id)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: a stored file reference cannot be replaced'); END;
CREATE TRIGGER IF NOT EXISTS events_no_replace BEFORE INSERT ON events
WHEN EXISTS (SELECT 1 FROM events WHERE session_id = NEW.session_id AND seq = NEW.seq)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: a stored event cannot be replaced'); END;

CREATE TRIGGER IF NOT EXISTS sessions_no_delete BEFORE DELETE ON sessions
WHEN NOT EXISTS (SELECT 1 FROM erasure_grants)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: sessions cannot be deleted'); END;
CREATE TRIGGER IF NOT EXISTS sessions_fixed BEFORE UPDATE ON sessions
WHEN NEW.id IS NOT OLD.id OR NEW.model IS NOT OLD.model OR NEW.created_at IS NOT OLD.created_at
  OR NEW.config IS NOT OLD.config OR NEW.system_prompt IS NOT OLD.system_prompt
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: a session keeps its model, config and prompt'); END;

CREATE TRIGGER IF NOT EXISTS messages_no_delete BEFORE DELETE ON messages
WHEN NOT EXISTS (SELECT 1 FROM erasure_grants)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: messages cannot be deleted'); END;
CREATE TRIGGER IF NOT EXISTS messages_fixed BEFORE UPDATE ON messages
WHEN NEW.id IS NOT OLD.id OR NEW.session_id IS NOT OLD.session_id OR NEW.seq IS NOT OLD.seq
  OR NEW.role IS NOT OLD.role OR NEW.created_at IS NOT OLD.created_at OR NEW.model IS NOT OLD.model
  OR (OLD.status <> 'streaming' AND NEW.status IS NOT OLD.status)
  OR (OLD.token_count IS NOT NULL AND NEW.token_count IS NOT OLD.token_count)
  OR (OLD.input_tokens IS NOT NULL AND NEW.input_tokens IS NOT OLD.input_tokens)
  OR (OLD.output_tokens IS NOT NULL AND NEW.output_tokens IS NOT OLD.output_tokens)
  OR (OLD.cost IS NOT NULL AND NEW.cost IS NOT OLD.cost)
  OR (OLD.finish_reason IS NOT NULL AND NEW.finish_reason IS NOT OLD.finish_reason)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: only unset token, cost and finish fields of a message may be written'); END;

CREATE TRIGGER IF NOT EXISTS parts_no_delete BEFORE DELETE ON parts
WHEN NOT EXISTS (SELECT 1 FROM erasure_grants)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: parts cannot be deleted'); END;
CREATE TRIGGER IF NOT EXISTS parts_fixed BEFORE UPDATE ON parts
WHEN NEW.pk IS NOT OLD.pk OR NEW.id IS NOT OLD.id OR NEW.message_id IS NOT OLD.message_id
  OR NEW.session_id IS NOT OLD.session_id
  OR NEW.msg_seq IS NOT OLD.msg_seq OR NEW.ord IS NOT OLD.ord OR NEW.kind IS NOT OLD.kind
  OR NEW.body IS NOT OLD.body OR NEW.tool_name IS NOT OLD.tool_name OR NEW.call_id IS NOT OLD.call_id
  OR (OLD.tool_error IS NOT NULL AND NEW.tool_error IS NOT OLD.tool_error)
  OR ((OLD.kind <> 'tool' OR OLD.tool_status IN ('completed', 'error'))
      AND (NEW.tool_status IS NOT OLD.tool_status
           OR NEW.tool_error IS NOT OLD.tool_error OR NEW.token_count IS NOT OLD.token_count
           OR NEW.output_tokens IS NOT OLD.output_tokens OR NEW.file_ids IS NOT OLD.file_ids))
  OR (OLD.tool_status = 'running' AND NEW.tool_status = 'pending')
  OR (OLD.compacted_at IS NOT NULL AND NEW.compacted_at IS NOT OLD.compacted_at)
  OR (OLD.compacted_tokens IS NOT NULL AND NEW.compacted_tokens IS NOT OLD.compacted_tokens)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: only tool lifecycle fields and the tombstone of a part may be written'); END;

CREATE TRIGGER IF NOT EXISTS tool_outputs_no_replace BEFORE INSERT ON tool_outputs
WHEN EXISTS (SELECT 1 FROM tool_outputs WHERE part_pk = NEW.part_pk)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: a tool output is written once'); END;
CREATE TRIGGER IF NOT EXISTS tool_outputs_no_delete BEFORE DELETE ON tool_outputs
WHEN NOT EXISTS (SELECT 1 FROM erasure_grants)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: tool outputs cannot be deleted'); END;
CREATE TRIGGER IF NOT EXISTS tool_outputs_fixed BEFORE UPDATE ON tool_outputs
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: a tool output is written once'); END;

CREATE TRIGGER IF NOT EXISTS summaries_no_delete BEFORE DELETE ON summaries
WHEN NOT EXISTS (SELECT 1 FROM erasure_grants)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: summaries cannot be deleted'); END;
CREATE TRIGGER IF NOT EXISTS summaries_fixed BEFORE UPDATE ON summaries
WHEN NEW.pk IS NOT OLD.pk OR NEW.id IS NOT OLD.id OR NEW.session_id IS NOT OLD.session_id
  OR NEW.kind IS NOT OLD.kind OR NEW.level IS NOT OLD.level OR NEW.text IS NOT OLD.text OR NEW.token_count IS NOT OLD.token_count
  OR NEW.span_start_seq IS NOT OLD.span_start_seq OR NEW.span_end_seq IS NOT OLD.span_end_seq
  OR NEW.message_count IS NOT OLD.message_count OR NEW.depth IS NOT OLD.depth
  OR NEW.file_ids IS NOT OLD.file_ids OR NEW.created_at IS NOT OLD.created_at
  OR (OLD.superseded_by IS NOT NULL AND NEW.superseded_by IS NOT OLD.superseded_by)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: only superseded_by of a summary may be set, once'); END;

CREATE TRIGGER IF NOT EXISTS summary_sources_no_delete BEFORE DELETE ON summary_sources
WHEN NOT EXISTS (SELECT 1 FROM erasure_grants)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: summary sources cannot be deleted'); END;
CREATE TRIGGER IF NOT EXISTS summary_sources_fixed BEFORE UPDATE ON summary_sources
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: summary sources cannot be changed'); END;

CREATE TRIGGER IF NOT EXISTS file_refs_no_delete BEFORE DELETE ON file_refs
WHEN NOT EXISTS (SELECT 1 FROM erasure_grants)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: file references cannot be deleted'); END;
CREATE TRIGGER IF NOT EXISTS file_refs_fixed BEFORE UPDATE ON file_refs
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: file references cannot be changed'); END;

CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
WHEN NOT EXISTS (SELECT 1 FROM erasure_grants)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: events cannot be deleted'); END;
CREATE TRIGGER IF NOT EXISTS events_fixed BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: events cannot be changed'); END;
";

/// From version 1: parts and summaries with explicit rowids, tool outputs apart
/// from their parts, and large part columns last; DAG edges keyed on every
/// column (their guard trigger and their index by source go), no index of view
/// items by item id (every commit paid to update it), and the full-text index
/// keyed on the rowids of what it indexes, with its backlog.
const MIGRATE_FROM_1: &str = r"
DROP TRIGGER IF EXISTS summary_sources_no_replace;
DROP TRIGGER IF EXISTS summary_sources_no_delete;
DROP TRIGGER IF EXISTS summary_sources_fixed;
DROP INDEX IF EXISTS summary_sources_by_source;
DROP INDEX IF EXISTS context_items_by_item;
DROP TRIGGER IF EXISTS parts_no_replace;
DROP TRIGGER IF EXISTS parts_no_delete;
DROP TRIGGER IF EXISTS parts_fixed;
DROP TRIGGER IF EXISTS summaries_no_replace;
DROP TRIGGER IF EXISTS summaries_no_delete;
DROP TRIGGER IF EXISTS summaries_fixed;
DROP INDEX IF EXISTS summaries_by_session;
ALTER TABLE summary_sources RENAME TO summary_sources_v1;
ALTER TABLE parts RENAME TO parts_v1;
ALTER TABLE summaries RENAME TO summaries_v1;
DROP TABLE fts;
";

const MIGRATE_FROM_1_COPY: &str = r"
INSERT INTO summary_sources (summary_id, ord, source_kind, source_id)
    SELECT summary_id, ord, source_kind, source_id FROM summary_sources_v1;
DROP TABLE summary_sources_v1;
INSERT INTO parts (pk, id, message_id, session_id, msg_seq, ord, kind, tool_name, call_id,
                   tool_status, token_count, output_tokens, file_ids, compacted_at,
                   compacted_tokens, body, tool_error)
    SELECT rowid, id, message_id, session_id, msg_seq, ord, kind, tool_name, call_id,
           tool_status, token_count, output_tokens, file_ids, compacted_at, compacted_tokens,
           body, tool_error
    FROM parts_v1 ORDER BY rowid;
INSERT INTO tool_outputs (part_pk, output)
    SELECT rowid, tool_output FROM parts_v1 WHERE tool_output IS NOT NULL ORDER BY rowid;
DROP TABLE parts_v1;
INSERT INTO summaries (pk, id, session_id, kind, level, text, token_count, span_start_seq,
                       span_end_seq, message_count, depth, file_ids, created_at, superseded_by)
    SELECT rowid, id, session_id, kind, level, text, token_count, span_start_seq, span_end_seq,
           message_count, depth, file_ids, created_at, superseded_by
    FROM summaries_v1 ORDER BY rowid;
DROP TABLE summaries_v1;
INSERT INTO search_backlog (fts_rowid)
    SELECT rowid FROM parts UNION ALL SELECT -rowid FROM summaries;
";

/// From version 2: the index of prunable tool outputs holds every column the prune
/// scan reads; [`INDEXES`] builds it again.
const MIGRATE_FROM_2: &str = r"
DROP INDEX IF EXISTS parts_prunable;
";

/// Files kept whole and map runs (as of version 7), each table with its own
/// append-only triggers. A stored file is its `file_refs` row, one `file_contents`
/// row (sizes, codec) and its compressed chunks, each chunk with the newlines before
/// it, so a line range reads only the chunks that hold it. A map run is its spec
/// and inputs, then one outcome row per finished attempt at an item: the partial
/// unique index lets an item succeed at most once. `session_parents` links the
/// sessions an agentic map runs its items in to their parent.
const FILES_AND_MAPS: &str = r"
CREATE TABLE IF NOT EXISTS file_contents (
    file_id      TEXT PRIMARY KEY,
    byte_count   INTEGER NOT NULL,
    line_count   INTEGER NOT NULL,
    codec        TEXT NOT NULL CHECK (codec IN ('zstd')),
    chunk_count  INTEGER NOT NULL,
    stored_bytes INTEGER NOT NULL,
    is_text      INTEGER NOT NULL
) WITHOUT ROWID;
-- A rowid table: chunks are up to a MiB of data, too large for the rows of a
-- WITHOUT ROWID table.
CREATE TABLE IF NOT EXISTS file_chunks (
    pk         INTEGER PRIMARY KEY,
    file_id    TEXT NOT NULL,
    ord        INTEGER NOT NULL,
    first_line INTEGER NOT NULL,
    raw_bytes  INTEGER NOT NULL,
    data       BLOB NOT NULL,
    UNIQUE (file_id, ord)
);
CREATE INDEX IF NOT EXISTS file_chunks_by_line ON file_chunks (file_id, first_line, ord);
CREATE TABLE IF NOT EXISTS map_runs (
    map_id     TEXT PRIMARY KEY,
    kind       TEXT NOT NULL CHECK (kind IN ('llm', 'agentic')),
    parent_id  TEXT,
    spec       TEXT NOT NULL,
    item_count INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS map_inputs (
    map_id TEXT NOT NULL,
    idx    INTEGER NOT NULL,
    input  TEXT NOT NULL,
    PRIMARY KEY (map_id, idx)
);
CREATE TABLE IF NOT EXISTS map_outcomes (
    pk         INTEGER PRIMARY KEY,
    map_id     TEXT NOT NULL,
    idx        INTEGER NOT NULL,
    status     TEXT NOT NULL CHECK (status IN ('succeeded', 'failed')),
    output     TEXT,
    error_kind TEXT,
    error      TEXT,
    attempts   INTEGER NOT NULL,
    usage      TEXT NOT NULL,
    session_id TEXT,
    created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS map_outcomes_by_item ON map_outcomes (map_id, idx);
CREATE UNIQUE INDEX IF NOT EXISTS map_outcomes_one_success
    ON map_outcomes (map_id, idx) WHERE status = 'succeeded';
CREATE TABLE IF NOT EXISTS session_parents (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id),
    parent_id  TEXT NOT NULL,
    map_id     TEXT,
    idx        INTEGER,
    created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS session_parents_by_parent ON session_parents (parent_id);
CREATE INDEX IF NOT EXISTS session_parents_by_item ON session_parents (map_id, idx);
";

/// The append-only triggers of the version 7 tables: nothing is rewritten or
/// deleted, and an insert never replaces a stored row.
const FILES_AND_MAPS_TRIGGERS: &str = r"
CREATE TRIGGER IF NOT EXISTS file_contents_no_replace BEFORE INSERT ON file_contents
WHEN EXISTS (SELECT 1 FROM file_contents WHERE file_id = NEW.file_id)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: a stored file cannot be replaced'); END;
CREATE TRIGGER IF NOT EXISTS file_chunks_no_replace BEFORE INSERT ON file_chunks
WHEN EXISTS (SELECT 1 FROM file_chunks WHERE pk = NEW.pk)
  OR EXISTS (SELECT 1 FROM file_chunks WHERE file_id = NEW.file_id AND ord = NEW.ord)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: a stored file chunk cannot be replaced'); END;
CREATE TRIGGER IF NOT EXISTS map_runs_no_replace BEFORE INSERT ON map_runs
WHEN EXISTS (SELECT 1 FROM map_runs WHERE map_id = NEW.map_id)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: a map run cannot be replaced'); END;
CREATE TRIGGER IF NOT EXISTS map_inputs_no_replace BEFORE INSERT ON map_inputs
WHEN EXISTS (SELECT 1 FROM map_inputs WHERE map_id = NEW.map_id AND idx = NEW.idx)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: a map input cannot be replaced'); END;
CREATE TRIGGER IF NOT EXISTS map_outcomes_no_replace BEFORE INSERT ON map_outcomes
WHEN EXISTS (SELECT 1 FROM map_outcomes WHERE pk = NEW.pk)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: a map outcome cannot be replaced'); END;
CREATE TRIGGER IF NOT EXISTS session_parents_no_replace BEFORE INSERT ON session_parents
WHEN EXISTS (SELECT 1 FROM session_parents WHERE session_id = NEW.session_id)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: a session link cannot be replaced'); END;
";

/// `table_no_delete` and `table_fixed` for each version 7 table.
fn append_only_triggers(tx: &rusqlite::Transaction<'_>) -> Result<()> {
    for table in [
        "file_contents",
        "file_chunks",
        "map_runs",
        "map_inputs",
        "map_outcomes",
        "session_parents",
    ] {
        tx.execute_batch(&format!(
            "CREATE TRIGGER IF NOT EXISTS {table}_no_delete BEFORE DELETE ON {table}
             WHEN NOT EXISTS (SELECT 1 FROM erasure_grants)
             BEGIN SELECT RAISE(ABORT, 'lossless: append-only: {table} rows cannot be deleted'); END;
             CREATE TRIGGER IF NOT EXISTS {table}_fixed BEFORE UPDATE ON {table}
             BEGIN SELECT RAISE(ABORT, 'lossless: append-only: {table} rows cannot be changed'); END;"
        ))?;
    }
    Ok(())
}

/// Version 7: the tables of files kept whole and of map runs, added to a database
/// of any older version (they depend on no other table's layout).
fn add_files_and_maps(tx: &rusqlite::Transaction<'_>) -> Result<()> {
    tx.execute_batch(FILES_AND_MAPS)?;
    tx.execute_batch(FILES_AND_MAPS_TRIGGERS)?;
    append_only_triggers(tx)
}

/// The bytes of images and documents (as of version 11), once per reference id
/// (`image_…`, `document_…`, from their SHA-256). A rowid table: a row holds up to
/// megabytes. An insert of stored content is skipped, never a replacement; rows
/// are never changed or deleted.
const MEDIA: &str = r"
CREATE TABLE IF NOT EXISTS media (
    pk         INTEGER PRIMARY KEY,
    media_id   TEXT NOT NULL UNIQUE,
    media_type TEXT NOT NULL,
    byte_size  INTEGER NOT NULL,
    data       BLOB NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE TRIGGER IF NOT EXISTS media_no_replace BEFORE INSERT ON media
WHEN EXISTS (SELECT 1 FROM media WHERE media_id = NEW.media_id)
BEGIN SELECT RAISE(IGNORE); END;
CREATE TRIGGER IF NOT EXISTS media_no_delete BEFORE DELETE ON media
WHEN NOT EXISTS (SELECT 1 FROM erasure_grants)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: media rows cannot be deleted'); END;
CREATE TRIGGER IF NOT EXISTS media_fixed BEFORE UPDATE ON media
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: media rows cannot be changed'); END;
";

/// Names, forks and handed-over histories (as of version 13), all append-only.
///
/// `session_keys`: a session's name for the outside world (an SDK session id, a
/// proxy conversation, an imported transcript); the newest row of a key names the
/// session it means now, older rows keep what it meant before.
/// `session_forks`: a session that shares its parent's history up to the parent's
/// message `fork_seq` (seq numbers go on from there in the child), and the first
/// position of the handed-over history (`sync_inputs`) that is its own.
/// `sync_inputs`: each position of the history `sync` was handed, as the digest of
/// every message up to it, and the message seqs its call wrote: `low_seq` the
/// oldest it created or changed (NULL: none), `high_seq` the newest in the session
/// after it.
const LINEAGE: &str = r"
CREATE TABLE IF NOT EXISTS session_keys (
    key        TEXT NOT NULL,
    ord        INTEGER NOT NULL,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    created_at INTEGER NOT NULL,
    PRIMARY KEY (key, ord)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS session_keys_by_session ON session_keys (session_id);
CREATE TABLE IF NOT EXISTS session_forks (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id),
    parent_id  TEXT NOT NULL REFERENCES sessions(id),
    fork_seq   INTEGER NOT NULL,
    sync_from  INTEGER NOT NULL,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS session_forks_by_parent ON session_forks (parent_id);
CREATE TABLE IF NOT EXISTS sync_inputs (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    position   INTEGER NOT NULL,
    digest     BLOB NOT NULL,
    low_seq    INTEGER,
    high_seq   INTEGER NOT NULL,
    PRIMARY KEY (session_id, position)
) WITHOUT ROWID;
";

/// The append-only triggers of the version 13 tables.
fn lineage_triggers(tx: &rusqlite::Transaction<'_>) -> Result<()> {
    for (table, key) in [
        ("session_keys", "key = NEW.key AND ord = NEW.ord"),
        ("session_forks", "session_id = NEW.session_id"),
        (
            "sync_inputs",
            "session_id = NEW.session_id AND position = NEW.position",
        ),
    ] {
        tx.execute_batch(&format!(
            "CREATE TRIGGER IF NOT EXISTS {table}_no_replace BEFORE INSERT ON {table}
             WHEN EXISTS (SELECT 1 FROM {table} WHERE {key})
             BEGIN SELECT RAISE(ABORT, 'lossless: append-only: a stored {table} row cannot be replaced'); END;
             CREATE TRIGGER IF NOT EXISTS {table}_no_delete BEFORE DELETE ON {table}
             WHEN NOT EXISTS (SELECT 1 FROM erasure_grants)
             BEGIN SELECT RAISE(ABORT, 'lossless: append-only: {table} rows cannot be deleted'); END;
             CREATE TRIGGER IF NOT EXISTS {table}_fixed BEFORE UPDATE ON {table}
             BEGIN SELECT RAISE(ABORT, 'lossless: append-only: {table} rows cannot be changed'); END;"
        ))?;
    }
    Ok(())
}

/// Erasure, subjects and retention (as of version 14).
///
/// `erasure_grants`: the one way through the append-only delete triggers, each of
/// which passes only while this table holds a row. Erasure writes the row first in
/// its own transaction and removes it before the commit, so no other transaction
/// ever sees it (see `erasure/`).
/// `erasure_receipts`: what each erasure removed (ids and counts, never content),
/// when and by whom; never deleted.
/// `session_subjects`: the people (or other subjects) a session is about, for
/// per-subject erasure and retention.
/// `retention_rules`: a time to live per session or per subject; the newest row of
/// a target is its rule, a NULL `ttl_ms` lifts it.
/// `store_keys`: the database's own keys, made once with it: `redaction`, which
/// keys the fingerprints of redacted secrets (see `redact/`). Never changed.
const GOVERNANCE: &str = r"
CREATE TABLE IF NOT EXISTS store_keys (
    name TEXT PRIMARY KEY,
    key  BLOB NOT NULL
) WITHOUT ROWID;
INSERT OR IGNORE INTO store_keys (name, key) VALUES ('redaction', randomblob(32));
CREATE TRIGGER IF NOT EXISTS store_keys_no_delete BEFORE DELETE ON store_keys
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: store keys cannot be deleted'); END;
CREATE TRIGGER IF NOT EXISTS store_keys_fixed BEFORE UPDATE ON store_keys
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: store keys cannot be changed'); END;
CREATE TABLE IF NOT EXISTS erasure_grants (granted INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS erasure_receipts (
    id          TEXT PRIMARY KEY,
    target_kind TEXT NOT NULL CHECK (target_kind IN ('session', 'message', 'subject')),
    target      TEXT NOT NULL,
    erased_by   TEXT NOT NULL,
    reason      TEXT NOT NULL,
    erased_at   INTEGER NOT NULL,
    counts      TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS session_subjects (
    subject    TEXT NOT NULL,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    created_at INTEGER NOT NULL,
    PRIMARY KEY (subject, session_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS session_subjects_by_session ON session_subjects (session_id);
CREATE TABLE IF NOT EXISTS retention_rules (
    target_kind TEXT NOT NULL CHECK (target_kind IN ('session', 'subject')),
    target      TEXT NOT NULL,
    ord         INTEGER NOT NULL,
    ttl_ms      INTEGER,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (target_kind, target, ord)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS erasure_receipts_no_delete BEFORE DELETE ON erasure_receipts
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: erasure receipts cannot be deleted'); END;
CREATE TRIGGER IF NOT EXISTS erasure_receipts_fixed BEFORE UPDATE ON erasure_receipts
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: erasure receipts cannot be changed'); END;
CREATE TRIGGER IF NOT EXISTS session_subjects_no_delete BEFORE DELETE ON session_subjects
WHEN NOT EXISTS (SELECT 1 FROM erasure_grants)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: session subjects cannot be deleted'); END;
CREATE TRIGGER IF NOT EXISTS retention_rules_no_delete BEFORE DELETE ON retention_rules
WHEN NOT EXISTS (SELECT 1 FROM erasure_grants)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: retention rules cannot be deleted'); END;
CREATE TRIGGER IF NOT EXISTS retention_rules_fixed BEFORE UPDATE ON retention_rules
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: retention rules cannot be changed'); END;
";

/// The session ledger (as of version 15): every value of every subject ever
/// written, append-only (the newest row of a subject is its live value; a `removed`
/// row takes it out), and how far each session's messages have been read into it,
/// which is bookkeeping, not content.
const LEDGER: &str = r"
CREATE TABLE IF NOT EXISTS ledger_items (
    session_id  TEXT NOT NULL REFERENCES sessions(id),
    ord         INTEGER NOT NULL,
    id          TEXT NOT NULL UNIQUE,
    kind        TEXT NOT NULL CHECK (kind IN ('rule', 'constraint', 'fact', 'decision',
                                              'preference', 'goal', 'state', 'error',
                                              'command', 'file')),
    subject     TEXT NOT NULL,
    text        TEXT NOT NULL,
    removed     INTEGER NOT NULL DEFAULT 0,
    changed     INTEGER NOT NULL DEFAULT 0,
    origin      TEXT NOT NULL CHECK (origin IN ('extracted', 'model', 'caller')),
    msg_seq     INTEGER NOT NULL,
    message_ids TEXT,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (session_id, ord)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS ledger_items_by_subject ON ledger_items (session_id, subject, ord);
CREATE TABLE IF NOT EXISTS ledger_marks (
    session_id   TEXT PRIMARY KEY REFERENCES sessions(id),
    absorbed_seq INTEGER NOT NULL,
    stable_cap   INTEGER NOT NULL,
    volatile_cap INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS ledger_items_no_replace BEFORE INSERT ON ledger_items
WHEN EXISTS (SELECT 1 FROM ledger_items WHERE session_id = NEW.session_id AND ord = NEW.ord)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: a stored ledger item cannot be replaced'); END;
CREATE TRIGGER IF NOT EXISTS ledger_items_no_delete BEFORE DELETE ON ledger_items
WHEN NOT EXISTS (SELECT 1 FROM erasure_grants)
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: ledger items cannot be deleted'); END;
CREATE TRIGGER IF NOT EXISTS ledger_items_fixed BEFORE UPDATE ON ledger_items
BEGIN SELECT RAISE(ABORT, 'lossless: append-only: ledger items cannot be changed'); END;
";

/// Before version 14 the delete triggers refused every delete: they are made again
/// with the erasure grant's condition.
fn drop_ungated_delete_triggers(tx: &rusqlite::Transaction<'_>) -> Result<()> {
    let names: Vec<String> = tx
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE '%no_delete'",
        )?
        .query_map([], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for name in names {
        tx.execute_batch(&format!("DROP TRIGGER \"{name}\";"))?;
    }
    Ok(())
}

/// Deletes from the full-text index remove a document's terms at once rather than
/// leaving them in older segments until a merge: an erased text must not stay
/// readable in the file (as of version 14).
const FTS_SECURE_DELETE: &str = "INSERT INTO fts (fts, rank) VALUES ('secure-delete', 1);";

/// Version 9 on a version 8 file: the arena's entries remember what a text cut at
/// write time counted (older ones read as whole).
const MIGRATE_FROM_8: &str = "ALTER TABLE arena_entries ADD COLUMN full_tokens INTEGER;";

/// Creates the schema on an empty database, upgrades an older one in one
/// transaction, accepts the current one, and refuses one written by a newer build.
pub fn migrate(conn: &mut Connection, path: &str) -> Result<()> {
    let found: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    if found > SCHEMA_VERSION {
        return Err(Error::SchemaTooNew {
            path: path.to_string(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    if found == SCHEMA_VERSION {
        return Ok(());
    }
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    // Another process may have created or upgraded the schema while this one waited.
    let again: i64 = tx.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    match again {
        0 => create(&tx, path)?,
        1 => upgrade_from_1(&tx)?,
        2 => {
            tx.execute_batch(MIGRATE_FROM_2)?;
            rebuild_search_index(&tx)?;
        }
        3..=5 => rebuild_search_index(&tx)?,
        8 => tx.execute_batch(MIGRATE_FROM_8)?,
        // From versions 6 and 7, the new tables (files and maps as of 7, the arena
        // as of 8, in its version 9 layout) are all that is new; they follow.
        _ => {}
    }
    if again < SCHEMA_VERSION {
        // Version 10: the reasoning kind; 11: the media kind; 12: the
        // provider_compaction kind. Every older `parts` table has a narrower list of
        // kinds (version 1's table was made anew above, with the whole list).
        if again > 0 {
            crate::db::kind_check::widen(&tx, path)?;
            drop_ungated_delete_triggers(&tx)?;
        }
        tx.execute_batch(GOVERNANCE)?;
        tx.execute_batch(LEDGER)?;
        tx.execute_batch(FTS_SECURE_DELETE)?;
        add_files_and_maps(&tx)?;
        tx.execute_batch(MEDIA)?;
        tx.execute_batch(LINEAGE)?;
        lineage_triggers(&tx)?;
        tx.execute_batch(STREAMS)?;
        tx.execute_batch(ARENA)?;
        tx.execute_batch(INDEXES)?;
        tx.execute_batch(TRIGGERS)?;
        tx.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))?;
    }
    tx.commit()?;
    Ok(())
}

/// Creates every table of an empty database; refuses one that holds another
/// application's tables.
fn create(tx: &rusqlite::Transaction<'_>, path: &str) -> Result<()> {
    let foreign: i64 = tx.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
        [],
        |row| row.get(0),
    )?;
    if foreign > 0 {
        return Err(Error::NotADatabase {
            path: path.to_string(),
            reason: "it is a SQLite database of another application".into(),
        });
    }
    let parts = parts_table();
    for tables in [
        TABLES,
        &parts,
        SUMMARIES,
        SUMMARY_SOURCES,
        SEARCH,
        LANGUAGES,
        FTS,
    ] {
        tx.execute_batch(tables)?;
    }
    Ok(())
}

/// Rebuilds the tables whose layout changed in version 2, keeping every row. Index
/// rows are keyed on the rowids of what they index now, so the full-text index is
/// built again from the stored text.
fn upgrade_from_1(tx: &rusqlite::Transaction<'_>) -> Result<()> {
    let parts = parts_table();
    for step in [
        MIGRATE_FROM_1,
        &parts,
        SUMMARIES,
        SUMMARY_SOURCES,
        SEARCH,
        LANGUAGES,
        FTS,
        MIGRATE_FROM_1_COPY,
    ] {
        tx.execute_batch(step)?;
    }
    crate::recall::index::move_backlog_in_migration(tx)?;
    Ok(())
}

/// From versions 2 to 5: the index is stemmed in each document's language now, so
/// it is built again from the stored text, in the migration's transaction.
fn rebuild_search_index(tx: &rusqlite::Transaction<'_>) -> Result<()> {
    tx.execute_batch(LANGUAGES)?;
    tx.execute_batch("DROP TABLE fts;")?;
    tx.execute_batch(FTS)?;
    tx.execute_batch(
        "INSERT OR IGNORE INTO search_backlog (fts_rowid)
             SELECT pk FROM parts UNION ALL SELECT -pk FROM summaries;",
    )?;
    crate::recall::index::move_backlog_in_migration(tx)?;
    Ok(())
}
