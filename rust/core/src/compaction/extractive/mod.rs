//! Deterministic extractive summariser, the default compaction summariser.
//!
//! It does not call a model: it picks sentences and facts out of the
//! transcript with cheap lexical rules and lays them out in fixed markdown
//! sections. The same input always yields the same output, and the output
//! always fits the token budget.
//!
//! Work is bounded per message: only the first 2 KB of each text part, the
//! first 4 KB of each tool input and the first line of each error are
//! looked at, and tool outputs are never scanned (except for the first line
//! of a failed call without an error string).

mod collect;
mod fit;
mod merge;
mod scan;
#[cfg(test)]
mod tests;

pub(crate) use collect::prefix;
pub use collect::Collection;
pub use merge::merge_summaries;

/// One message of the transcript being summarised.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceMessage<'a> {
    /// `"user"`, `"assistant"` or `"system"`.
    pub role: &'a str,
    /// Position of the message in the conversation.
    pub seq: i64,
    /// Text parts, in order.
    pub texts: Vec<&'a str>,
    /// Tool calls made in this message.
    pub tools: Vec<SourceTool<'a>>,
    /// Files attached to or referenced by this message.
    pub file_refs: Vec<SourceFileRef<'a>>,
}

/// A tool call as recorded in the transcript.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceTool<'a> {
    /// Tool name, e.g. `"read_file"`.
    pub name: &'a str,
    /// Tool input as JSON text.
    pub input: &'a str,
    /// `"pending"`, `"running"`, `"completed"` or `"error"`.
    pub status: &'a str,
    /// Tool output, if any.
    pub output: Option<&'a str>,
    /// Error message of a failed call, if any.
    pub error: Option<&'a str>,
}

/// A file known to the conversation by ID.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceFileRef<'a> {
    /// The file ID, e.g. `"file_0123abcd"`.
    pub file_id: &'a str,
    /// The file's path or name; may be empty.
    pub path: &'a str,
}

/// Bytes of each text part that are scanned for sentences.
pub(crate) const TEXT_SCAN_BYTES: usize = 2048;
/// Bytes of each tool input that are scanned for paths.
pub(crate) const INPUT_SCAN_BYTES: usize = 4096;
/// Bytes of an error message searched for its first line.
pub(crate) const ERROR_SCAN_BYTES: usize = 1024;
/// Maximum characters of one list item.
const ITEM_CHARS: usize = 200;
/// Maximum characters of the goal and the latest request.
const REQUEST_CHARS: usize = 300;

/// Caps per section. Constraints are kept generously because losing one
/// changes behaviour; the other sections only need the most recent few.
const MAX_CONSTRAINTS: usize = 100;
const MAX_DISCOVERIES: usize = 6;
const MAX_DONE: usize = 5;
const MAX_REMAINING: usize = 10;
const MAX_FILES: usize = 40;
const MAX_FAILED: usize = 10;
const MAX_TOOL_NAMES: usize = 20;

/// Rounds of select, render and count before falling back to truncation.
const MAX_FIT_ROUNDS: usize = 8;
/// Tokens per byte assumed before anything has been counted (chars / 4).
const DEFAULT_TOKENS_PER_BYTE: f64 = 0.25;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SectionKind {
    Goal,
    Constraints,
    Discoveries,
    Completed,
    InProgress,
    Remaining,
    Files,
    Failed,
    Other,
}

/// Display order of the sections.
const DISPLAY_ORDER: [SectionKind; 9] = [
    SectionKind::Goal,
    SectionKind::Constraints,
    SectionKind::Discoveries,
    SectionKind::Completed,
    SectionKind::InProgress,
    SectionKind::Remaining,
    SectionKind::Files,
    SectionKind::Failed,
    SectionKind::Other,
];

/// Order in which sections claim the budget; later ones are dropped first.
const PRIORITY_ORDER: [SectionKind; 9] = [
    SectionKind::Constraints,
    SectionKind::Goal,
    SectionKind::InProgress,
    SectionKind::Files,
    SectionKind::Failed,
    SectionKind::Remaining,
    SectionKind::Completed,
    SectionKind::Discoveries,
    SectionKind::Other,
];

impl SectionKind {
    fn index(self) -> usize {
        self as usize
    }

    fn title(self) -> &'static str {
        match self {
            SectionKind::Goal => "## Goal",
            SectionKind::Constraints => "## Instructions and constraints",
            SectionKind::Discoveries => "## Discoveries",
            SectionKind::Completed => "## Completed",
            SectionKind::InProgress => "## In progress",
            SectionKind::Remaining => "## Remaining",
            SectionKind::Files => "## Relevant files",
            SectionKind::Failed => "## Failed tools",
            SectionKind::Other => "## Other context",
        }
    }

    /// Goal and in-progress hold one paragraph; the rest are bullet lists.
    fn is_list(self) -> bool {
        !matches!(self, SectionKind::Goal | SectionKind::InProgress)
    }
}

/// A line of a section. Items are stored in keep order (the ones to drop
/// first last); `pos` gives the display order.
#[derive(Debug, PartialEq, Eq)]
struct Item {
    text: String,
    pos: usize,
}

type Sections = [Vec<Item>; 9];

/// Summarises `messages` into at most `max_tokens` tokens as measured by
/// `count`.
///
/// The result has markdown sections (goal, instructions and constraints,
/// discoveries, completed work, the request in progress, remaining work,
/// relevant files, failed tools and other context). When everything does
/// not fit, lower-priority items are dropped first, in this order of
/// importance: constraints, goal, in progress, files, failed tools,
/// remaining, completed, discoveries, other; as a last resort the text is
/// truncated. `count` is called a bounded number of times regardless of the
/// transcript length. No file-ID footer is added.
///
/// This is [`Collection::of`] followed by [`Collection::summary`]; use
/// [`Collection`] directly to gather parts of a long transcript separately.
#[must_use]
pub fn extractive_summary(
    messages: &[SourceMessage<'_>],
    max_tokens: usize,
    count: &dyn Fn(&str) -> usize,
) -> String {
    if max_tokens == 0 || messages.is_empty() {
        return String::new();
    }
    Collection::of(messages).summary(max_tokens, count)
}
