//! What a part kind declares about itself. Each kind (`text.rs`, `tool.rs`,
//! `file_ref.rs`, `reasoning.rs`) implements [`PartKind`] once; the [`Part`](super::Part) enum, the
//! row codec, the wire codec, rendering, counting, the search index and the
//! schemas' constraints are all derived from these declarations.

use std::borrow::Cow;

use super::media::Media;
use super::provider_compaction::ProviderCompaction;
use super::reasoning::Reasoning;
use super::wire::{WireSink, WireSource};
use crate::error::Result;
use crate::model::chat::ToolCall;
use crate::redact::{Finding, Redactor};
use crate::tokens::TokenCounter;

/// One kind of message part: how it is validated, stored, carried to and from
/// Python, counted, rendered, summarised and searched.
pub trait PartKind {
    /// What a part of this kind holds.
    type Data;
    /// The name stored in `parts.kind` and carried as a wire dict's `kind`.
    const NAME: &'static str;
    /// What the full-text index reads of a part of this kind, as an SQL expression
    /// over its `parts` row `p` and `tool_outputs` row `o`, in SQLite's dialect
    /// and in PostgreSQL's.
    const SEARCH_SQL: SearchSql;
    /// Whether the part's tokens count toward its message's cost in the view: what
    /// renders into the message in every request does. A part that goes out only
    /// in some requests is counted by the assembly of each request that sends it.
    const COUNTED_IN_VIEW: bool = true;

    /// Rejects a part the store must not keep; `field` is its path, e.g. `parts[2]`.
    fn validate(data: &Self::Data, field: &str) -> Result<()>;
    /// The bytes of text the part holds (a write over a limit may not run without waiting).
    fn text_bytes(data: &Self::Data) -> usize;
    /// Every file id the part mentions, each once, in order of appearance.
    fn file_ids(data: &Self::Data) -> Vec<String>;
    /// Tokens of the part as rendered, and of the share that is a tool's result.
    fn tokens(data: &Self::Data, counter: &TokenCounter) -> (usize, usize);

    /// The `parts` columns (and tool output) a part is stored in.
    fn columns(data: &Self::Data) -> Columns<'_>;
    /// The part back from its stored columns.
    fn from_columns(columns: StoredColumns) -> Result<Self::Data>;
    /// The wire dict's fields besides `kind`.
    fn write_wire<S: WireSink>(
        data: &Self::Data,
        sink: &mut S,
    ) -> std::result::Result<(), S::Error>;
    /// The part from a wire dict's fields; `field` names it in errors.
    fn read_wire<S: WireSource>(source: &S, field: &str) -> Result<Self::Data>;

    /// What the part contributes to its chat message; `pruned` is the marker that
    /// replaced a pruned output, if any.
    fn render<'a>(data: &'a Self::Data, pruned: Option<&'a str>) -> Rendered<'a>;
    /// The part in the transcript a summariser reads.
    fn transcript<'a>(data: &'a Self::Data, pruned: Option<&'a str>) -> Cow<'a, str>;
    /// The part written out whole, as `read` shows it; `pruned` tells whether its
    /// output is pruned from the context.
    fn write_full(data: &Self::Data, pruned: bool, out: &mut String);
    /// Text a participant said in words, the question recall looks for.
    fn said(_data: &Self::Data) -> Option<&str> {
        None
    }
    /// The marker a pruned part is shown as, when this kind can be pruned.
    fn pruned_marker(_data: &Self::Data, _part_id: &str, _file_ids: &[String]) -> Option<String> {
        None
    }
    /// The part with the secrets in its readable text replaced by markers, or
    /// `None` when it held none (nothing is copied then); what was replaced is
    /// added to `found`. A kind without free text keeps this default.
    fn redacted(
        _data: &Self::Data,
        _redactor: &Redactor,
        _found: &mut Vec<Finding>,
    ) -> Option<Self::Data> {
        None
    }
}

/// `text` with its secrets replaced, or `None` when it held none; the findings
/// are added to `found`.
pub fn redacted_text(text: &str, redactor: &Redactor, found: &mut Vec<Finding>) -> Option<String> {
    let redacted = redactor.redact(text);
    match redacted.text {
        Cow::Borrowed(_) => None,
        Cow::Owned(text) => {
            crate::redact::merge(found, &redacted.found);
            Some(text)
        }
    }
}

/// [`redacted_text`] over an optional text: `Some(new)` when it changed.
pub fn redacted_option(
    text: Option<&str>,
    redactor: &Redactor,
    found: &mut Vec<Finding>,
) -> Option<Option<String>> {
    text.and_then(|text| redacted_text(text, redactor, found))
        .map(Some)
}

/// A kind's search text as SQL, per dialect; `None` reads the stored body.
#[derive(Clone, Copy, Debug)]
pub struct SearchSql {
    pub sqlite: Option<&'static str>,
    pub postgres: Option<&'static str>,
}

impl SearchSql {
    /// The stored body, in either dialect.
    pub const BODY: SearchSql = SearchSql {
        sqlite: None,
        postgres: None,
    };
}

/// What a part contributes to a chat message.
#[derive(Clone, Debug, PartialEq)]
pub enum Rendered<'a> {
    /// A block of the message's text.
    Block(Cow<'a, str>),
    /// A call the message makes, with the result sent back in a `tool` message.
    Call { call: ToolCall, result: String },
    /// Reasoning, which goes beside the message only where its provider needs it
    /// back (see `render::render_message_with`), never into its text.
    Reasoning(&'a Reasoning),
    /// An image or a document: a one-line reference in the text of its message
    /// (or of its tool result), and an attachment where a request sends it inline.
    Media(&'a Media),
    /// A provider's compaction block: itself to that provider, its readable
    /// summary to another (see `ProviderCompaction::sent_to`).
    ProviderCompaction(&'a ProviderCompaction),
}

/// The `parts` columns one part fills; kinds leave unused ones `None`.
#[derive(Clone, Debug, Default)]
pub struct Columns<'a> {
    pub body: Cow<'a, str>,
    pub tool_name: Option<&'a str>,
    pub call_id: Option<&'a str>,
    pub tool_status: Option<&'static str>,
    pub tool_error: Option<&'a str>,
    /// Kept in `tool_outputs`, apart from the row.
    pub output: Option<String>,
    /// Bytes kept in `media`, once per reference id.
    pub media: Option<MediaBytes<'a>>,
}

/// The bytes of an image or a document, as the `media` table keeps them.
#[derive(Clone, Debug)]
pub struct MediaBytes<'a> {
    pub media_id: &'a str,
    pub media_type: &'a str,
    pub data: &'a [u8],
}

/// The same columns read back from a row.
#[derive(Clone, Debug, Default)]
pub struct StoredColumns {
    /// The part's id, for errors about a corrupt row.
    pub id: String,
    pub body: String,
    pub tool_name: Option<String>,
    pub call_id: Option<String>,
    pub tool_status: Option<String>,
    pub tool_error: Option<String>,
    pub output: Option<String>,
}
