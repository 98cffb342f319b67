//! Finding what compaction moved out of the view: the summary DAG and the store's
//! counts (grep is in `grep.rs`, expand in `expand.rs`).

use crate::compaction::summaries::SummaryRow;
use crate::db::backend::args;
use crate::error::{Error, Result};
use crate::store::Store;

/// One node of a session's summary DAG.
#[derive(Clone, Debug)]
pub struct DagNode {
    pub summary: SummaryRow,
    pub live: bool,
    pub source_kind: String,
    pub sources: Vec<String>,
}

/// Counts over the whole database.
#[derive(Clone, Debug, Default)]
pub struct StoreStats {
    pub sessions: i64,
    pub messages: i64,
    pub parts: i64,
    pub summaries: i64,
    pub live_summaries: i64,
    pub compactions: i64,
    pub tokens_stored: i64,
    pub tokens_in_view: i64,
    pub tombstones: i64,
    pub events: i64,
}

impl Store {
    /// The session's summary DAG (or one summary's subtree), newest first.
    pub fn describe(
        &mut self,
        session_id: Option<&str>,
        summary_id: Option<&str>,
    ) -> Result<Vec<DagNode>> {
        let roots: Vec<SummaryRow> = match (session_id, summary_id) {
            (_, Some(id)) => vec![self.summary(id)?],
            (Some(session), None) => {
                self.session(session)?;
                // A fork's DAG holds the summaries of the history it shares.
                let mut stmt = self.conn.prepare_cached(
                    "SELECT id, created_at FROM summaries WHERE session_id = ?1 AND span_end_seq <= ?2",
                )?;
                let mut found: Vec<(String, i64)> = Vec::new();
                for segment in &self.lineage(session)?.segments {
                    found.extend(
                        stmt.query_map(args![segment.session_id, segment.last_seq], |row| {
                            Ok((row.get::<String>(0)?, row.get::<i64>(1)?))
                        })?,
                    );
                }
                drop(stmt);
                found.sort_by(|a, b| (b.1, &b.0).cmp(&(a.1, &a.0)));
                return found.iter().map(|(id, _)| self.dag_node(id)).collect();
            }
            (None, None) => {
                return Err(Error::invalid(
                    "session_or_summary",
                    "name a session or a summary",
                ))
            }
        };
        let mut nodes = Vec::new();
        let mut queue: Vec<String> = roots.into_iter().map(|row| row.id).collect();
        while let Some(id) = queue.pop() {
            let node = self.dag_node(&id)?;
            if node.source_kind == "summary" {
                queue.extend(node.sources.iter().cloned());
            }
            nodes.push(node);
        }
        Ok(nodes)
    }

    /// One summary of the DAG with the ids of its sources, without its subtree:
    /// what a viewer opens one node at a time.
    pub fn summary_node(&self, summary_id: &str) -> Result<DagNode> {
        self.dag_node(summary_id)
    }

    fn dag_node(&self, summary_id: &str) -> Result<DagNode> {
        let summary = self.summary(summary_id)?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT source_kind, source_id FROM summary_sources WHERE summary_id = ?1 ORDER BY ord",
        )?;
        let mut source_kind = String::from("message");
        let mut sources = Vec::new();
        let mut rows = stmt.query(args![summary_id])?;
        while let Some(ref row) = rows.next()? {
            source_kind = row.get(0)?;
            sources.push(row.get(1)?);
        }
        Ok(DagNode {
            live: summary.superseded_by.is_none(),
            summary,
            source_kind,
            sources,
        })
    }

    /// Counts over the whole database.
    pub fn stats(&self) -> Result<StoreStats> {
        let count =
            |sql: &str| -> Result<i64> { self.conn.query_row(sql, args![], |row| row.get(0)) };
        Ok(StoreStats {
            sessions: count("SELECT count(*) FROM sessions")?,
            messages: count("SELECT count(*) FROM messages")?,
            parts: count("SELECT count(*) FROM parts")?,
            summaries: count("SELECT count(*) FROM summaries")?,
            live_summaries: count("SELECT count(*) FROM summaries WHERE superseded_by IS NULL")?,
            compactions: count("SELECT count(*) FROM events WHERE name = 'compaction_completed'")?,
            tokens_stored: count(
                "SELECT CAST(COALESCE(SUM(token_count), 0) AS BIGINT) FROM messages",
            )?,
            tokens_in_view: count(
                "SELECT CAST(COALESCE(SUM(token_count), 0) AS BIGINT) FROM context_items",
            )?,
            tombstones: count("SELECT count(*) FROM parts WHERE compacted_at IS NOT NULL")?,
            events: count("SELECT count(*) FROM events")?,
        })
    }
}
