//! Appending messages and their parts, and closing a streamed reply.

use crate::db::backend::{args, Conn};

use crate::context::view::{ItemKind, ViewItem};
use crate::db::gate::transact;
use crate::db::id_list::join_ids;
use crate::error::{Error, Result};
use crate::history::events::WriteEvent;
use crate::history::redaction::redact_parts;
use crate::ids::{new_id, now_ms};
use crate::parts::{check_identifier, Part, Role};
use crate::recall::index::{bound_backlog, queue_part};
use crate::redact::Finding;
use crate::render::{StoredPart, MESSAGE_OVERHEAD};
use crate::store::Store;
use crate::tokens::TokenCounter;

/// What an append wrote.
#[derive(Clone, Debug)]
pub struct AppendResult {
    pub id: String,
    pub seq: i64,
    pub token_count: i64,
    pub part_ids: Vec<String>,
    /// The secrets replaced before the message was written, by kind.
    pub redacted: Vec<Finding>,
}

/// Usage reported by the provider for an assistant message.
#[derive(Clone, Debug, Default)]
pub struct Usage {
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub cost: Option<f64>,
    pub finish_reason: Option<String>,
}

/// A stored message with its parts.
#[derive(Clone, Debug)]
pub struct MessageRecord {
    pub id: String,
    pub session_id: String,
    pub seq: i64,
    pub role: String,
    pub status: String,
    pub created_at: i64,
    pub model: Option<String>,
    pub token_count: Option<i64>,
    pub usage: Usage,
    pub parts: Vec<StoredPart>,
}

/// A part ready to insert: validated, counted, its file ids found.
pub(crate) struct PreparedPart<'a> {
    id: String,
    part: &'a Part,
    tokens: i64,
    output_tokens: i64,
    file_ids: Vec<String>,
}

pub(crate) fn prepare_parts<'a>(
    counter: &TokenCounter,
    parts: &'a [Part],
) -> Result<Vec<PreparedPart<'a>>> {
    if parts.iter().map(Part::text_bytes).sum::<usize>() > LIGHT_WRITE_BYTES {
        crate::db::gate::refuse_slow_work_when_not_waiting("counting a large message")?;
    }
    let mut prepared = Vec::with_capacity(parts.len());
    for (index, part) in parts.iter().enumerate() {
        part.validate(&format!("parts[{index}]"))?;
        let (tokens, output_tokens) = part.tokens(counter);
        prepared.push(PreparedPart {
            id: new_id("prt"),
            part,
            tokens: tokens as i64,
            output_tokens: output_tokens as i64,
            file_ids: part.file_ids(),
        });
    }
    Ok(prepared)
}

/// Writes a `secrets_redacted` event for message `message_id` in the caller's
/// transaction when its parts held secrets: the kinds and counts, never the text.
pub(crate) fn record_redaction(
    tx: &Conn,
    session_id: &str,
    message_id: &str,
    redacted: &[Finding],
) -> Result<()> {
    if redacted.is_empty() {
        return Ok(());
    }
    let kinds: serde_json::Map<String, serde_json::Value> = redacted
        .iter()
        .map(|finding| (finding.kind.to_string(), finding.count.into()))
        .collect();
    let mut payload = serde_json::Map::new();
    payload.insert("kinds".into(), kinds.into());
    let event = WriteEvent {
        name: REDACTED_EVENT.to_string(),
        payload,
    };
    event.insert(tx, session_id, &[("message_id", message_id)])?;
    Ok(())
}

/// The name of the event a redacting write records.
pub const REDACTED_EVENT: &str = "secrets_redacted";

/// Text a write may count and store without waiting (see `Store::without_waiting`):
/// counting 64 KiB takes well under a millisecond.
pub(crate) const LIGHT_WRITE_BYTES: usize = 64 * 1024;

/// Adds `parts` after the parts of the stored message `message_id` (a tool's
/// images, which come with its result); returns the tokens they add to it.
pub(crate) fn append_parts(
    tx: &Conn,
    session_id: &str,
    message_id: &str,
    counter: &TokenCounter,
    parts: &[Part],
) -> Result<i64> {
    let prepared = prepare_parts(counter, parts)?;
    let (seq, next): (i64, i64) = tx
        .prepare_cached(
            "SELECT m.seq, (SELECT COALESCE(max(p.ord), -1) + 1 FROM parts p
                            WHERE p.session_id = m.session_id AND p.msg_seq = m.seq)
             FROM messages m WHERE m.id = ?1",
        )?
        .query_row(args![message_id], |row| Ok((row.get(0)?, row.get(1)?)))?;
    insert_parts_from(tx, session_id, message_id, seq, next, &prepared)?;
    Ok(prepared.iter().map(|part| part.tokens).sum())
}

fn insert_parts(
    tx: &Conn,
    session_id: &str,
    message_id: &str,
    seq: i64,
    prepared: &[PreparedPart<'_>],
) -> Result<()> {
    insert_parts_from(tx, session_id, message_id, seq, 0, prepared)
}

/// Inserts `prepared` as the parts of a message from position `first` on.
fn insert_parts_from(
    tx: &Conn,
    session_id: &str,
    message_id: &str,
    seq: i64,
    first: i64,
    prepared: &[PreparedPart<'_>],
) -> Result<()> {
    let mut insert = tx.prepare_cached(
        "INSERT INTO parts (id, message_id, session_id, msg_seq, ord, kind, body, tool_name, call_id,
                            tool_status, tool_error, token_count, output_tokens, file_ids)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
         RETURNING pk",
    )?;
    for (ord, item) in prepared.iter().enumerate() {
        let columns = item.part.columns();
        let part_pk: i64 = insert.query_row(
            args![
                item.id,
                message_id,
                session_id,
                seq,
                first + ord as i64,
                item.part.kind(),
                columns.body,
                columns.tool_name,
                columns.call_id,
                columns.tool_status,
                columns.tool_error,
                item.tokens,
                item.output_tokens,
                join_ids(&item.file_ids),
            ],
            |row| row.get(0),
        )?;
        if let Some(output) = &columns.output {
            insert_tool_output(tx, part_pk, output)?;
        }
        if let Some(media) = &columns.media {
            crate::history::media::insert_media(tx, media)?;
        }
        queue_part(tx, part_pk)?;
    }
    bound_backlog(tx)
}

pub(crate) fn insert_tool_output(tx: &Conn, part_pk: i64, output: &str) -> Result<()> {
    tx.prepare_cached("INSERT INTO tool_outputs (part_pk, output) VALUES (?1, ?2)")?
        .execute(args![part_pk, output])?;
    Ok(())
}

/// What a message costs in the view: its framing and the parts that render into
/// it in every request (reasoning is counted by the requests that send it).
fn message_tokens(prepared: &[PreparedPart<'_>]) -> i64 {
    let parts = prepared
        .iter()
        .filter(|p| p.part.counted_in_view())
        .map(|p| p.tokens);
    MESSAGE_OVERHEAD as i64 + parts.sum::<i64>()
}

/// Allocates the next sequence number (and view position when `in_view`).
fn allocate(tx: &Conn, session_id: &str, in_view: bool) -> Result<(i64, i64, i64)> {
    let step = i64::from(in_view);
    tx.prepare_cached(
        "UPDATE sessions SET next_seq = next_seq + 1, next_position = next_position + ?2,
                view_version = view_version + ?2
         WHERE id = ?1 RETURNING next_seq - 1, next_position - ?2, view_version",
    )?
    .query_opt(args![session_id, step], |row| {
        Ok((row.get(0)?, row.get(1)?, row.get(2)?))
    })?
    .ok_or_else(|| Error::SessionNotFound(session_id.to_string()))
}

fn insert_view_item(
    tx: &Conn,
    session_id: &str,
    position: i64,
    id: &str,
    tokens: i64,
) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO context_items (session_id, position, kind, item_id, token_count)
         VALUES (?1, ?2, 'message', ?3, ?4)",
    )?
    .execute(args![session_id, position, id, tokens])?;
    Ok(())
}

impl Store {
    /// Appends a whole message with its parts, in one transaction: message row,
    /// parts, index rows, token counts and its place in the context view.
    pub fn append_message(
        &mut self,
        session_id: &str,
        role: Role,
        parts: &[Part],
        model: Option<&str>,
    ) -> Result<AppendResult> {
        self.append_turn(session_id, role, parts, model, None)
    }

    /// [`Store::append_message`], with `event` (its payload given the new message's
    /// `message_id`) written in the same transaction: a turn as one commit.
    pub fn append_turn(
        &mut self,
        session_id: &str,
        role: Role,
        parts: &[Part],
        model: Option<&str>,
        event: Option<&WriteEvent>,
    ) -> Result<AppendResult> {
        if parts.is_empty() {
            return Err(Error::invalid("parts", "a message needs at least one part"));
        }
        let counter = self.counter(session_id)?;
        let redactor = self.redactor_for(session_id)?;
        let mut redacted = Vec::new();
        let parts = redact_parts(parts, redactor.as_deref(), &mut redacted);
        let prepared = prepare_parts(&counter, &parts)?;
        let tokens = message_tokens(&prepared);
        let id = new_id("msg");
        let (seq, position, version) = transact(
            &self.conn,
            &self.writer,
            Some(session_id),
            |tx| {
                let (seq, position, version) = allocate(tx, session_id, true)?;
                tx.prepare_cached(
                    "INSERT INTO messages (id, session_id, seq, role, created_at, model, status, token_count)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'complete', ?7)",
                )?
                .execute(args![id, session_id, seq, role.as_str(), now_ms(), model, tokens])?;
                insert_parts(tx, session_id, &id, seq, &prepared)?;
                insert_view_item(tx, session_id, position, &id, tokens)?;
                if let Some(event) = event {
                    event.insert(tx, session_id, &[("message_id", &id)])?;
                }
                record_redaction(tx, session_id, &id, &redacted)?;
                Ok((seq, position, version))
            },
        )?;
        self.views.appended(
            session_id,
            version,
            ViewItem {
                position,
                kind: ItemKind::Message,
                id: id.clone(),
                tokens,
                role: Some(role),
                seq,
            },
        );
        Ok(AppendResult {
            id,
            seq,
            token_count: tokens,
            part_ids: prepared.into_iter().map(|p| p.id).collect(),
            redacted,
        })
    }

    /// Starts a message whose parts arrive later (a streamed reply), streamed by
    /// `owner` (see [`Store::checkpoint_message`]). It is not in the context view
    /// until [`Store::finish_message`] completes it.
    pub fn begin_message(
        &mut self,
        session_id: &str,
        role: Role,
        model: Option<&str>,
        owner: &str,
    ) -> Result<String> {
        self.session(session_id)?;
        check_identifier("owner", owner)?;
        let id = new_id("msg");
        transact(&self.conn, &self.writer, Some(session_id), |tx| {
            let (seq, _, _) = allocate(tx, session_id, false)?;
            tx.prepare_cached(
                "INSERT INTO messages (id, session_id, seq, role, created_at, model, status)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'streaming')",
            )?
            .execute(args![id, session_id, seq, role.as_str(), now_ms(), model])?;
            crate::history::checkpoints::start_checkpoint(tx, &id, session_id, owner)
        })?;
        Ok(id)
    }

    /// Stores the parts of a begun message and closes it. A complete message joins
    /// the context view; an incomplete one (a failed stream) is kept, flagged, outside it.
    pub fn finish_message(
        &mut self,
        message_id: &str,
        parts: &[Part],
        complete: bool,
        usage: &Usage,
    ) -> Result<AppendResult> {
        self.finish_turn(message_id, parts, complete, usage, None)
    }

    /// [`Store::finish_message`], with `event` (its payload given the message's
    /// `message_id`) written in the same transaction: a reply as one commit.
    pub fn finish_turn(
        &mut self,
        message_id: &str,
        parts: &[Part],
        complete: bool,
        usage: &Usage,
        event: Option<&WriteEvent>,
    ) -> Result<AppendResult> {
        let (session_id, seq, role, status) = self.message_head(message_id)?;
        if status != "streaming" {
            return Err(Error::invalid(
                "message_id",
                format!("message {message_id} is already {status}"),
            ));
        }
        if complete && parts.is_empty() {
            return Err(Error::invalid(
                "parts",
                "a complete message needs at least one part",
            ));
        }
        let counter = self.counter(&session_id)?;
        let redactor = self.redactor_for(&session_id)?;
        let mut redacted = Vec::new();
        let parts = redact_parts(parts, redactor.as_deref(), &mut redacted);
        let prepared = prepare_parts(&counter, &parts)?;
        let tokens = message_tokens(&prepared);
        let closing = Closing {
            session_id: &session_id,
            message_id,
            seq,
            complete,
            usage,
        };
        let placed = transact(&self.conn, &self.writer, Some(&session_id), |tx| {
            let placed = close_message(tx, &closing, &prepared)?;
            if let Some(event) = event {
                event.insert(tx, &session_id, &[("message_id", message_id)])?;
            }
            record_redaction(tx, &session_id, message_id, &redacted)?;
            Ok(placed)
        })?;
        if let Some((position, version)) = placed {
            let item = ViewItem {
                position,
                kind: ItemKind::Message,
                id: message_id.to_string(),
                tokens,
                role: Some(Role::parse(&role)?),
                seq,
            };
            self.views.appended(&session_id, version, item);
        }
        Ok(AppendResult {
            id: message_id.to_string(),
            seq,
            token_count: tokens,
            part_ids: prepared.into_iter().map(|p| p.id).collect(),
            redacted,
        })
    }

    pub(crate) fn message_head(&self, message_id: &str) -> Result<(String, i64, String, String)> {
        self.conn
            .prepare_cached("SELECT session_id, seq, role, status FROM messages WHERE id = ?1")?
            .query_opt(args![message_id], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            })?
            .ok_or_else(|| Error::NotFound {
                kind: "message",
                id: message_id.to_string(),
            })
    }
}

/// Adds `delta` tokens to a message's view item, if it is in the view; returns the new view version.
/// A streamed message being closed: complete (it joins the view) or not.
pub(crate) struct Closing<'a> {
    pub session_id: &'a str,
    pub message_id: &'a str,
    pub seq: i64,
    pub complete: bool,
    pub usage: &'a Usage,
}

/// Stores the parts of a streaming message and closes it, inside `tx`: its parts,
/// its status and usage, its place in the view when complete (returned as the
/// position and view version), and the end of its stream checkpoint.
pub(crate) fn close_message(
    tx: &Conn,
    closing: &Closing<'_>,
    prepared: &[PreparedPart<'_>],
) -> Result<Option<(i64, i64)>> {
    let (session_id, message_id) = (closing.session_id, closing.message_id);
    let tokens = message_tokens(prepared);
    insert_parts(tx, session_id, message_id, closing.seq, prepared)?;
    let usage = closing.usage;
    let changed = tx
        .prepare_cached(
            "UPDATE messages SET status = ?2, token_count = ?3, input_tokens = ?4, output_tokens = ?5,
                    cost = ?6, finish_reason = ?7
             WHERE id = ?1 AND status = 'streaming'",
        )?
        .execute(args![
            message_id,
            if closing.complete { "complete" } else { "incomplete" },
            tokens,
            usage.input_tokens,
            usage.output_tokens,
            usage.cost,
            usage.finish_reason,
        ])?;
    if changed == 0 {
        return Err(Error::invalid(
            "message_id",
            format!("message {message_id} was finished concurrently"),
        ));
    }
    crate::history::checkpoints::end_checkpoint(tx, message_id)?;
    if !closing.complete {
        return Ok(None);
    }
    let (_, position, version) = allocate_position(tx, session_id)?;
    insert_view_item(tx, session_id, position, message_id, tokens)?;
    Ok(Some((position, version)))
}

pub(crate) fn bump_item_tokens(
    tx: &Conn,
    session_id: &str,
    message_id: &str,
    delta: i64,
) -> Result<Option<i64>> {
    let changed = tx
        .prepare_cached(
            // Newest first: the message whose tool call moves on is almost always
            // at the end of the view, so the scan stops after a few rows.
            "UPDATE context_items SET token_count = token_count + ?3
             WHERE session_id = ?1 AND position = (
                 SELECT position FROM context_items WHERE session_id = ?1 AND item_id = ?2
                 ORDER BY position DESC LIMIT 1)",
        )?
        .execute(args![session_id, message_id, delta])?;
    if changed == 0 {
        return Ok(None);
    }
    let version = tx
        .prepare_cached("UPDATE sessions SET view_version = view_version + 1 WHERE id = ?1 RETURNING view_version")?
        .query_row(args![session_id], |row| row.get(0))?;
    Ok(Some(version))
}

fn allocate_position(tx: &Conn, session_id: &str) -> Result<(i64, i64, i64)> {
    tx.prepare_cached(
        "UPDATE sessions SET next_position = next_position + 1, view_version = view_version + 1
         WHERE id = ?1 RETURNING 0, next_position - 1, view_version",
    )?
    .query_opt(args![session_id], |row| {
        Ok((row.get(0)?, row.get(1)?, row.get(2)?))
    })?
    .ok_or_else(|| Error::SessionNotFound(session_id.to_string()))
}
