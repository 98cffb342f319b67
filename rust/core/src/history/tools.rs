//! The tool lifecycle: a call's status, output and error change until it is
//! final, in one transaction that also moves the view's token count.

use crate::db::backend::{args, Conn};

use crate::db::gate::transact;
use crate::db::id_list::join_ids;
use crate::error::{Error, Result};
use crate::history::events::WriteEvent;
use crate::history::messages::{
    append_parts, bump_item_tokens, insert_tool_output, record_redaction, LIGHT_WRITE_BYTES,
};
use crate::history::redaction::{redact_parts, redact_text};
use crate::parts::{check_content, Part, ToolCallPart, ToolStatus};
use crate::recall::index::{bound_backlog, move_backlog, queue_part};
use crate::store::Store;

/// `media` as parts of the result of `call_id`: each must be an image or a
/// document, and is made to name the call.
fn result_media(call_id: &str, media: &[Part]) -> Result<Vec<Part>> {
    media
        .iter()
        .enumerate()
        .map(|(index, part)| match part {
            Part::Media(item) => {
                let mut item = item.clone();
                item.call_id = Some(call_id.to_string());
                Ok(Part::Media(item))
            }
            other => Err(Error::invalid(
                format!("media[{index}]"),
                format!(
                    "expected an image or a document, got a {} part",
                    other.kind()
                ),
            )),
        })
        .collect()
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

impl Store {
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
        self.update_tool_with_media(session_id, call_id, status, output, error, &[], event)
    }

    /// [`Store::update_tool_turn`], with `media` (images and documents of the
    /// result, each a [`Part::Media`]) added to the call's message as parts of its
    /// result, in the same transaction: a screenshot comes back with its tool's
    /// result, and the message's earlier parts stay as they were.
    #[allow(clippy::too_many_arguments)]
    pub fn update_tool_with_media(
        &mut self,
        session_id: &str,
        call_id: &str,
        status: ToolStatus,
        output: Option<&str>,
        error: Option<&str>,
        media: &[Part],
        event: Option<&WriteEvent>,
    ) -> Result<()> {
        let media = result_media(call_id, media)?;
        for (field, text) in [("output", output), ("error", error)] {
            if let Some(text) = text {
                check_content(field, text)?;
            }
        }
        if output.map_or(0, str::len) + error.map_or(0, str::len) > LIGHT_WRITE_BYTES {
            crate::db::gate::refuse_slow_work_when_not_waiting("counting a large tool result")?;
        }
        let counter = self.counter(session_id)?;
        let redactor = self.redactor_for(session_id)?;
        let mut redacted = Vec::new();
        let clean_output = output.map(|text| redact_text(text, redactor.as_deref(), &mut redacted));
        let clean_error = error.map(|text| redact_text(text, redactor.as_deref(), &mut redacted));
        let (output, error) = (clean_output.as_deref(), clean_error.as_deref());
        let media = redact_parts(&media, redactor.as_deref(), &mut redacted);
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
                let mut delta = tokens as i64 - call.tokens;
                if !media.is_empty() {
                    delta += append_parts(tx, session_id, &call.message_id, &counter, &media)?;
                }
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
                record_redaction(tx, session_id, &call.message_id, &redacted)?;
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
}
