//! Forks: a session that shares its parent's history up to one message, summaries
//! included, without a copy of either, and goes its own way from there.
//!
//! The child numbers its messages on from the fork point, so the seqs of a lineage
//! never collide (see `segments`). Its view starts as the parent's view cut at the
//! fork point: items wholly before it are shared as they are; a summary that spans
//! the fork point is replaced by its sources (recursively), so no summary the child
//! sees covers a message it does not share. The view is the one row set each session
//! has of its own; the messages and summaries it points at stay where they are, and
//! nothing of the parent changes. The parent's live arena entries (pins, task state)
//! are the child's first entries.

use crate::db::backend::{args, Conn};
use crate::db::gate::Write;
use crate::error::{Error, Result};
use crate::ids::now_ms;
use crate::render::MESSAGE_OVERHEAD;
use crate::store::Store;

/// Where a fork joins its parent.
#[derive(Clone, Debug)]
pub struct ForkInfo {
    pub session_id: String,
    pub parent_id: String,
    /// The parent's last shared message (0: none).
    pub fork_seq: i64,
    /// The first position of a history handed to `sync` that the child holds
    /// itself; the positions before it are read from the parent.
    pub sync_from: i64,
    pub created_at: i64,
}

/// One item of a view being cut at a fork point.
struct ViewItem {
    kind: String,
    item_id: String,
    tokens: i64,
}

impl Store {
    /// How `session_id` joins its parent, when it is a fork.
    pub fn fork_of(&self, session_id: &str) -> Result<Option<ForkInfo>> {
        if !self.has_lineage_tables()? {
            return Ok(None);
        }
        self.conn
            .prepare_cached(
                "SELECT session_id, parent_id, fork_seq, sync_from, created_at
                 FROM session_forks WHERE session_id = ?1",
            )?
            .query_opt(args![session_id], fork_info)
    }

    /// The forks of `parent_id`, oldest first.
    pub fn forks_of(&self, parent_id: &str) -> Result<Vec<ForkInfo>> {
        if !self.has_lineage_tables()? {
            return Ok(Vec::new());
        }
        self.conn
            .prepare_cached(
                "SELECT session_id, parent_id, fork_seq, sync_from, created_at
                 FROM session_forks WHERE parent_id = ?1 ORDER BY created_at, session_id",
            )?
            .query_map(args![parent_id], fork_info)
    }

    /// The seq of message `message_id` in `session_id`'s history (its lineage's
    /// included); an error names a message of another history.
    pub fn message_seq(&self, session_id: &str, message_id: &str) -> Result<i64> {
        let found: Option<(String, i64)> = self
            .conn
            .prepare_cached("SELECT session_id, seq FROM messages WHERE id = ?1")?
            .query_opt(args![message_id], |row| Ok((row.get(0)?, row.get(1)?)))?;
        let lineage = self.lineage(session_id)?;
        match found {
            Some((holder, seq)) if lineage.holder_of(seq) == Some(holder.as_str()) => Ok(seq),
            _ => Err(Error::invalid(
                "at",
                format!("{message_id} is no message of session {session_id}'s history"),
            )),
        }
    }

    /// Creates a session that shares `parent_id`'s history up to its message
    /// `fork_seq` (0: none of it), with the parent's model, configuration and
    /// system prompt, in one transaction; `key`, when given, names the new session
    /// from now on. `sync_from` is how many positions of a history handed to `sync`
    /// the child shares. Returns the new session's id.
    pub fn fork_session(
        &mut self,
        parent_id: &str,
        fork_seq: i64,
        sync_from: i64,
        key: Option<&str>,
    ) -> Result<String> {
        let parent = self.session(parent_id)?.clone();
        if let Some(key) = key {
            crate::parts::check_identifier("key", key)?;
        }
        let write = Write::for_session(&self.conn, &self.writer, parent_id)?;
        let newest: i64 = write.query_row(
            "SELECT next_seq - 1 FROM sessions WHERE id = ?1",
            args![parent_id],
            |row| row.get(0),
        )?;
        if !(0..=newest).contains(&fork_seq) {
            return Err(Error::invalid(
                "at",
                format!("session {parent_id} has no message {fork_seq} to fork at (its newest is {newest})"),
            ));
        }
        if sync_from < 0 {
            return Err(Error::invalid("sync_from", "must not be negative"));
        }
        let id = Self::insert_session(
            &write,
            &parent.model,
            &parent.config,
            parent.system_prompt.as_deref(),
            fork_seq + 1,
        )?;
        write.execute(
            "INSERT INTO session_forks (session_id, parent_id, fork_seq, sync_from, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            args![id, parent_id, fork_seq, sync_from, now_ms()],
        )?;
        let view = cut_view(&write, parent_id, fork_seq)?;
        insert_view(&write, &id, &view)?;
        copy_arena(&write, parent_id, &id)?;
        if let Some(key) = key {
            crate::lineage::keys::append_key(&write, key, &id)?;
        }
        write.commit()?;
        Ok(id)
    }
}

fn fork_info(row: &crate::db::backend::Row<'_>) -> Result<ForkInfo> {
    Ok(ForkInfo {
        session_id: row.get(0)?,
        parent_id: row.get(1)?,
        fork_seq: row.get(2)?,
        sync_from: row.get(3)?,
        created_at: row.get(4)?,
    })
}

/// The parent's view, cut at `fork_seq`: items wholly at or before it, a summary
/// across it replaced by its sources.
fn cut_view(tx: &Conn, parent_id: &str, fork_seq: i64) -> Result<Vec<ViewItem>> {
    let items = tx.query_map(
        "SELECT kind, item_id, token_count FROM context_items
         WHERE session_id = ?1 ORDER BY position",
        args![parent_id],
        |row| {
            Ok(ViewItem {
                kind: row.get(0)?,
                item_id: row.get(1)?,
                tokens: row.get(2)?,
            })
        },
    )?;
    let mut kept = Vec::with_capacity(items.len());
    for item in items {
        keep_before(tx, item, fork_seq, &mut kept)?;
    }
    Ok(kept)
}

/// Adds `item` to `kept` when it lies wholly at or before `fork_seq`; a summary that
/// spans it adds those of its sources that do.
fn keep_before(tx: &Conn, item: ViewItem, fork_seq: i64, kept: &mut Vec<ViewItem>) -> Result<()> {
    if item.kind == "message" {
        let seq: i64 = tx.query_row(
            "SELECT seq FROM messages WHERE id = ?1",
            args![item.item_id],
            |row| row.get(0),
        )?;
        if seq <= fork_seq {
            kept.push(item);
        }
        return Ok(());
    }
    let (start, end): (i64, i64) = tx.query_row(
        "SELECT span_start_seq, span_end_seq FROM summaries WHERE id = ?1",
        args![item.item_id],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?;
    if end <= fork_seq {
        kept.push(item);
        return Ok(());
    }
    if start > fork_seq {
        return Ok(());
    }
    for source in summary_sources(tx, &item.item_id)? {
        keep_before(tx, source, fork_seq, kept)?;
    }
    Ok(())
}

/// A summary's sources in order, each with what it costs in a view.
fn summary_sources(tx: &Conn, summary_id: &str) -> Result<Vec<ViewItem>> {
    let rows: Vec<(String, String)> = tx.query_map(
        "SELECT source_kind, source_id FROM summary_sources WHERE summary_id = ?1 ORDER BY ord",
        args![summary_id],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?;
    rows.into_iter()
        .map(|(kind, item_id)| {
            let tokens = if kind == "message" {
                message_view_tokens(tx, &item_id)?
            } else {
                tx.query_row(
                    "SELECT token_count FROM summaries WHERE id = ?1",
                    args![item_id],
                    |row| row.get(0),
                )?
            };
            Ok(ViewItem {
                kind,
                item_id,
                tokens,
            })
        })
        .collect()
}

/// What a stored message costs in a view: its framing and the parts counted there,
/// a pruned tool output as its marker.
fn message_view_tokens(tx: &Conn, message_id: &str) -> Result<i64> {
    let parts: i64 = tx.query_row(
        "SELECT coalesce(sum(CASE WHEN compacted_at IS NULL THEN token_count
                 ELSE token_count - output_tokens + coalesce(compacted_tokens, 0) END), 0)
         FROM parts WHERE message_id = ?1 AND kind <> 'reasoning'",
        args![message_id],
        |row| row.get(0),
    )?;
    Ok(MESSAGE_OVERHEAD as i64 + parts)
}

/// Writes `items` as the view of the new session `session_id`.
fn insert_view(tx: &Conn, session_id: &str, items: &[ViewItem]) -> Result<()> {
    let mut insert = tx.prepare_cached(
        "INSERT INTO context_items (session_id, position, kind, item_id, token_count)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (index, item) in items.iter().enumerate() {
        let position = index as i64 + 1;
        insert.execute(args![
            session_id,
            position,
            item.kind,
            item.item_id,
            item.tokens
        ])?;
    }
    let next = items.len() as i64 + 1;
    tx.execute(
        "UPDATE sessions SET next_position = ?2, view_version = view_version + 1 WHERE id = ?1",
        args![session_id, next],
    )?;
    Ok(())
}

/// The parent's arena entries, as the child's first ones (the newest per key decides
/// what is live, so the history of each key comes along in order).
fn copy_arena(tx: &Conn, parent_id: &str, child_id: &str) -> Result<()> {
    tx.execute(
        "INSERT INTO arena_entries (session_id, seq, zone, key, source, priority, once, external,
                                    removed, token_count, created_at, text, full_tokens)
         SELECT ?2, seq, zone, key, source, priority, once, external, removed, token_count,
                created_at, text, full_tokens
         FROM arena_entries WHERE session_id = ?1",
        args![parent_id, child_id],
    )?;
    Ok(())
}
