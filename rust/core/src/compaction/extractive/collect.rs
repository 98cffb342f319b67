//! Collection: walks a run of messages once, merges runs in order and
//! builds the summary sections.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use super::fit::fit;
use super::scan::{looks_like_path, scan_json_strings, scan_sentences, Tags};
use super::{
    Item, SectionKind, Sections, SourceMessage, SourceTool, ERROR_SCAN_BYTES, INPUT_SCAN_BYTES,
    ITEM_CHARS, MAX_CONSTRAINTS, MAX_DISCOVERIES, MAX_DONE, MAX_FAILED, MAX_FILES, MAX_REMAINING,
    MAX_TOOL_NAMES, REQUEST_CHARS, TEXT_SCAN_BYTES,
};

// ---------------------------------------------------------------------------
// Collection
// ---------------------------------------------------------------------------
#[derive(Debug, Default)]
struct FileEntry<'a> {
    /// Occurrence counter of the latest mention, for recency ordering.
    last: usize,
    file_id: Option<&'a str>,
}

/// What the summariser gathered from a run of consecutive messages.
///
/// Runs gathered separately and merged in order give the same summary as
/// gathering them at once. It only borrows from the messages, which are
/// `Sync`, so it is `Send` and runs can be gathered on other threads. The
/// default value is the empty collection, which merging leaves unchanged.
#[derive(Debug, Default)]
pub struct Collection<'a> {
    /// First user message with text: the goal.
    goal: Option<&'a SourceMessage<'a>>,
    /// Last user message with text: the request in progress.
    latest_request: Option<&'a SourceMessage<'a>>,
    /// The first `MAX_CONSTRAINTS` distinct constraints, in order.
    constraints: Vec<String>,
    /// Lowercased `constraints`, for case-insensitive deduplication.
    constraint_keys: HashSet<String>,
    /// Exact sentences already considered, so repeats skip the clipping.
    /// Only consulted while walking messages; merging ignores it.
    constraint_raw: HashSet<&'a str>,
    discoveries: Vec<&'a str>,
    remaining: Vec<&'a str>,
    done: Vec<&'a str>,
    tool_counts: HashMap<&'a str, usize>,
    files: HashMap<Cow<'a, str>, FileEntry<'a>>,
    /// File mentions so far; `FileEntry::last` counts from the run's start.
    mentions: usize,
    failed: Vec<(&'a str, &'a str)>,
    /// Messages gathered.
    messages: usize,
    users: usize,
    assistants: usize,
    systems: usize,
    tool_calls: usize,
    tool_errors: usize,
    /// Lowest and highest `seq`; `None` while there are no messages.
    seq: Option<(i64, i64)>,
}

impl<'a> Collection<'a> {
    /// Gathers from `messages` (a run of consecutive messages, oldest first).
    #[must_use]
    pub fn of(messages: &'a [SourceMessage<'a>]) -> Self {
        let mut c = Self {
            messages: messages.len(),
            ..Self::default()
        };
        for msg in messages {
            c.add_message(msg);
        }
        c
    }

    /// This collection followed by `later`, gathered from the messages right
    /// after this one's: the same as gathering both runs at once.
    #[must_use]
    pub fn merge(mut self, later: Collection<'a>) -> Self {
        self.goal = self.goal.or(later.goal);
        self.latest_request = later.latest_request.or(self.latest_request);
        self.merge_constraints(later.constraints);
        self.discoveries.extend(later.discoveries);
        self.remaining.extend(later.remaining);
        self.done.extend(later.done);
        for (name, n) in later.tool_counts {
            *self.tool_counts.entry(name).or_insert(0) += n;
        }
        self.merge_files(later.files, later.mentions);
        self.failed.extend(later.failed);
        self.messages += later.messages;
        self.users += later.users;
        self.assistants += later.assistants;
        self.systems += later.systems;
        self.tool_calls += later.tool_calls;
        self.tool_errors += later.tool_errors;
        self.seq = span(self.seq, later.seq);
        self
    }

    /// The summary within `max_tokens` (what
    /// [`extractive_summary`](super::extractive_summary) returns for the same
    /// messages).
    #[must_use]
    pub fn summary(self, max_tokens: usize, count: &dyn Fn(&str) -> usize) -> String {
        if max_tokens == 0 || self.messages == 0 {
            return String::new();
        }
        fit(&self.into_sections(), max_tokens, count)
    }

    fn add_message(&mut self, msg: &'a SourceMessage<'a>) {
        self.seq = span(self.seq, Some((msg.seq, msg.seq)));
        match msg.role {
            "user" => {
                self.users += 1;
                if msg.texts.iter().any(|t| !t.trim().is_empty()) {
                    self.goal.get_or_insert(msg);
                    self.latest_request = Some(msg);
                }
            }
            "assistant" => self.assistants += 1,
            "system" => self.systems += 1,
            _ => {}
        }
        let is_user = msg.role == "user";
        if is_user || msg.role == "assistant" {
            for text in &msg.texts {
                scan_sentences(prefix(text, TEXT_SCAN_BYTES), |s, tags| {
                    self.add_sentence(s, tags, is_user);
                });
            }
        }
        for tool in &msg.tools {
            self.add_tool(tool);
        }
        for r in &msg.file_refs {
            let key = if r.path.is_empty() { r.file_id } else { r.path };
            if key.is_empty() {
                continue;
            }
            self.mentions += 1;
            let entry = self.files.entry(Cow::Borrowed(key)).or_default();
            entry.last = self.mentions;
            if !r.file_id.is_empty() {
                entry.file_id = Some(r.file_id);
            }
        }
    }

    fn add_sentence(&mut self, sentence: &'a str, tags: Tags, is_user: bool) {
        let sentence = sentence
            .trim_start_matches(|ch: char| {
                matches!(ch, '-' | '*' | '#' | '>') || ch.is_whitespace()
            })
            .trim_end();
        if sentence.len() < 4 {
            return;
        }
        if is_user {
            if tags.has(Tags::RULE) {
                if self.constraints.len() < MAX_CONSTRAINTS && self.constraint_raw.insert(sentence)
                {
                    let text = clip(sentence, ITEM_CHARS);
                    if self.constraint_keys.insert(text.to_ascii_lowercase()) {
                        self.constraints.push(text);
                    }
                }
            } else if tags.has(Tags::REMAINING) {
                self.remaining.push(sentence);
            }
        } else if tags.has(Tags::REMAINING) {
            self.remaining.push(sentence);
        } else if tags.has(Tags::DONE) {
            self.done.push(sentence);
        } else if tags.has(Tags::DISCOVERY) {
            self.discoveries.push(sentence);
        }
    }

    fn add_tool(&mut self, tool: &SourceTool<'a>) {
        self.tool_calls += 1;
        match tool.status {
            "completed" => *self.tool_counts.entry(tool.name).or_insert(0) += 1,
            "error" => {
                self.tool_errors += 1;
                let detail = tool.error.or(tool.output).unwrap_or("");
                self.failed.push((tool.name, first_line(detail)));
            }
            _ => {}
        }
        let mentions = &mut self.mentions;
        let files = &mut self.files;
        scan_json_strings(prefix(tool.input, INPUT_SCAN_BYTES), |value| {
            if looks_like_path(&value) {
                *mentions += 1;
                files.entry(value).or_default().last = *mentions;
            }
        });
    }

    /// Appends the later run's constraints that are new here, up to the cap.
    ///
    /// Capping each run separately loses nothing: the later run keeps its
    /// first `MAX_CONSTRAINTS` distinct constraints, of which at most
    /// `self.constraints.len()` repeat ours, so it holds at least as many new
    /// ones as there is room for, in the order the whole walk would meet them.
    fn merge_constraints(&mut self, later: Vec<String>) {
        for text in later {
            if self.constraints.len() == MAX_CONSTRAINTS {
                break;
            }
            if self.constraint_keys.insert(text.to_ascii_lowercase()) {
                self.constraints.push(text);
            }
        }
    }

    /// Adds the later run's files, whose mention counters start after ours.
    fn merge_files(&mut self, later: HashMap<Cow<'a, str>, FileEntry<'a>>, mentions: usize) {
        for (path, entry) in later {
            let here = self.files.entry(path).or_default();
            here.last = self.mentions + entry.last;
            if entry.file_id.is_some() {
                here.file_id = entry.file_id;
            }
        }
        self.mentions += mentions;
    }

    /// The latest request, unless it is the goal itself. Compared by address,
    /// which holds across merges where indexes would not: two distinct
    /// messages never share one.
    fn in_progress(&self) -> Option<&'a SourceMessage<'a>> {
        self.latest_request
            .filter(|&msg| !self.goal.is_some_and(|goal| std::ptr::eq(goal, msg)))
    }

    pub(super) fn into_sections(self) -> Sections {
        let mut sections: Sections = Default::default();

        if let Some(msg) = self.goal {
            sections[SectionKind::Goal.index()].push(item(clip_parts(&msg.texts), 0));
        }
        if let Some(msg) = self.in_progress() {
            sections[SectionKind::InProgress.index()].push(item(clip_parts(&msg.texts), 0));
        }
        sections[SectionKind::Other.index()] = self.other_context();

        sections[SectionKind::Constraints.index()] = self
            .constraints
            .into_iter()
            .enumerate()
            .map(|(pos, text)| Item { text, pos })
            .collect();

        sections[SectionKind::Discoveries.index()] =
            latest_unique(&self.discoveries, MAX_DISCOVERIES);
        sections[SectionKind::Remaining.index()] = latest_unique(&self.remaining, MAX_REMAINING);

        let completed = &mut sections[SectionKind::Completed.index()];
        if !self.tool_counts.is_empty() {
            completed.push(item(tool_count_line(&self.tool_counts), 0));
        }
        for mut it in latest_unique(&self.done, MAX_DONE) {
            it.pos += 1;
            completed.push(it);
        }

        let mut files: Vec<(Cow<'_, str>, FileEntry<'_>)> = self.files.into_iter().collect();
        files.sort_unstable_by_key(|(_, entry)| Reverse(entry.last));
        sections[SectionKind::Files.index()] = files
            .into_iter()
            .take(MAX_FILES)
            .enumerate()
            .map(|(pos, (path, entry))| {
                let path = clip(&path, ITEM_CHARS);
                let text = match entry.file_id {
                    Some(id) if id != path => format!("{path} ({id})"),
                    _ => path,
                };
                Item { text, pos }
            })
            .collect();

        let mut failed = Vec::new();
        let mut seen = HashSet::new();
        for (name, line) in self.failed.iter().rev() {
            if failed.len() == MAX_FAILED {
                break;
            }
            let name = if name.is_empty() { "(unnamed)" } else { name };
            let text = if line.trim().is_empty() {
                clip(name, ITEM_CHARS)
            } else {
                clip(&format!("{name}: {line}"), ITEM_CHARS)
            };
            if seen.insert(text.clone()) {
                failed.push(text);
            }
        }
        let n = failed.len();
        sections[SectionKind::Failed.index()] = failed
            .into_iter()
            .enumerate()
            .map(|(i, text)| Item { text, pos: n - i })
            .collect();

        sections
    }

    /// Message and tool call counts; nothing for an empty collection.
    fn other_context(&self) -> Vec<Item> {
        let Some((lo, hi)) = self.seq else {
            return Vec::new();
        };
        let roles = [self.users, self.assistants, self.systems];
        let mut other = vec![item(covered_line(self.messages, (lo, hi), roles), 0)];
        if self.tool_calls > 0 {
            other.push(item(calls_line(self.tool_calls, self.tool_errors), 1));
        }
        other
    }
}

/// `"Messages covered: 12 (seq 3-14); user 4, assistant 8, system 0"`.
pub(super) fn covered_line(messages: usize, (lo, hi): (i64, i64), roles: [usize; 3]) -> String {
    let seq = if lo == hi {
        format!("seq {lo}")
    } else {
        format!("seq {lo}-{hi}")
    };
    let [users, assistants, systems] = roles;
    format!(
        "{COVERED_PREFIX}{messages} ({seq}); user {users}, assistant {assistants}, system {systems}"
    )
}

/// `"Tool calls: 9, failed: 1"`.
pub(super) fn calls_line(calls: usize, errors: usize) -> String {
    format!("{CALLS_PREFIX}{calls}, failed: {errors}")
}

/// How the lines of counts begin.
pub(super) const COVERED_PREFIX: &str = "Messages covered: ";
pub(super) const CALLS_PREFIX: &str = "Tool calls: ";
pub(super) const COMPLETED_PREFIX: &str = "Tool calls completed: ";

/// The smallest range holding both ranges.
fn span(a: Option<(i64, i64)>, b: Option<(i64, i64)>) -> Option<(i64, i64)> {
    match (a, b) {
        (Some((lo, hi)), Some((l, h))) => Some((lo.min(l), hi.max(h))),
        (range, None) | (None, range) => range,
    }
}

fn item(text: String, pos: usize) -> Item {
    Item { text, pos }
}

/// The last `cap` distinct entries, newest first in keep order and
/// chronological in display order.
fn latest_unique(entries: &[&str], cap: usize) -> Vec<Item> {
    let mut keys = HashSet::new();
    let mut out = Vec::new();
    for s in entries.iter().rev() {
        if out.len() == cap {
            break;
        }
        let text = clip(s, ITEM_CHARS);
        if keys.insert(text.to_ascii_lowercase()) {
            out.push(text);
        }
    }
    let n = out.len();
    out.into_iter()
        .enumerate()
        .map(|(i, text)| Item { text, pos: n - i })
        .collect()
}

/// `"read_file x12, run_tests x4"`, most used first, names breaking ties so
/// the line is deterministic.
pub(super) fn tool_count_line(counts: &HashMap<&str, usize>) -> String {
    let mut v: Vec<(&str, usize)> = counts.iter().map(|(k, v)| (*k, *v)).collect();
    v.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut line = String::from(COMPLETED_PREFIX);
    for (i, (name, n)) in v.iter().take(MAX_TOOL_NAMES).enumerate() {
        if i > 0 {
            line.push_str(", ");
        }
        let name = if name.is_empty() { "(unnamed)" } else { name };
        line.push_str(&clip(name, 60));
        let _ = write!(line, " x{n}");
    }
    if v.len() > MAX_TOOL_NAMES {
        let _ = write!(line, ", and {} more tools", v.len() - MAX_TOOL_NAMES);
    }
    line
}

// ---------------------------------------------------------------------------
// Text helpers
// ---------------------------------------------------------------------------

/// The longest prefix of `s` of at most `max` bytes ending on a char boundary.
/// The longest prefix of `s` within `max` bytes that ends on a character boundary.
pub(crate) fn prefix(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// First non-empty line of `s`, looking at a bounded prefix only.
fn first_line(s: &str) -> &str {
    prefix(s, ERROR_SCAN_BYTES)
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

/// Whitespace-collapsed `s`, cut to `max_chars` characters plus an ellipsis.
pub(super) fn clip(s: &str, max_chars: usize) -> String {
    clip_iter(&[s], max_chars)
}

/// Whitespace-collapsed concatenation of `parts` (joined by a space), cut
/// to `REQUEST_CHARS` characters plus an ellipsis.
pub(super) fn clip_parts(parts: &[&str]) -> String {
    clip_iter(parts, REQUEST_CHARS)
}

/// Streams the characters and stops once it has enough, so clipping a huge
/// text costs only as much as the clipped result.
fn clip_iter(parts: &[&str], max_chars: usize) -> String {
    let mut out = String::with_capacity(max_chars.min(512));
    let mut n = 0;
    let mut pending_space = false;
    for part in parts {
        for ch in part.chars() {
            if ch.is_whitespace() {
                pending_space = n > 0;
                continue;
            }
            let needed = usize::from(pending_space) + 1;
            if n + needed > max_chars {
                out.push('…');
                return out;
            }
            if pending_space {
                out.push(' ');
                pending_space = false;
            }
            out.push(ch);
            n += needed;
        }
        pending_space = n > 0;
    }
    out
}
