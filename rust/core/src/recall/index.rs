//! The full-text index and its backlog.
//!
//! An index row carries the rowid of what it indexes: a part's rowid, or minus
//! a summary's. Writers queue that rowid in `search_backlog`, inside their own
//! transaction, so nothing stored can miss the index. FTS5 costs about 100 µs
//! per transaction to index a few KB (it writes a new segment on every commit),
//! several times an append's whole budget, while a batch costs a fraction of
//! that per row. So the backlog moves into `fts` in batches: before every search
//! (a search never misses a stored row), when it grows past [`BACKLOG_LIMIT`]
//! rows, and whenever a caller asks ([`Store::flush_search_index`]).
//!
//! Moving a rowid (re)builds its index row from the text stored now, so a tool
//! call whose result arrives later is indexed once, with its result.

use std::sync::LazyLock;

use crate::db::backend::{args, Conn};

use crate::db::gate::transact_bookkeeping;
use crate::error::Result;
use crate::lang::{Language, LanguageSet};
use crate::parts::search_text_sql;
use crate::query::Terms;
use crate::store::Store;

/// Rows the backlog may hold before the write that crosses it moves them all
/// into the index: bounds the work a search may have to do first. The write that
/// moves them takes about as many milliseconds as a fiftieth of this (tool outputs
/// of a few KB), so it is set for that write to be rarer than one in a hundred:
/// agents' turns come back-to-back in long tool runs, and one turn in a hundred
/// paying for a batch would be their 99th percentile.
pub const BACKLOG_LIMIT: i64 = 512;

/// Queues a part's index row, inside the caller's transaction. The caller ends
/// its writes with [`bound_backlog`].
pub(crate) fn queue_part(tx: &Conn, part_rowid: i64) -> Result<()> {
    queue(tx, part_rowid)
}

/// Queues a summary's index row, inside the caller's transaction. The caller
/// ends its writes with [`bound_backlog`].
pub(crate) fn queue_summary(tx: &Conn, summary_rowid: i64) -> Result<()> {
    queue(tx, -summary_rowid)
}

fn queue(tx: &Conn, fts_rowid: i64) -> Result<()> {
    tx.prepare_cached("INSERT INTO search_backlog (fts_rowid) VALUES (?1) ON CONFLICT DO NOTHING")?
        .execute(args![fts_rowid])?;
    Ok(())
}

/// Moves the whole backlog into the index when it has grown to [`BACKLOG_LIMIT`].
pub(crate) fn bound_backlog(tx: &Conn) -> Result<()> {
    let waiting: i64 = tx
        .prepare_cached("SELECT count(*) FROM search_backlog")?
        .query_row(args![], |row| row.get(0))?;
    if waiting >= BACKLOG_LIMIT {
        move_backlog(tx)?;
    }
    Ok(())
}

/// Rebuilds the index rows of everything queued, from the stored text (see
/// [`search_text_sql`]), and empties the queue.
pub(crate) fn move_backlog(tx: &Conn) -> Result<usize> {
    crate::db::gate::refuse_slow_work_when_not_waiting("moving the search backlog")?;
    if let Conn::Postgres(_) = tx {
        return move_backlog_postgres(tx);
    }
    let mut moved = 0;
    for (step, sql) in MOVE_BACKLOG.iter().enumerate() {
        let changed = tx.prepare_cached(sql)?.execute(args![])?;
        if step == 1 {
            moved = changed;
        }
    }
    Ok(moved)
}

/// [`move_backlog`] on PostgreSQL: the terms are made here, by the store's own
/// tokenizer (see `pg::fts`), from the text PostgreSQL reads as SQLite's index
/// does (see [`search_text_sql`]). Writers of other sessions move the backlog at
/// the same time: each claims the rows it moves by deleting them from the backlog
/// first (another mover waits for those rows, then passes over them), so no row
/// is indexed twice and none queued meanwhile is dropped unindexed.
fn move_backlog_postgres(tx: &Conn) -> Result<usize> {
    static CLAIM: LazyLock<String> = LazyLock::new(|| {
        format!(
            "WITH claimed AS (DELETE FROM search_backlog RETURNING fts_rowid)
             SELECT c.fts_rowid, p.session_id, p.message_id, p.id, {}
             FROM claimed c JOIN parts p ON p.pk = c.fts_rowid
             LEFT JOIN tool_outputs o ON o.part_pk = p.pk
             WHERE c.fts_rowid > 0
             UNION ALL
             SELECT c.fts_rowid, s.session_id, s.id, '', s.text
             FROM claimed c JOIN summaries s ON s.pk = -c.fts_rowid
             WHERE c.fts_rowid < 0
             ORDER BY 1",
            search_text_sql(true)
        )
    });
    let rows = tx.query_map(&CLAIM, args![], |row| {
        Ok((
            row.get::<i64>(0)?,
            row.get::<String>(1)?,
            row.get::<String>(2)?,
            row.get::<String>(3)?,
            row.get::<Option<String>>(4)?.unwrap_or_default(),
        ))
    })?;
    // A row queued again (a tool's result arrived) replaces its older index row.
    let mut insert = tx.prepare_cached(
        "INSERT INTO search_index (fts_rowid, session_id, owner_id, part_id, body, terms)
         VALUES (?1, ?2, ?3, ?4, ?5, CAST(CAST(?6 AS TEXT) AS tsvector))
         ON CONFLICT (fts_rowid) DO UPDATE SET session_id = EXCLUDED.session_id,
             owner_id = EXCLUDED.owner_id, part_id = EXCLUDED.part_id,
             body = EXCLUDED.body, terms = EXCLUDED.terms",
    )?;
    let mut languages = std::collections::BTreeSet::new();
    for (rowid, session_id, owner_id, part_id, body) in &rows {
        let (terms, language) = crate::pg::fts::document_vector(body);
        languages.insert(language.code());
        insert.execute(args![rowid, session_id, owner_id, part_id, body, terms])?;
    }
    for code in languages {
        tx.execute(
            "INSERT INTO search_languages (code) VALUES (?1) ON CONFLICT DO NOTHING",
            args![code],
        )?;
    }
    Ok(rows.len())
}

/// [`move_backlog`] on a connection a store does not own yet: a migration's.
pub(crate) fn move_backlog_in_migration(tx: &rusqlite::Connection) -> Result<()> {
    for sql in MOVE_BACKLOG.iter() {
        tx.prepare_cached(sql)?.execute([])?;
    }
    Ok(())
}

/// The statements of [`move_backlog`]: the second writes the index rows.
static MOVE_BACKLOG: LazyLock<[String; 4]> = LazyLock::new(|| {
    [
        "DELETE FROM fts WHERE rowid IN (SELECT fts_rowid FROM search_backlog)".into(),
        format!(
            "INSERT INTO fts (rowid, body, session_id, owner_id, part_id)
             SELECT p.pk, {}, p.session_id, p.message_id, p.id
             FROM search_backlog b JOIN parts p ON p.pk = b.fts_rowid
             LEFT JOIN tool_outputs o ON o.part_pk = p.pk
             WHERE b.fts_rowid > 0
             UNION ALL
             SELECT b.fts_rowid, s.text, s.session_id, s.id, ''
             FROM search_backlog b JOIN summaries s ON s.pk = -b.fts_rowid
             WHERE b.fts_rowid < 0",
            search_text_sql(false)
        ),
        "DELETE FROM search_backlog".into(),
        // The languages the tokenizer indexed these rows in, for queries to stem in.
        "INSERT OR IGNORE INTO search_languages (code)
         SELECT value FROM json_each(lossless_new_languages())"
            .into(),
    ]
});

impl Store {
    /// Moves the text still waiting for the full-text index into it, in one
    /// transaction, and returns how many index rows were written. Searches do
    /// this first on their own; calling it in idle time keeps them from paying.
    pub fn flush_search_index(&mut self) -> Result<usize> {
        if self.search_backlog()? == 0 {
            return Ok(0);
        }
        transact_bookkeeping(&self.conn, &self.writer, move_backlog)
    }

    /// Rows waiting for the full-text index.
    pub fn search_backlog(&self) -> Result<i64> {
        self.conn
            .prepare_cached("SELECT count(*) FROM search_backlog")?
            .query_row(args![], |row| row.get(0))
    }
}

/// The first schema version whose index the `lossless` tokenizer wrote.
const STEMMED_INDEX_SCHEMA: i64 = 6;

impl Store {
    /// How queries' words become terms of this file's index: stemmed in every
    /// language it holds, or as they are for an index written before version 6
    /// (read without migrating it), whose own tokenizer makes its terms.
    pub(crate) fn search_terms(&self) -> Result<Terms> {
        if self.read_only && self.schema_version()? < STEMMED_INDEX_SCHEMA {
            return Ok(Terms::Verbatim);
        }
        self.stemmed_terms()
    }

    /// Terms stemmed in the languages the file's index holds and those this
    /// connection indexed (a read-only store's temporary index of queued rows).
    pub(crate) fn stemmed_terms(&self) -> Result<Terms> {
        let mut set = self.indexed_languages.ever();
        if self.schema_version()? >= STEMMED_INDEX_SCHEMA {
            let mut stmt = self
                .conn
                .prepare_cached("SELECT code FROM search_languages")?;
            let mut rows = stmt.query(args![])?;
            while let Some(ref row) = rows.next()? {
                if let Some(lang) = Language::from_code(row.get::<&str>(0)?) {
                    set = LanguageSet(set.0 | lang.bit());
                }
            }
        }
        Ok(Terms::Stemmed(set.languages()))
    }
}
