//! Appending messages and parts, tool lifecycle updates, and reading them back.

use super::backend::{args, Conn, Row, Value};

use super::events::WriteEvent;
use super::gate::transact;
use super::id_list::{join_ids, split_ids};
use super::search::{bound_backlog, move_backlog, queue_part};
use super::view::{ItemKind, ViewItem};
use super::Store;
use crate::error::{Error, Result};
use crate::ids::{new_id, now_ms};
use crate::parts::{
    check_content, check_identifier, Part, Role, StoredColumns, ToolCallPart, ToolStatus,
};
use crate::render::{StoredPart, MESSAGE_OVERHEAD};
use crate::tokens::TokenCounter;

/// What an append wrote.
#[derive(Clone, Debug)]
pub struct AppendResult {
    pub id: String,
    pub seq: i64,
    pub token_count: i64,
    pub part_ids: Vec<String>,
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
pub(super) struct PreparedPart<'a> {
    id: String,
    part: &'a Part,
    tokens: i64,
    output_tokens: i64,
    file_ids: Vec<String>,
}

pub(super) fn prepare_parts<'a>(
    counter: &TokenCounter,
    parts: &'a [Part],
) -> Result<Vec<PreparedPart<'a>>> {
    if parts.iter().map(Part::text_bytes).sum::<usize>() > LIGHT_WRITE_BYTES {
        super::gate::refuse_slow_work_when_not_waiting("counting a large message")?;
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

/// Text a write may count and store without waiting (see `Store::without_waiting`):
/// counting 64 KiB takes well under a millisecond.
const LIGHT_WRITE_BYTES: usize = 64 * 1024;

fn insert_parts(
    tx: &Conn,
    session_id: &str,
    message_id: &str,
    seq: i64,
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
                ord as i64,
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
        queue_part(tx, part_pk)?;
    }
    bound_backlog(tx)
}

/// A tool call still waiting for its result, as `update_tool` reads it.
struct OpenCall {
    pk: i64,
    id: String,
    message_id: String,
    name: String,
    input: String,
    status: ToolStatus,
    output: Option<String>,
    error: Option<String>,
    tokens: i64,
}

/// The newest call with `call_id` in the session that still waits for its result.
/// A call that has finished is reported as such; one never stored as not found.
fn open_call(tx: &Conn, session_id: &str, call_id: &str) -> Result<OpenCall> {
    let open = tx
        .prepare_cached(
            "SELECT p.pk, p.id, p.message_id, p.tool_name, p.body, p.tool_status, o.output,
                    p.tool_error, p.token_count
             FROM parts p LEFT JOIN tool_outputs o ON o.part_pk = p.pk
             WHERE p.session_id = ?1 AND p.call_id = ?2 AND p.kind = 'tool'
               AND p.tool_status IN ('pending', 'running')
             ORDER BY p.msg_seq DESC, p.ord DESC LIMIT 1",
        )?
        .query_opt(args![session_id, call_id], |row| {
            let status: String = row.get(5)?;
            Ok(OpenCall {
                pk: row.get(0)?,
                id: row.get(1)?,
                message_id: row.get(2)?,
                name: row.get(3)?,
                input: row.get(4)?,
                status: if status == "running" {
                    ToolStatus::Running
                } else {
                    ToolStatus::Pending
                },
                output: row.get(6)?,
                error: row.get(7)?,
                tokens: row.get(8)?,
            })
        })?;
    if let Some(row) = open {
        return Ok(row);
    }
    // Only a mistaken call gets here: a scan of the session's parts tells a
    // finished call from an unknown one.
    let finished: Option<String> = tx
        .prepare_cached(
            "SELECT tool_status FROM parts WHERE session_id = ?1 AND call_id = ?2
             ORDER BY msg_seq DESC, ord DESC LIMIT 1",
        )?
        .query_opt(args![session_id, call_id], |row| row.get(0))?;
    Err(match finished {
        Some(status) => Error::invalid(
            "status",
            format!("tool call {call_id} is already {status}; its result cannot change"),
        ),
        None => Error::NotFound {
            kind: "tool call",
            id: call_id.to_string(),
        },
    })
}

fn insert_tool_output(tx: &Conn, part_pk: i64, output: &str) -> Result<()> {
    tx.prepare_cached("INSERT INTO tool_outputs (part_pk, output) VALUES (?1, ?2)")?
        .execute(args![part_pk, output])?;
    Ok(())
}

fn message_tokens(prepared: &[PreparedPart<'_>]) -> i64 {
    MESSAGE_OVERHEAD as i64 + prepared.iter().map(|p| p.tokens).sum::<i64>()
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
        let prepared = prepare_parts(&counter, parts)?;
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
            super::checkpoints::start_checkpoint(tx, &id, session_id, owner)
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
        let prepared = prepare_parts(&counter, parts)?;
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
        })
    }

    pub(super) fn message_head(&self, message_id: &str) -> Result<(String, i64, String, String)> {
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

    /// Moves a tool call along its lifecycle (pending → running → completed or error),
    /// setting its output or error once. The newest call with `call_id` in the session
    /// that still waits for its result is updated.
    pub fn update_tool(
        &mut self,
        session_id: &str,
        call_id: &str,
        status: ToolStatus,
        output: Option<&str>,
        error: Option<&str>,
    ) -> Result<()> {
        self.update_tool_turn(session_id, call_id, status, output, error, None)
    }

    /// [`Store::update_tool`], with `event` written in the same transaction.
    pub fn update_tool_turn(
        &mut self,
        session_id: &str,
        call_id: &str,
        status: ToolStatus,
        output: Option<&str>,
        error: Option<&str>,
        event: Option<&WriteEvent>,
    ) -> Result<()> {
        for (field, text) in [("output", output), ("error", error)] {
            if let Some(text) = text {
                check_content(field, text)?;
            }
        }
        if output.map_or(0, str::len) + error.map_or(0, str::len) > LIGHT_WRITE_BYTES {
            super::gate::refuse_slow_work_when_not_waiting("counting a large tool result")?;
        }
        let counter = self.counter(session_id)?;
        let (message_id, delta, version) =
            transact(&self.conn, &self.writer, Some(session_id), |tx| {
                let call = open_call(tx, session_id, call_id)?;
                if call.status == ToolStatus::Running && status == ToolStatus::Pending {
                    return Err(Error::invalid(
                        "status",
                        format!(
                            "tool call {call_id} is already running; it cannot go back to pending"
                        ),
                    ));
                }
                if call.output.is_some() && output.is_some()
                    || call.error.is_some() && error.is_some()
                {
                    return Err(Error::invalid(
                        "output",
                        format!("tool call {call_id} already has a result"),
                    ));
                }
                let tool = ToolCallPart {
                    name: call.name,
                    call_id: call_id.to_string(),
                    input: call.input,
                    output: output.map(str::to_string).or(call.output),
                    status,
                    error: error.map(str::to_string).or(call.error),
                };
                let part = Part::Tool(tool);
                let (tokens, output_tokens) = part.tokens(&counter);
                let file_ids = part.file_ids();
                let Part::Tool(tool) = &part else {
                    unreachable!()
                };
                tx.prepare_cached(
                    "UPDATE parts SET tool_status = ?2, tool_error = ?3, token_count = ?4,
                        output_tokens = ?5, file_ids = ?6 WHERE id = ?1",
                )?
                .execute(args![
                    call.id,
                    status.as_str(),
                    tool.error,
                    tokens as i64,
                    output_tokens as i64,
                    join_ids(&file_ids),
                ])?;
                if let Some(output) = output {
                    insert_tool_output(tx, call.pk, output)?;
                }
                let delta = tokens as i64 - call.tokens;
                let version = bump_item_tokens(tx, session_id, &call.message_id, delta)?;
                if output.is_some() || error.is_some() {
                    // The part's index row is built again, now with its result; at once when
                    // its message already left the view, where only recall can reach it.
                    queue_part(tx, call.pk)?;
                    if version.is_none() {
                        move_backlog(tx)?;
                    } else {
                        bound_backlog(tx)?;
                    }
                }
                if let Some(event) = event {
                    event.insert(tx, session_id, &[])?;
                }
                Ok((call.message_id.clone(), delta, version))
            })?;
        match version {
            Some(version) => self
                .views
                .item_changed(session_id, version, &message_id, delta),
            // Out of the view, the result is for recall to find from now on.
            None => self.views.forget_recall(session_id),
        }
        Ok(())
    }

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

    /// Every message of a session, in order, with parts.
    pub fn history(&mut self, session_id: &str) -> Result<Vec<MessageRecord>> {
        self.session(session_id)?;
        let mut records = self.message_heads(
            "SELECT id, session_id, seq, role, status, created_at, model, token_count, input_tokens,
                    output_tokens, cost, finish_reason FROM messages WHERE session_id = ?1 ORDER BY seq",
            args![session_id],
        )?;
        // Every part of the session in one walk, in message order: one query per
        // message would cost more than reading the parts.
        let mut stmt = self.conn.prepare_cached(
            "SELECT p.id, p.kind, p.body, p.tool_name, p.call_id, p.tool_status, o.output,
                    p.tool_error, p.compacted_at, p.file_ids, p.msg_seq
             FROM parts p LEFT JOIN tool_outputs o ON o.part_pk = p.pk
             WHERE p.session_id = ?1 ORDER BY p.msg_seq, p.ord",
        )?;
        let mut rows = stmt.query(args![session_id])?;
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
    pub(super) fn load_parts(&self, message_id: &str) -> Result<Vec<StoredPart>> {
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

/// Adds `delta` tokens to a message's view item, if it is in the view; returns the new view version.
/// A streamed message being closed: complete (it joins the view) or not.
pub(super) struct Closing<'a> {
    pub session_id: &'a str,
    pub message_id: &'a str,
    pub seq: i64,
    pub complete: bool,
    pub usage: &'a Usage,
}

/// Stores the parts of a streaming message and closes it, inside `tx`: its parts,
/// its status and usage, its place in the view when complete (returned as the
/// position and view version), and the end of its stream checkpoint.
pub(super) fn close_message(
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
    super::checkpoints::end_checkpoint(tx, message_id)?;
    if !closing.complete {
        return Ok(None);
    }
    let (_, position, version) = allocate_position(tx, session_id)?;
    insert_view_item(tx, session_id, position, message_id, tokens)?;
    Ok(Some((position, version)))
}

pub(super) fn bump_item_tokens(
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

/// Decodes one `parts` row (columns as selected by `load_parts`).
pub(super) fn row_to_part(row: &Row<'_>) -> Result<Result<StoredPart>> {
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
