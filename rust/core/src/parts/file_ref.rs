//! A file kept outside the context, referenced by content id. Its fields are
//! stored as a JSON object in the body.

use std::borrow::Cow;
use std::fmt::Write as _;

use super::checks::{check_content, check_identifier};
use super::kind::{Columns, PartKind, Rendered, SearchSql, StoredColumns};
use super::wire::{WireSink, WireSource};
use crate::error::{Error, Result};
use crate::fileids::extract_file_ids;
use crate::tokens::TokenCounter;

/// A file kept outside the context, referenced by content id.
#[derive(Clone, Debug, PartialEq)]
pub struct FileRef {
    pub file_id: String,
    pub path: String,
    pub file_type: String,
    pub token_count: i64,
    pub summary: String,
}

/// The `file_ref` kind.
pub struct FileRefKind;

impl PartKind for FileRefKind {
    type Data = FileRef;
    const NAME: &'static str = "file_ref";
    const SEARCH_SQL: SearchSql = SearchSql {
        sqlite: Some(
            "concat_ws(' ', p.body ->> '$.file_id', p.body ->> '$.path', p.body ->> '$.summary')",
        ),
        postgres: Some(
            "concat_ws(' ', CAST(p.body AS jsonb) ->> 'file_id',
                 CAST(p.body AS jsonb) ->> 'path', CAST(p.body AS jsonb) ->> 'summary')",
        ),
    };

    fn validate(file: &FileRef, field: &str) -> Result<()> {
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

    fn text_bytes(file: &FileRef) -> usize {
        file.path.len() + file.summary.len()
    }

    fn file_ids(file: &FileRef) -> Vec<String> {
        let mut ids = vec![file.file_id.clone()];
        for id in extract_file_ids(&file.summary) {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        ids
    }

    fn tokens(file: &FileRef, counter: &TokenCounter) -> (usize, usize) {
        (counter.count(&file_ref_block(file)), 0)
    }

    fn columns(file: &FileRef) -> Columns<'_> {
        let body = serde_json::json!({
            "file_id": file.file_id,
            "path": file.path,
            "file_type": file.file_type,
            "token_count": file.token_count,
            "summary": file.summary,
        });
        Columns {
            body: Cow::Owned(body.to_string()),
            ..Columns::default()
        }
    }

    fn from_columns(columns: StoredColumns) -> Result<FileRef> {
        let value: serde_json::Value = serde_json::from_str(&columns.body)
            .map_err(|err| Error::Sqlite(format!("corrupt file reference: {err}")))?;
        let text = |key: &str| value[key].as_str().unwrap_or_default().to_string();
        Ok(FileRef {
            file_id: text("file_id"),
            path: text("path"),
            file_type: text("file_type"),
            token_count: value["token_count"].as_i64().unwrap_or(0),
            summary: text("summary"),
        })
    }

    fn write_wire<S: WireSink>(file: &FileRef, sink: &mut S) -> std::result::Result<(), S::Error> {
        sink.text("file_id", Some(&file.file_id))?;
        sink.text("path", Some(&file.path))?;
        sink.text("file_type", Some(&file.file_type))?;
        sink.int("token_count", file.token_count)?;
        sink.text("summary", Some(&file.summary))
    }

    fn read_wire<S: WireSource>(source: &S, field: &str) -> Result<FileRef> {
        Ok(FileRef {
            file_id: source.required_text("file_id", field)?,
            path: source.required_text("path", field)?,
            file_type: source
                .text("file_type", field)?
                .unwrap_or_else(|| "text".into()),
            token_count: source.int("token_count", field)?.unwrap_or(0),
            summary: source.text("summary", field)?.unwrap_or_default(),
        })
    }

    fn render<'a>(file: &'a FileRef, _pruned: Option<&'a str>) -> Rendered<'a> {
        Rendered::Block(Cow::Owned(file_ref_block(file)))
    }

    fn transcript<'a>(file: &'a FileRef, _pruned: Option<&'a str>) -> Cow<'a, str> {
        Cow::Owned(file_ref_block(file))
    }

    fn write_full(file: &FileRef, _pruned: bool, out: &mut String) {
        let _ = write!(
            out,
            "file reference {} {} ({}, {} tokens)\nsummary:\n{}",
            file.file_id, file.path, file.file_type, file.token_count, file.summary
        );
    }
}

/// The short block a file reference renders as.
#[must_use]
pub fn file_ref_block(file: &FileRef) -> String {
    format!(
        "[file {} {} ({}, {} tokens, kept outside the context)]\n{}\n[/file]",
        file.file_id, file.path, file.file_type, file.token_count, file.summary
    )
}
