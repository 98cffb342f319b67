//! Reading one stored message back whole, a page at a time.

use crate::error::{Error, Result};
use crate::reading::{full_text, page};
use crate::store::Store;

/// A page of one stored message written out whole (see [`crate::reading`]).
#[derive(Clone, Debug)]
pub struct MessageRead {
    pub message_id: String,
    pub session_id: String,
    pub seq: i64,
    pub role: String,
    pub status: String,
    pub parts: usize,
    pub text: String,
    pub tokens: i64,
    /// Characters of the whole text before this page.
    pub start: usize,
    /// Characters of the whole text up to the end of this page.
    pub end: usize,
    pub total_chars: usize,
}

impl Store {
    /// Message `message_id` written out whole, from character `start`, as much as
    /// `max_tokens` holds (counted with its session's model).
    pub fn read_message(
        &mut self,
        message_id: &str,
        start: usize,
        max_tokens: i64,
    ) -> Result<MessageRead> {
        if max_tokens < 1 {
            return Err(Error::invalid("max_tokens", "must be at least 1"));
        }
        let record = self.get_message(message_id)?;
        let counter = self.counter(&record.session_id)?;
        let text = full_text(record.seq, &record.role, &record.status, &record.parts);
        let total_chars = text.chars().count();
        if start > total_chars {
            return Err(Error::invalid(
                "cursor",
                format!(
                    "{message_id} is {total_chars} characters long; the cursor is past its end"
                ),
            ));
        }
        let page = page(&text, start, max_tokens, &counter);
        Ok(MessageRead {
            message_id: record.id,
            session_id: record.session_id,
            seq: record.seq,
            role: record.role,
            status: record.status,
            parts: record.parts.len(),
            text: page.text,
            tokens: page.tokens,
            start: page.start,
            end: page.end,
            total_chars: page.total_chars,
        })
    }
}
