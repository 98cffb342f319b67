//! Reading a summary's part of the DAG: its children, its source messages in a
//! range of seqs, and how many lie below a seq. SQL only; `expand.rs` decides
//! which range to read.

use crate::db::backend::args;

use crate::error::Result;
use crate::render::MESSAGE_OVERHEAD;
use crate::store::Store;

/// A child of a summary in the DAG: a summary, with its span and message count.
#[derive(Clone, Debug)]
pub(crate) struct Child {
    pub(crate) id: String,
    pub(crate) leaf: bool,
    pub(crate) start: i64,
    pub(crate) end: i64,
    pub(crate) count: i64,
}

/// A source message of a leaf, with its tokens as stored.
#[derive(Clone, Debug)]
pub(crate) struct Source {
    pub(crate) id: String,
    pub(crate) seq: i64,
    pub(crate) role: String,
    pub(crate) tokens: i64,
}

/// Which way along the sources a window or a walk goes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Older,
    Newer,
}

impl Store {
    /// The source messages of `root` with a seq in `lo..=hi`, oldest first.
    ///
    /// Leaves need not cover runs of seqs that follow one another: a tool call
    /// still running stays in the view while the messages around it are summarised,
    /// and a later leaf covers it alone, inside the span of the earlier one. So the
    /// walk goes into every child whose span meets the range, and sorts.
    pub(crate) fn sources_in(&self, root: &Child, lo: i64, hi: i64) -> Result<Vec<Source>> {
        let mut sources = Vec::new();
        let mut stack = vec![root.clone()];
        while let Some(node) = stack.pop() {
            if node.leaf {
                sources.extend(self.leaf_sources_in(&node.id, lo, hi)?);
                continue;
            }
            let children = self.summary_children(&node.id)?;
            stack.extend(
                children
                    .into_iter()
                    .filter(|child| child.end >= lo && child.start <= hi),
            );
        }
        sources.sort_unstable_by_key(|source| source.seq);
        Ok(sources)
    }

    /// How many source messages of `node` have a seq below `seq`: whole children
    /// by their stored counts, walking only into those whose span holds `seq`.
    pub(crate) fn count_below(&self, node: &Child, seq: i64) -> Result<i64> {
        if node.end < seq {
            return Ok(node.count);
        }
        if node.start >= seq {
            return Ok(0);
        }
        if node.leaf {
            return self
                .conn
                .prepare_cached(
                    "SELECT count(*) FROM summary_sources s JOIN messages m ON m.id = s.source_id
                     WHERE s.summary_id = ?1 AND s.source_kind = 'message' AND m.seq < ?2",
                )?
                .query_row(args![node.id, seq], |row| row.get(0));
        }
        let mut below = 0;
        for child in self.summary_children(&node.id)? {
            below += self.count_below(&child, seq)?;
        }
        Ok(below)
    }

    /// The seq of a message of the root's session inside its span, if it is one.
    pub(crate) fn source_seq(&self, root: &Child, message_id: &str) -> Result<Option<i64>> {
        let seq: Option<i64> = self
            .conn
            .prepare_cached(
                "SELECT m.seq FROM messages m JOIN summaries s ON s.session_id = m.session_id
                 WHERE m.id = ?1 AND s.id = ?2",
            )?
            .query_opt(args![message_id, root.id], |row| row.get(0))?;
        Ok(seq.filter(|seq| root.start <= *seq && *seq <= root.end))
    }

    /// The summaries a condensed summary stands for, oldest span first.
    pub(crate) fn summary_children(&self, summary_id: &str) -> Result<Vec<Child>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT c.id, c.kind, c.span_start_seq, c.span_end_seq, c.message_count
             FROM summary_sources s JOIN summaries c ON c.id = s.source_id
             WHERE s.summary_id = ?1 AND s.source_kind = 'summary'
             ORDER BY c.span_start_seq",
        )?;
        let children = stmt
            .query_map(args![summary_id], |row| {
                Ok(Child {
                    id: row.get(0)?,
                    leaf: row.get::<&str>(1)? == "leaf",
                    start: row.get(2)?,
                    end: row.get(3)?,
                    count: row.get(4)?,
                })
            })?
            .into_iter()
            .collect::<_>();
        Ok(children)
    }

    /// A leaf's source messages with a seq in `lo..=hi`, with their tokens as
    /// written (their parts with full outputs, plus framing): expanding never
    /// re-tokenises.
    fn leaf_sources_in(&self, leaf_id: &str, lo: i64, hi: i64) -> Result<Vec<Source>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT m.id, m.seq, m.role,
                    (SELECT CAST(COALESCE(SUM(p.token_count), 0) AS BIGINT) FROM parts p
                      WHERE p.session_id = m.session_id AND p.msg_seq = m.seq)
             FROM summary_sources s JOIN messages m ON m.id = s.source_id
             WHERE s.summary_id = ?1 AND s.source_kind = 'message' AND m.seq BETWEEN ?2 AND ?3",
        )?;
        let sources = stmt
            .query_map(args![leaf_id, lo, hi], |row| {
                Ok(Source {
                    id: row.get(0)?,
                    seq: row.get(1)?,
                    role: row.get(2)?,
                    tokens: row.get::<i64>(3)? + MESSAGE_OVERHEAD as i64,
                })
            })?
            .into_iter()
            .collect::<_>();
        Ok(sources)
    }
}
