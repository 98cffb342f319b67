//! Message parts as the core stores them, and their validation.

use crate::error::{Error, Result};

/// Largest text a single part may hold. Larger content belongs in a file
/// reference: tokenising it on every append would stall the writer.
pub const MAX_PART_BYTES: usize = 8 * 1024 * 1024;

/// Who said a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
}

impl Role {
    pub fn parse(value: &str) -> Result<Self> {
        match value {
            "system" => Ok(Role::System),
            "user" => Ok(Role::User),
            "assistant" => Ok(Role::Assistant),
            other => Err(Error::invalid(
                "role",
                format!("expected 'system', 'user' or 'assistant', got {other:?}"),
            )),
        }
    }

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

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

/// A file kept outside the context, referenced by content id.
#[derive(Clone, Debug, PartialEq)]
pub struct FileRef {
    pub file_id: String,
    pub path: String,
    pub file_type: String,
    pub token_count: i64,
    pub summary: String,
}

/// One part of a message, as given to the store.
#[derive(Clone, Debug, PartialEq)]
pub enum Part {
    Text(String),
    Tool(ToolCallPart),
    FileRef(FileRef),
}

impl Part {
    /// The kind name stored in `parts.kind`.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Part::Text(_) => "text",
            Part::Tool(_) => "tool",
            Part::FileRef(_) => "file_ref",
        }
    }
}

/// Rejects text a part may not hold: over [`MAX_PART_BYTES`].
pub fn check_content(field: &str, text: &str) -> Result<()> {
    if text.len() > MAX_PART_BYTES {
        return Err(Error::invalid(
            field,
            format!(
                "{} bytes is over the {MAX_PART_BYTES}-byte limit of one part; store large content as a file reference",
                text.len()
            ),
        ));
    }
    Ok(())
}

/// Rejects identifiers that are empty, too long or carry control characters.
pub fn check_identifier(field: &str, value: &str) -> Result<()> {
    if value.is_empty() {
        return Err(Error::invalid(field, "must not be empty"));
    }
    if value.len() > 512 {
        return Err(Error::invalid(field, "longer than 512 bytes"));
    }
    if value.chars().any(char::is_control) {
        return Err(Error::invalid(
            field,
            "contains a control character (NUL, newline, ...)",
        ));
    }
    Ok(())
}

/// Validates every field of a part; `field` is its path, e.g. `parts[2]`.
pub fn validate(field: &str, part: &Part) -> Result<()> {
    match part {
        Part::Text(text) => check_content(&format!("{field}.text"), text),
        Part::Tool(tool) => {
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
        Part::FileRef(file) => {
            check_identifier(&format!("{field}.file_id"), &file.file_id)?;
            check_identifier(&format!("{field}.path"), &file.path)?;
            check_identifier(&format!("{field}.file_type"), &file.file_type)?;
            check_content(&format!("{field}.summary"), &file.summary)?;
            if file.token_count < 0 {
                return Err(Error::invalid(
                    format!("{field}.token_count"),
                    "must not be negative",
                ));
            }
            Ok(())
        }
    }
}
