//! The limits every kind's fields are held to, and who said a message.

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
