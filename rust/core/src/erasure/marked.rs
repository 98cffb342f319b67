//! Summaries built on erased content: each keeps its place in the DAG and the
//! views, with a marker for its text. Rebuilding its text from what is left would
//! need the summariser that wrote it; the marker says what happened, and the
//! sources that remain can still be expanded.

use crate::db::backend::{args, Conn};
use crate::error::Result;

use super::Erased;

/// One summary row, everything but its text and token count.
struct SummaryRow {
    pk: i64,
    session_id: String,
    kind: String,
    level: i64,
    span: (i64, i64),
    message_count: i64,
    depth: i64,
    file_ids: Option<String>,
    created_at: i64,
    superseded_by: Option<String>,
}

/// Marks every summary above the messages of `session` with seqs `low` to
/// `high`, level by level up the DAG, and drops the messages' own edges.
pub(super) fn mark_summaries_above(
    tx: &Conn,
    (session, low, high): (&str, i64, i64),
    erased: &mut Erased,
) -> Result<()> {
    // One scan of the edges for the whole run: they are keyed by summary.
    let mut frontier: Vec<String> = tx
        .prepare_cached(
            "SELECT DISTINCT summary_id FROM summary_sources WHERE source_kind = 'message'
               AND source_id IN (SELECT id FROM messages WHERE session_id = ?1 AND seq BETWEEN ?2 AND ?3)",
        )?
        .query_map(args![session, low, high], |row| row.get(0))?;
    tx.execute(
        "DELETE FROM summary_sources WHERE source_kind = 'message'
           AND source_id IN (SELECT id FROM messages WHERE session_id = ?1 AND seq BETWEEN ?2 AND ?3)",
        args![session, low, high],
    )?;
    let mut marked: Vec<String> = Vec::new();
    while !frontier.is_empty() {
        for summary in &frontier {
            mark(tx, summary)?;
            marked.push(summary.clone());
            erased.summaries_replaced += 1;
        }
        let mut above = Vec::new();
        for source in &frontier {
            let parents: Vec<String> = tx
                .prepare_cached(
                    "SELECT DISTINCT summary_id FROM summary_sources WHERE source_id = ?1",
                )?
                .query_map(args![source], |row| row.get(0))?;
            above.extend(parents.into_iter().filter(|id| !marked.contains(id)));
        }
        above.sort();
        above.dedup();
        frontier = above;
    }
    Ok(())
}

/// Replaces summary `id`'s row with the same row and the marker text, takes it
/// out of the search index (its marker is queued for it) and updates its token
/// count in every view that holds it.
fn mark(tx: &Conn, id: &str) -> Result<()> {
    let row = tx
        .prepare_cached(
            "SELECT pk, session_id, kind, level, span_start_seq, span_end_seq, message_count,
                    depth, file_ids, created_at, superseded_by
             FROM summaries WHERE id = ?1",
        )?
        .query_row(args![id], |row| {
            Ok(SummaryRow {
                pk: row.get(0)?,
                session_id: row.get(1)?,
                kind: row.get(2)?,
                level: row.get(3)?,
                span: (row.get(4)?, row.get(5)?),
                message_count: row.get(6)?,
                depth: row.get(7)?,
                file_ids: row.get(8)?,
                created_at: row.get(9)?,
                superseded_by: row.get(10)?,
            })
        })?;
    let text = marker(&row);
    let tokens = marker_tokens(&text);
    super::index::forget(tx, &[-row.pk])?;
    tx.execute("DELETE FROM summaries WHERE id = ?1", args![id])?;
    tx.execute(
        "INSERT INTO summaries (pk, id, session_id, kind, level, text, token_count, span_start_seq,
                                span_end_seq, message_count, depth, file_ids, created_at, superseded_by)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        args![
            row.pk,
            id,
            row.session_id,
            row.kind,
            row.level,
            text,
            tokens,
            row.span.0,
            row.span.1,
            row.message_count,
            row.depth,
            row.file_ids,
            row.created_at,
            row.superseded_by
        ],
    )?;
    tx.execute(
        tx.dialect(
            "INSERT OR IGNORE INTO search_backlog (fts_rowid) VALUES (?1)",
            "INSERT INTO search_backlog (fts_rowid) VALUES (?1) ON CONFLICT DO NOTHING",
        ),
        args![-row.pk],
    )?;
    tx.execute(
        "UPDATE context_items SET token_count = ?2 WHERE kind = 'summary' AND item_id = ?1",
        args![id, tokens],
    )?;
    Ok(())
}

/// The text a summary of erased content is left with.
fn marker(row: &SummaryRow) -> String {
    format!(
        "[erased] Part of what this summary covered (messages {} to {}, {} in all) was \
         erased on request. The rest of its sources can still be expanded.",
        row.span.0, row.span.1, row.message_count
    )
}

/// The marker's tokens, counted high (a character in three) so a view never
/// holds more than it says: the marker is short and plain ASCII.
fn marker_tokens(text: &str) -> i64 {
    (text.len() as i64) / 3 + 1
}
