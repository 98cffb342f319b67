//! A tool call and, once it ran, its result. The call goes out on its assistant
//! message and the result in a `tool` message after it; a pruned result is shown
//! as a one-line marker that names the part.

use std::borrow::Cow;
use std::fmt::Write as _;

use super::arguments::is_json_object;
use super::checks::{check_content, check_identifier};
use super::kind::{
    redacted_option, redacted_text, Columns, PartKind, Rendered, SearchSql, StoredColumns,
};
use super::wire::{WireSink, WireSource};
use crate::error::{Error, Result};
use crate::fileids::extract_file_ids;
use crate::model::chat::{non_empty, truncate_chars, ToolCall};
use crate::redact::{Finding, Redactor};
use crate::tokens::TokenCounter;

/// Framing of one tool call: the `tool_calls` entry plus the `tool` message.
pub const TOOL_OVERHEAD: usize = 12;

/// Characters of unusable arguments quoted back in the call's result.
const QUOTED_ARGUMENT_CHARS: usize = 1_000;

/// Lifecycle of a tool call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolStatus {
    Pending,
    Running,
    Completed,
    Error,
}

impl ToolStatus {
    pub fn parse(field: &str, value: &str) -> Result<Self> {
        match value {
            "pending" => Ok(ToolStatus::Pending),
            "running" => Ok(ToolStatus::Running),
            "completed" => Ok(ToolStatus::Completed),
            "error" => Ok(ToolStatus::Error),
            other => Err(Error::invalid(
                field,
                format!("expected pending, running, completed or error, got {other:?}"),
            )),
        }
    }

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ToolStatus::Pending => "pending",
            ToolStatus::Running => "running",
            ToolStatus::Completed => "completed",
            ToolStatus::Error => "error",
        }
    }

    /// Completed and errored calls never change again.
    #[must_use]
    pub fn is_final(self) -> bool {
        matches!(self, ToolStatus::Completed | ToolStatus::Error)
    }
}

/// A tool call and, once it ran, its result.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCallPart {
    pub name: String,
    pub call_id: String,
    /// Arguments as JSON text.
    pub input: String,
    pub output: Option<String>,
    pub status: ToolStatus,
    pub error: Option<String>,
}

/// The `tool` kind: the input is the body, the name, id, status and error have
/// columns of their own, and the output is kept in `tool_outputs`.
pub struct ToolKind;

impl PartKind for ToolKind {
    type Data = ToolCallPart;
    const NAME: &'static str = "tool";
    const SEARCH_SQL: SearchSql = SearchSql {
        sqlite: Some(
            "p.tool_name || ' ' || p.body || COALESCE(char(10) || o.output, '')
                 || COALESCE(char(10) || p.tool_error, '')",
        ),
        postgres: Some(
            "p.tool_name || ' ' || p.body || COALESCE(chr(10) || o.output, '')
                 || COALESCE(chr(10) || p.tool_error, '')",
        ),
    };

    fn validate(tool: &ToolCallPart, field: &str) -> Result<()> {
        check_identifier(&format!("{field}.name"), &tool.name)?;
        check_identifier(&format!("{field}.call_id"), &tool.call_id)?;
        check_content(&format!("{field}.input"), &tool.input)?;
        if let Some(output) = &tool.output {
            check_content(&format!("{field}.output"), output)?;
        }
        if let Some(error) = &tool.error {
            check_content(&format!("{field}.error"), error)?;
        }
        Ok(())
    }

    fn text_bytes(tool: &ToolCallPart) -> usize {
        tool.input.len()
            + tool.output.as_ref().map_or(0, String::len)
            + tool.error.as_ref().map_or(0, String::len)
    }

    fn file_ids(tool: &ToolCallPart) -> Vec<String> {
        let mut ids = extract_file_ids(&tool.input);
        for text in [&tool.output, &tool.error].into_iter().flatten() {
            for id in extract_file_ids(text) {
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
        }
        ids
    }

    fn tokens(tool: &ToolCallPart, counter: &TokenCounter) -> (usize, usize) {
        let object = is_json_object(&tool.input);
        let result = counter.count(&result_text(tool, object));
        let call =
            counter.count(&tool.name) + counter.count(call_arguments(tool, object)) + TOOL_OVERHEAD;
        (call + result, result)
    }

    fn columns(tool: &ToolCallPart) -> Columns<'_> {
        Columns {
            body: Cow::Borrowed(&tool.input),
            tool_name: Some(&tool.name),
            call_id: Some(&tool.call_id),
            tool_status: Some(tool.status.as_str()),
            tool_error: tool.error.as_deref(),
            output: tool.output.clone(),
            media: None,
        }
    }

    fn from_columns(columns: StoredColumns) -> Result<ToolCallPart> {
        let status = ToolStatus::parse(
            "tool_status",
            columns.tool_status.as_deref().unwrap_or_default(),
        )?;
        Ok(ToolCallPart {
            name: columns.tool_name.unwrap_or_default(),
            call_id: columns.call_id.unwrap_or_default(),
            input: columns.body,
            output: columns.output,
            status,
            error: columns.tool_error,
        })
    }

    fn write_wire<S: WireSink>(
        tool: &ToolCallPart,
        sink: &mut S,
    ) -> std::result::Result<(), S::Error> {
        sink.text("name", Some(&tool.name))?;
        sink.text("call_id", Some(&tool.call_id))?;
        sink.text("input", Some(&tool.input))?;
        sink.text("output", tool.output.as_deref())?;
        sink.text("status", Some(tool.status.as_str()))?;
        sink.text("error", tool.error.as_deref())
    }

    fn read_wire<S: WireSource>(source: &S, field: &str) -> Result<ToolCallPart> {
        let status = source
            .text("status", field)?
            .unwrap_or_else(|| "completed".into());
        Ok(ToolCallPart {
            name: source.required_text("name", field)?,
            call_id: source.required_text("call_id", field)?,
            input: source.text("input", field)?.unwrap_or_default(),
            output: source.text("output", field)?,
            status: ToolStatus::parse(&format!("{field}.status"), &status)?,
            error: source.text("error", field)?,
        })
    }

    fn render<'a>(tool: &'a ToolCallPart, pruned: Option<&'a str>) -> Rendered<'a> {
        let object = is_json_object(&tool.input);
        let call = ToolCall {
            id: tool.call_id.clone(),
            name: tool.name.clone(),
            arguments: call_arguments(tool, object).to_string(),
        };
        let result = pruned.map_or_else(|| result_text(tool, object), str::to_string);
        Rendered::Call { call, result }
    }

    fn transcript<'a>(tool: &'a ToolCallPart, pruned: Option<&'a str>) -> Cow<'a, str> {
        let result = pruned.map_or_else(|| tool_result_text(tool), str::to_string);
        Cow::Owned(format!(
            "tool {}({}) [{}] -> {}",
            tool.name,
            tool.input,
            tool.status.as_str(),
            result
        ))
    }

    fn write_full(tool: &ToolCallPart, pruned: bool, out: &mut String) {
        let _ = write!(
            out,
            "tool call {} (id {}, {})",
            tool.name,
            tool.call_id,
            tool.status.as_str()
        );
        if pruned {
            out.push_str(", output pruned from the context, shown here as stored");
        }
        out.push_str("\ninput:\n");
        out.push_str(&tool.input);
        if let Some(output) = &tool.output {
            out.push_str("\noutput:\n");
            out.push_str(output);
        }
        if let Some(error) = &tool.error {
            out.push_str("\nerror:\n");
            out.push_str(error);
        }
    }

    fn pruned_marker(tool: &ToolCallPart, part_id: &str, file_ids: &[String]) -> Option<String> {
        Some(tombstone_marker(&tool.name, part_id, file_ids))
    }

    fn redacted(
        tool: &ToolCallPart,
        redactor: &Redactor,
        found: &mut Vec<Finding>,
    ) -> Option<ToolCallPart> {
        let input = redacted_arguments(&tool.input, redactor, found);
        let output = redacted_option(tool.output.as_deref(), redactor, found);
        let error = redacted_option(tool.error.as_deref(), redactor, found);
        if input.is_none() && output.is_none() && error.is_none() {
            return None;
        }
        Some(ToolCallPart {
            name: tool.name.clone(),
            call_id: tool.call_id.clone(),
            input: input.unwrap_or_else(|| tool.input.clone()),
            output: output.unwrap_or_else(|| tool.output.clone()),
            status: tool.status,
            error: error.unwrap_or_else(|| tool.error.clone()),
        })
    }
}

/// A call's arguments with their secrets replaced. A marker holds no quote or
/// backslash, so replacing a secret inside a JSON string keeps the text JSON;
/// should a match have reached across a string's end, each string value is
/// redacted alone instead and the object written again.
fn redacted_arguments(
    input: &str,
    redactor: &Redactor,
    found: &mut Vec<Finding>,
) -> Option<String> {
    let mut attempt = Vec::new();
    let text = redacted_text(input, redactor, &mut attempt)?;
    let was_json = serde_json::from_str::<serde::de::IgnoredAny>(input).is_ok();
    if !was_json || serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok() {
        crate::redact::merge(found, &attempt);
        return Some(text);
    }
    let mut value: serde_json::Value = serde_json::from_str(input).ok()?;
    redact_strings(&mut value, redactor, found);
    Some(value.to_string())
}

fn redact_strings(value: &mut serde_json::Value, redactor: &Redactor, found: &mut Vec<Finding>) {
    match value {
        serde_json::Value::String(text) => {
            if let Some(clean) = redacted_text(text, redactor, found) {
                *text = clean;
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                redact_strings(item, redactor, found);
            }
        }
        serde_json::Value::Object(members) => {
            for item in members.values_mut() {
                redact_strings(item, redactor, found);
            }
        }
        _ => {}
    }
}

/// The arguments a call is rendered with: as stored when they are a JSON object
/// (`object`, from [`is_json_object`]), else an empty object (the stored text is
/// kept whole, and the result says so unless it was blank: no arguments at all).
fn call_arguments(tool: &ToolCallPart, object: bool) -> &str {
    if object {
        &tool.input
    } else {
        "{}"
    }
}

/// What the model reads as the result of a tool call that has no tombstone. An
/// error is shown whatever the status: it is part of what the tool said (and may
/// name file ids that must stay in the context). Arguments that are not a JSON
/// object (a call cut off by the output limit, say) are quoted here, since the call
/// itself goes out with empty arguments.
#[must_use]
pub fn tool_result_text(tool: &ToolCallPart) -> String {
    result_text(tool, is_json_object(&tool.input))
}

/// [`tool_result_text`], with whether the arguments are a JSON object already known.
fn result_text(tool: &ToolCallPart, object: bool) -> String {
    let result = match (&tool.output, &tool.error) {
        (Some(output), Some(error)) => format!("{output}\n[error] {error}"),
        (Some(output), None) => output.clone(),
        (None, Some(error)) => format!("[error] {error}"),
        (None, None) if tool.status == ToolStatus::Error => "[error] tool failed".to_string(),
        (None, None) => format!("[tool call {}: no result yet]", tool.status.as_str()),
    };
    let result = non_empty(result, "[empty output]");
    if object || tool.input.trim().is_empty() {
        return result;
    }
    let mut quoted = tool.input.clone();
    truncate_chars(&mut quoted, QUOTED_ARGUMENT_CHARS);
    format!("[the arguments of this call were not a JSON object (cut off?); as recorded: {quoted}]\n{result}")
}

/// The one-line marker that replaces a pruned tool output. It names the part so
/// the output can be recovered, and keeps every file id the output mentioned.
#[must_use]
pub fn tombstone_marker(tool_name: &str, part_id: &str, file_ids: &[String]) -> String {
    let mut marker = format!("[output of tool '{tool_name}' pruned from context; recover it with expand or grep, part {part_id}");
    if !file_ids.is_empty() {
        marker.push_str("; file ids: ");
        marker.push_str(&file_ids.join(", "));
    }
    marker.push(']');
    marker
}
