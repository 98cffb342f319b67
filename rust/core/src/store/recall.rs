//! Finding what compaction moved out of the view: the summary DAG and expand (grep is
//! in `grep.rs`).

use std::collections::HashSet;

use super::compaction::SummaryRow;
use super::Store;
use crate::error::{Error, Result};
use crate::render::{transcript_entry, StoredPart, MESSAGE_OVERHEAD};

/// One node of a session's summary DAG.
#[derive(Clone, Debug)]
pub struct DagNode {
    pub summary: SummaryRow,
    pub live: bool,
    pub source_kind: String,
    pub sources: Vec<String>,
}

/// A summary expanded back into its source messages.
#[derive(Clone, Debug, Default)]
pub struct Expansion {
    pub summary_id: String,
    pub messages: Vec<ExpandedMessage>,
    pub tokens: i64,
    pub total_messages: i64,
    pub omitted_messages: i64,
    pub note: String,
}

/// One source message in an [`Expansion`].
#[derive(Clone, Debug)]
pub struct ExpandedMessage {
    pub id: String,
    pub seq: i64,
    pub role: String,
    pub text: String,
    pub tokens: i64,
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
                let mut stmt = self.conn.prepare_cached(
                    "SELECT id FROM summaries WHERE session_id = ?1 ORDER BY created_at DESC, id DESC",
                )?;
                let ids = stmt
                    .query_map([session], |row| row.get::<_, String>(0))?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                drop(stmt);
                return ids.iter().map(|id| self.dag_node(id)).collect();
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

    fn dag_node(&self, summary_id: &str) -> Result<DagNode> {
        let summary = self.summary(summary_id)?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT source_kind, source_id FROM summary_sources WHERE summary_id = ?1 ORDER BY ord",
        )?;
        let mut source_kind = String::from("message");
        let mut sources = Vec::new();
        let mut rows = stmt.query([summary_id])?;
        while let Some(row) = rows.next()? {
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

    /// The source messages of a summary (through condensed summaries, oldest
    /// first), as many as fit `max_tokens`, with a note of what was left out.
    pub fn expand(&mut self, summary_id: &str, max_tokens: i64) -> Result<Expansion> {
        self.summary(summary_id)?;
        let message_ids = self.leaf_messages(summary_id)?;
        let mut expansion = Expansion {
            summary_id: summary_id.to_string(),
            total_messages: message_ids.len() as i64,
            ..Expansion::default()
        };
        for id in &message_ids {
            let record = self.get_message(id)?;
            // Expanding restores what pruning took out of the view: originals, not markers.
            let originals: Vec<StoredPart> = record
                .parts
                .into_iter()
                .map(|part| StoredPart {
                    tombstone: None,
                    ..part
                })
                .collect();
            let text = transcript_entry(record.seq, &record.role, &originals, None);
            // The counts stored at write time, as everywhere else: expanding never
            // re-tokenises what it shows.
            let tokens = self.stored_tokens(id)?;
            if expansion.tokens + tokens > max_tokens {
                break;
            }
            expansion.tokens += tokens;
            expansion.messages.push(ExpandedMessage {
                id: record.id,
                seq: record.seq,
                role: record.role,
                text,
                tokens,
            });
        }
        expansion.omitted_messages = expansion.total_messages - expansion.messages.len() as i64;
        expansion.note = if expansion.omitted_messages == 0 {
            format!("all {} source messages shown", expansion.total_messages)
        } else {
            let next = &message_ids[expansion.messages.len()];
            format!(
                "{} of {} source messages shown within {max_tokens} tokens; {} left out, starting at {next}",
                expansion.messages.len(),
                expansion.total_messages,
                expansion.omitted_messages
            )
        };
        Ok(expansion)
    }

    /// Message ids under a summary, oldest first, walking condensed summaries down.
    fn leaf_messages(&self, summary_id: &str) -> Result<Vec<String>> {
        // One query per summary reads its source messages with their sequence
        // numbers, instead of one lookup per message.
        let mut children = self.conn.prepare_cached(
            "SELECT s.source_kind, s.source_id, COALESCE(m.seq, 0) FROM summary_sources s
             LEFT JOIN messages m ON s.source_kind = 'message' AND m.id = s.source_id
             WHERE s.summary_id = ?1 ORDER BY s.ord",
        )?;
        let mut messages: Vec<(i64, String)> = Vec::new();
        let mut stack = vec![summary_id.to_string()];
        let mut seen = HashSet::new();
        while let Some(id) = stack.pop() {
            if !seen.insert(id.clone()) {
                continue;
            }
            let mut rows = children.query([&id])?;
            while let Some(row) = rows.next()? {
                let source: String = row.get(1)?;
                if row.get_ref(0)?.as_str()? == "summary" {
                    stack.push(source);
                } else {
                    messages.push((row.get(2)?, source));
                }
            }
        }
        messages.sort_unstable();
        Ok(messages.into_iter().map(|(_, id)| id).collect())
    }

    /// A message's tokens as written: its parts with their full outputs, plus framing.
    fn stored_tokens(&self, message_id: &str) -> Result<i64> {
        let parts: i64 = self
            .conn
            .prepare_cached(
                "SELECT COALESCE(SUM(p.token_count), 0) FROM messages m JOIN parts p
                   ON p.session_id = m.session_id AND p.msg_seq = m.seq WHERE m.id = ?1",
            )?
            .query_row([message_id], |row| row.get(0))?;
        Ok(parts + MESSAGE_OVERHEAD as i64)
    }

    /// Counts over the whole database.
    pub fn stats(&self) -> Result<StoreStats> {
        let count =
            |sql: &str| -> Result<i64> { Ok(self.conn.query_row(sql, [], |row| row.get(0))?) };
        Ok(StoreStats {
            sessions: count("SELECT count(*) FROM sessions")?,
            messages: count("SELECT count(*) FROM messages")?,
            parts: count("SELECT count(*) FROM parts")?,
            summaries: count("SELECT count(*) FROM summaries")?,
            live_summaries: count("SELECT count(*) FROM summaries WHERE superseded_by IS NULL")?,
            compactions: count("SELECT count(*) FROM events WHERE name = 'compaction_completed'")?,
            tokens_stored: count("SELECT COALESCE(SUM(token_count), 0) FROM messages")?,
            tokens_in_view: count("SELECT COALESCE(SUM(token_count), 0) FROM context_items")?,
            tombstones: count("SELECT count(*) FROM parts WHERE compacted_at IS NOT NULL")?,
            events: count("SELECT count(*) FROM events")?,
        })
    }
}
