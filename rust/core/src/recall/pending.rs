//! What a read-only store finds in rows still waiting for the full-text index.
//!
//! Writers queue new text in `search_backlog` and move it into the index in
//! batches (see `recall/index.rs`); a search by a writer moves the queue first. A
//! read-only store cannot write the file, so it indexes the queued rows (fewer
//! than `BACKLOG_LIMIT`) in a temporary index of its own connection, with the
//! same tokenizer, and merges what that finds: by bm25 in text mode, newest
//! first (they are the newest rows) in regex mode.

use crate::db::backend::args;
use regex::RegexBuilder;

use crate::recall::grep::{snippet_around, GrepHit, GrepMode};
use std::sync::LazyLock;

use crate::error::Result;
use crate::parts::search_text_sql;
use crate::query;
use crate::store::Store;

/// The rows a queued rowid will be indexed as: the text the backlog's move into
/// `fts` indexes (see `parts::search_text_sql`).
static QUEUED_ROWS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {}, p.session_id, p.message_id, p.id, b.fts_rowid
        FROM main.search_backlog b JOIN main.parts p ON p.pk = b.fts_rowid
        LEFT JOIN main.tool_outputs o ON o.part_pk = p.pk
        WHERE b.fts_rowid > 0 AND (?1 IS NULL OR p.session_id = ?1)
        UNION ALL
        SELECT s.text, s.session_id, s.id, '', b.fts_rowid
        FROM main.search_backlog b JOIN main.summaries s ON s.pk = -b.fts_rowid
        WHERE b.fts_rowid < 0 AND (?1 IS NULL OR s.session_id = ?1)",
        search_text_sql(false)
    )
});

impl Store {
    /// Adds the hits among queued rows to `hits` (found in the index), keeping
    /// `limit`. A part indexed before its tool result arrived is queued again:
    /// it is reported once.
    pub(crate) fn merge_pending(
        &self,
        hits: &mut Vec<GrepHit>,
        query: &str,
        session_id: Option<&str>,
        mode: GrepMode,
        limit: usize,
    ) -> Result<()> {
        let pending = match mode {
            GrepMode::Text => self.pending_text(query, session_id, limit)?,
            GrepMode::Regex => self.pending_regex(query, session_id, limit)?,
        };
        hits.retain(|hit| {
            !pending
                .iter()
                .any(|p| p.owner_id == hit.owner_id && p.part_id == hit.part_id)
        });
        match mode {
            // bm25 scores are negative, better ones lower; a stable sort keeps ties in order.
            GrepMode::Text => {
                hits.extend(pending);
                hits.sort_by(|a, b| a.rank.total_cmp(&b.rank));
            }
            GrepMode::Regex => {
                hits.splice(0..0, pending);
            }
        }
        hits.truncate(limit);
        Ok(())
    }

    /// Queued rows matching the words of `query`, ranked by bm25 in a temporary index.
    fn pending_text(
        &self,
        query: &str,
        session_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<GrepHit>> {
        // Indexed first: the queued rows may be in a language the file's index lacks.
        self.index_pending()?;
        let terms = self.stemmed_terms()?;
        let match_expr = query::parse(query, &terms)?.to_fts(&terms);
        let mut stmt = self.conn.prepare_cached(
            "SELECT session_id, owner_id, part_id, snippet(pending, 0, '[', ']', ' ... ', 24),
                    bm25(pending)
             FROM temp.pending WHERE pending MATCH ?1 AND (?3 IS NULL OR session_id = ?3)
             ORDER BY bm25(pending) LIMIT ?2",
        )?;
        let hits = stmt
            .query_map(args![match_expr, limit as i64, session_id], |row| {
                Ok(GrepHit::new(
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    row.get(3)?,
                    row.get(4)?,
                ))
            })?
            .into_iter()
            .collect::<_>();
        Ok(hits)
    }

    /// Source messages of `session_id` with a seq in `lo..=hi` among queued rows
    /// that match `match_expr`, with their bm25 scores, best first.
    pub(crate) fn pending_matches(
        &self,
        match_expr: &str,
        session_id: &str,
        (lo, hi): (i64, i64),
        limit: i64,
    ) -> Result<Vec<(String, f64)>> {
        self.index_pending()?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT m.id, bm25(pending) FROM temp.pending
             JOIN main.messages m ON m.id = pending.owner_id
             WHERE pending MATCH ?1 AND m.session_id = ?5 AND m.seq BETWEEN ?2 AND ?3
             ORDER BY bm25(pending) LIMIT ?4",
        )?;
        let found = stmt
            .query_map(args![match_expr, lo, hi, limit, session_id], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })?
            .into_iter()
            .collect::<_>();
        Ok(found)
    }

    /// The queued rows of every session in a temporary index of this connection,
    /// built again only when the file changed since (`PRAGMA data_version`): a
    /// reader of a file no one writes, such as an MCP server over a finished
    /// session, indexes the queue once, not on every search.
    fn index_pending(&self) -> Result<()> {
        let version: i64 = self
            .conn
            .query_row("PRAGMA data_version", args![], |row| row.get(0))?;
        if self.pending_version.get() == Some(version) {
            return Ok(());
        }
        self.conn.batch(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.pending USING fts5(
                 body, session_id UNINDEXED, owner_id UNINDEXED, part_id UNINDEXED,
                 tokenize = 'lossless');
             DELETE FROM temp.pending;",
        )?;
        self.fill_pending()?;
        self.pending_version.set(Some(version));
        Ok(())
    }

    fn fill_pending(&self) -> Result<()> {
        let mut read = self.conn.prepare_cached(&QUEUED_ROWS)?;
        let mut insert = self.conn.prepare_cached(
            "INSERT INTO temp.pending (body, session_id, owner_id, part_id) VALUES (?1, ?2, ?3, ?4)",
        )?;
        let mut rows = read.query(args![Option::<&str>::None])?;
        while let Some(ref row) = rows.next()? {
            let body: String = row.get(0)?;
            let session: String = row.get(1)?;
            let owner: String = row.get(2)?;
            let part: String = row.get(3)?;
            insert.execute(args![body, session, owner, part])?;
        }
        Ok(())
    }

    /// Queued rows matching the regex `pattern`, newest first.
    fn pending_regex(
        &self,
        pattern: &str,
        session_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<GrepHit>> {
        // The pattern was compiled with the same limit by the search of the index.
        let Ok(regex) = RegexBuilder::new(pattern).size_limit(1 << 22).build() else {
            return Ok(Vec::new());
        };
        let mut stmt = self
            .conn
            .prepare_cached(&format!("{} ORDER BY 5 DESC", *QUEUED_ROWS))?;
        let mut rows = stmt.query(args![session_id])?;
        let mut hits = Vec::new();
        while let Some(ref row) = rows.next()? {
            let body = row.get::<&str>(0)?;
            let Some(found) = regex.find(body) else {
                continue;
            };
            let snippet = snippet_around(body, found.start(), found.end());
            hits.push(GrepHit::new(
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                snippet,
                0.0,
            ));
            if hits.len() >= limit {
                break;
            }
        }
        Ok(hits)
    }
}
