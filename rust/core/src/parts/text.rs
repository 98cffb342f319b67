//! Plain text said by a participant.

use std::borrow::Cow;

use super::checks::check_content;
use super::kind::{redacted_text, Columns, PartKind, Rendered, SearchSql, StoredColumns};
use super::wire::{WireSink, WireSource};
use crate::error::Result;
use crate::fileids::extract_file_ids;
use crate::model::chat::empty_text;
use crate::redact::{Finding, Redactor};
use crate::tokens::TokenCounter;

/// The `text` kind: its data is the text itself, stored as the body.
pub struct TextKind;

impl PartKind for TextKind {
    type Data = String;
    const NAME: &'static str = "text";
    const SEARCH_SQL: SearchSql = SearchSql::BODY;

    fn validate(text: &String, field: &str) -> Result<()> {
        check_content(&format!("{field}.text"), text)
    }

    fn text_bytes(text: &String) -> usize {
        text.len()
    }

    fn file_ids(text: &String) -> Vec<String> {
        extract_file_ids(text)
    }

    fn tokens(text: &String, counter: &TokenCounter) -> (usize, usize) {
        // A blank text may render as a placeholder; counting it keeps the budget safe.
        if text.trim().is_empty() {
            return (counter.count(empty_text("user")), 0);
        }
        (counter.count(text), 0)
    }

    fn columns(text: &String) -> Columns<'_> {
        Columns {
            body: Cow::Borrowed(text),
            ..Columns::default()
        }
    }

    fn from_columns(columns: StoredColumns) -> Result<String> {
        Ok(columns.body)
    }

    fn write_wire<S: WireSink>(text: &String, sink: &mut S) -> std::result::Result<(), S::Error> {
        sink.text("text", Some(text))
    }

    fn read_wire<S: WireSource>(source: &S, field: &str) -> Result<String> {
        source.required_text("text", field)
    }

    fn render<'a>(text: &'a String, _pruned: Option<&'a str>) -> Rendered<'a> {
        Rendered::Block(Cow::Borrowed(text))
    }

    fn transcript<'a>(text: &'a String, _pruned: Option<&'a str>) -> Cow<'a, str> {
        Cow::Borrowed(text)
    }

    fn write_full(text: &String, _pruned: bool, out: &mut String) {
        out.push_str(text);
    }

    fn said(text: &String) -> Option<&str> {
        Some(text)
    }

    fn redacted(text: &String, redactor: &Redactor, found: &mut Vec<Finding>) -> Option<String> {
        redacted_text(text, redactor, found)
    }
}
