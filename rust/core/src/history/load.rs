//! Reading stored messages back with their parts.

use crate::db::backend::{args, Row, Value};

use crate::db::id_list::split_ids;
use crate::error::{Error, Result};
use crate::history::messages::{MessageRecord, Usage};
use crate::parts::{Part, StoredColumns};
use crate::render::StoredPart;
use crate::store::Store;

impl Store {
    /// The message with `id` and its parts.
    pub fn get_message(&self, message_id: &str) -> Result<MessageRecord> {
        let mut records = self.query_messages(
            "SELECT id, session_id, seq, role, status, created_at, model, token_count, input_tokens,
                    output_tokens, cost, finish_reason FROM messages WHERE id = ?1",
            args![message_id],
        )?;
        records.pop().ok_or_else(|| Error::NotFound {
            kind: "message",
            id: message_id.to_string(),
        })
    }

    /// Every message of a session, in order, with parts; a fork's include those it
    /// shares with its parent.
    pub fn history(&mut self, session_id: &str) -> Result<Vec<MessageRecord>> {
        self.session(session_id)?;
        let lineage = self.lineage(session_id)?;
        let mut records = Vec::new();
        for (holder, low, high) in lineage.clip(1, i64::MAX) {
            records.extend(self.held_history(holder, low, high)?);
        }
        Ok(records)
    }

    /// The messages of a session whose seqs are `low..=high`, in order, with parts;
    /// a fork's include those it shares with its parent. A page of a long history:
    /// only those rows are read.
    pub fn history_range(
        &mut self,
        session_id: &str,
        low: i64,
        high: i64,
    ) -> Result<Vec<MessageRecord>> {
        self.session(session_id)?;
        let lineage = self.lineage(session_id)?;
        let mut records = Vec::new();
        for (holder, from, to) in lineage.clip(low.max(1), high) {
            records.extend(self.held_history(holder, from, to)?);
        }
        Ok(records)
    }

    /// The messages `low..=high` of `session_id` itself, in order, with parts.
    fn held_history(&self, session_id: &str, low: i64, high: i64) -> Result<Vec<MessageRecord>> {
        let mut records = self.message_heads(
            "SELECT id, session_id, seq, role, status, created_at, model, token_count, input_tokens,
                    output_tokens, cost, finish_reason FROM messages
             WHERE session_id = ?1 AND seq BETWEEN ?2 AND ?3 ORDER BY seq",
            args![session_id, low, high],
        )?;
        // Every part of the session in one walk, in message order: one query per
        // message would cost more than reading the parts.
        let mut stmt = self.conn.prepare_cached(
            "SELECT p.id, p.kind, p.body, p.tool_name, p.call_id, p.tool_status, o.output,
                    p.tool_error, p.compacted_at, p.file_ids, p.msg_seq
             FROM parts p LEFT JOIN tool_outputs o ON o.part_pk = p.pk
             WHERE p.session_id = ?1 AND p.msg_seq BETWEEN ?2 AND ?3 ORDER BY p.msg_seq, p.ord",
        )?;
        let mut rows = stmt.query(args![session_id, low, high])?;
        let mut next = 0;
        while let Some(ref row) = rows.next()? {
            let seq: i64 = row.get(10)?;
            // Both runs are in `seq` order, so the owner is at or after the last one.
            while records.get(next).is_some_and(|record| record.seq < seq) {
                next += 1;
            }
            match records.get_mut(next) {
                Some(record) if record.seq == seq => record.parts.push(row_to_part(row)??),
                _ => {
                    return Err(Error::Sqlite(format!(
                        "a part of {session_id} belongs to no message (seq {seq})"
                    )))
                }
            }
        }
        Ok(records)
    }

    fn query_messages(&self, sql: &str, args: &[Value<'_>]) -> Result<Vec<MessageRecord>> {
        let mut records = self.message_heads(sql, args)?;
        for record in &mut records {
            record.parts = self.load_parts(&record.id)?;
        }
        Ok(records)
    }

    /// The messages `sql` selects, without their parts.
    fn message_heads(&self, sql: &str, args: &[Value<'_>]) -> Result<Vec<MessageRecord>> {
        let mut stmt = self.conn.prepare_cached(sql)?;
        let heads = stmt
            .query_map(args, |row| {
                Ok(MessageRecord {
                    id: row.get(0)?,
                    session_id: row.get(1)?,
                    seq: row.get(2)?,
                    role: row.get(3)?,
                    status: row.get(4)?,
                    created_at: row.get(5)?,
                    model: row.get(6)?,
                    token_count: row.get(7)?,
                    usage: Usage {
                        input_tokens: row.get(8)?,
                        output_tokens: row.get(9)?,
                        cost: row.get(10)?,
                        finish_reason: row.get(11)?,
                    },
                    parts: Vec::new(),
                })
            })?
            .into_iter()
            .collect::<Vec<_>>();
        Ok(heads)
    }

    /// The parts of one message, in order, with tombstones applied.
    pub(crate) fn load_parts(&self, message_id: &str) -> Result<Vec<StoredPart>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT p.id, p.kind, p.body, p.tool_name, p.call_id, p.tool_status, o.output,
                    p.tool_error, p.compacted_at, p.file_ids
             FROM parts p LEFT JOIN tool_outputs o ON o.part_pk = p.pk
             JOIN messages m ON m.id = ?1
             WHERE p.session_id = m.session_id AND p.msg_seq = m.seq ORDER BY p.ord",
        )?;
        let rows = stmt.query_map(args![message_id], row_to_part)?;
        let mut parts = Vec::new();
        for row in rows {
            parts.push(row?);
        }
        Ok(parts)
    }
}

/// Decodes one `parts` row (columns as selected by `load_parts`).
pub(crate) fn row_to_part(row: &Row<'_>) -> Result<Result<StoredPart>> {
    let kind: String = row.get(1)?;
    let columns = StoredColumns {
        id: row.get(0)?,
        body: row.get(2)?,
        tool_name: row.get(3)?,
        call_id: row.get(4)?,
        tool_status: row.get(5)?,
        output: row.get(6)?,
        tool_error: row.get(7)?,
    };
    let id = columns.id.clone();
    let compacted: Option<i64> = row.get(8)?;
    let file_ids: Option<String> = row.get(9)?;
    Ok(Part::from_columns(&kind, columns).map(|part| {
        let tombstone =
            compacted.and_then(|_| part.pruned_marker(&id, &split_ids(file_ids.as_deref())));
        StoredPart {
            id,
            part,
            tombstone,
        }
    }))
}
