//! Message parts. Each kind is declared once, in a file of its own that
//! implements [`PartKind`]: how it is validated, stored, carried to Python,
//! counted, rendered, summarised and searched. The `declare_parts!` list at the
//! end makes the [`Part`] enum and every dispatch over kinds from those
//! declarations, and the schemas derive their kind constraint from [`KIND_NAMES`].
//!
//! Adding a kind: its file here and a line in the list, a schema migration that
//! re-derives the constraint, and its Python part type (`lossless.parts`).

mod arguments;
mod checks;
mod file_ref;
mod kind;
mod media;
mod media_cost;
mod media_sniff;
mod provider_compaction;
mod reasoning;
mod sql;
mod text;
mod tool;
mod wire;

#[cfg(test)]
mod tests;

use std::borrow::Cow;

pub use arguments::{is_json_object, MAX_ARGUMENT_DEPTH};
pub use checks::{check_content, check_identifier, Role, MAX_PART_BYTES};
pub use file_ref::{file_ref_block, FileRef, FileRefKind};
pub use kind::{
    redacted_option, redacted_text, Columns, MediaBytes, PartKind, Rendered, SearchSql,
    StoredColumns,
};
pub use media::{
    check_media_bytes, is_media_id, kind_name, merge_media_line, merge_reference_footer, Media,
    MediaInput, MediaKind, MEDIA_ID_HEX, MEDIA_LINE_PREFIX,
};
pub use media_cost::{attachment_tokens, image_tokens, ImageRule, UNKNOWN_IMAGE_SIZE};
pub use media_sniff::{sniff, Sniffed};
pub use provider_compaction::{
    check_payload as check_compaction_payload, CompactionSent, ProviderCompaction,
    ProviderCompactionKind,
};
pub use reasoning::{
    check_payload as check_reasoning_payload, replay_tokens, CallSignature, Reasoning,
    ReasoningKind, THOUGHT_SEPARATOR,
};
pub use sql::{kind_check, search_text_sql};
pub use text::TextKind;
pub use tool::{
    tombstone_marker, tool_result_text, ToolCallPart, ToolKind, ToolStatus, TOOL_OVERHEAD,
};
pub use wire::{WireSink, WireSource};

use crate::error::{Error, Result};
use crate::tokens::TokenCounter;

/// Makes the [`Part`] enum, [`KIND_NAMES`] and the dispatch over kinds from the
/// list of `Variant => Kind` pairs.
macro_rules! declare_parts {
    ($($variant:ident => $kind:ty),+ $(,)?) => {
        /// One part of a message, as given to the store.
        #[derive(Clone, Debug, PartialEq)]
        pub enum Part {
            $($variant(<$kind as PartKind>::Data)),+
        }

        /// Every kind's name, in the order declared.
        pub const KIND_NAMES: &[&str] = &[$(<$kind as PartKind>::NAME),+];

        /// Every kind's name with its search text as SQL.
        const KIND_SEARCH_SQL: &[(&str, SearchSql)] =
            &[$((<$kind as PartKind>::NAME, <$kind as PartKind>::SEARCH_SQL)),+];

        impl Part {
            /// The kind name stored in `parts.kind`.
            #[must_use]
            pub fn kind(&self) -> &'static str {
                match self { $(Part::$variant(_) => <$kind as PartKind>::NAME),+ }
            }

            /// Rejects a part the store must not keep; `field` is its path, e.g. `parts[2]`.
            pub fn validate(&self, field: &str) -> Result<()> {
                match self { $(Part::$variant(data) => <$kind>::validate(data, field)),+ }
            }

            /// The bytes of text the part holds.
            #[must_use]
            pub fn text_bytes(&self) -> usize {
                match self { $(Part::$variant(data) => <$kind>::text_bytes(data)),+ }
            }

            /// Every file id the part mentions, each once.
            #[must_use]
            pub fn file_ids(&self) -> Vec<String> {
                match self { $(Part::$variant(data) => <$kind>::file_ids(data)),+ }
            }

            /// Tokens of the part as rendered, and of the share that is a tool's result.
            #[must_use]
            pub fn tokens(&self, counter: &TokenCounter) -> (usize, usize) {
                match self { $(Part::$variant(data) => <$kind>::tokens(data, counter)),+ }
            }

            /// The part with the secrets of its readable text replaced by markers,
            /// or `None` when it held none; what was replaced is added to `found`.
            #[must_use]
            pub fn redacted(
                &self,
                redactor: &crate::redact::Redactor,
                found: &mut Vec<crate::redact::Finding>,
            ) -> Option<Part> {
                match self {
                    $(Part::$variant(data) => <$kind>::redacted(data, redactor, found).map(Part::$variant)),+
                }
            }

            /// Whether the part's tokens count toward its message's cost in the view.
            #[must_use]
            pub fn counted_in_view(&self) -> bool {
                match self { $(Part::$variant(_) => <$kind as PartKind>::COUNTED_IN_VIEW),+ }
            }

            /// The columns the part is stored in.
            #[must_use]
            pub fn columns(&self) -> Columns<'_> {
                match self { $(Part::$variant(data) => <$kind>::columns(data)),+ }
            }

            /// The part of kind `kind` back from its stored columns.
            pub fn from_columns(kind: &str, columns: StoredColumns) -> Result<Part> {
                $(if kind == <$kind as PartKind>::NAME {
                    return <$kind>::from_columns(columns).map(Part::$variant);
                })+
                Err(Error::Sqlite(format!("part {} has unknown kind {kind:?}", columns.id)))
            }

            /// Writes the part's wire fields, `kind` first.
            pub fn write_wire<S: WireSink>(&self, sink: &mut S) -> std::result::Result<(), S::Error> {
                sink.text("kind", Some(self.kind()))?;
                match self { $(Part::$variant(data) => <$kind>::write_wire(data, sink)),+ }
            }

            /// The part a wire dict describes; `field` names it in errors.
            pub fn read_wire<S: WireSource>(source: &S, field: &str) -> Result<Part> {
                let kind = source.required_text("kind", field)?;
                $(if kind == <$kind as PartKind>::NAME {
                    return <$kind>::read_wire(source, field).map(Part::$variant);
                })+
                Err(Error::invalid(
                    format!("{field}.kind"),
                    format!("unknown part kind {kind:?}; expected {}", known_kinds()),
                ))
            }

            /// What the part contributes to its chat message.
            #[must_use]
            pub fn render<'a>(&'a self, pruned: Option<&'a str>) -> Rendered<'a> {
                match self { $(Part::$variant(data) => <$kind>::render(data, pruned)),+ }
            }

            /// The part in the transcript a summariser reads.
            #[must_use]
            pub fn transcript<'a>(&'a self, pruned: Option<&'a str>) -> Cow<'a, str> {
                match self { $(Part::$variant(data) => <$kind>::transcript(data, pruned)),+ }
            }

            /// The part written out whole, as `read` shows it.
            pub fn write_full(&self, pruned: bool, out: &mut String) {
                match self { $(Part::$variant(data) => <$kind>::write_full(data, pruned, out)),+ }
            }

            /// Text a participant said in words.
            #[must_use]
            pub fn said(&self) -> Option<&str> {
                match self { $(Part::$variant(data) => <$kind>::said(data)),+ }
            }

            /// The marker the part is shown as once pruned, when its kind can be pruned.
            #[must_use]
            pub fn pruned_marker(&self, part_id: &str, file_ids: &[String]) -> Option<String> {
                match self { $(Part::$variant(data) => <$kind>::pruned_marker(data, part_id, file_ids)),+ }
            }
        }
    };
}

declare_parts! {
    Text => TextKind,
    Tool => ToolKind,
    FileRef => FileRefKind,
    Reasoning => ReasoningKind,
    Media => MediaKind,
    ProviderCompaction => ProviderCompactionKind,
}

/// The kind names as an error message lists them: `text, tool, ..., media or
/// provider_compaction`.
fn known_kinds() -> String {
    match KIND_NAMES.split_last() {
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}
