//! Collection: walks the transcript once and builds the summary sections.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

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

#[derive(Default)]
struct Collector<'a> {
    goal: Option<usize>,
    latest_request: Option<usize>,
    constraints: Vec<String>,
    constraint_keys: HashSet<String>,
    /// Exact sentences already considered, so repeats skip the clipping.
    constraint_raw: HashSet<&'a str>,
    discoveries: Vec<&'a str>,
    remaining: Vec<&'a str>,
    done: Vec<&'a str>,
    tool_counts: HashMap<&'a str, usize>,
    files: HashMap<Cow<'a, str>, FileEntry<'a>>,
    mentions: usize,
    failed: Vec<(&'a str, &'a str)>,
    users: usize,
    assistants: usize,
    systems: usize,
    tool_calls: usize,
    tool_errors: usize,
    seq_min: i64,
    seq_max: i64,
}

pub(super) fn collect(messages: &[SourceMessage<'_>]) -> Sections {
    let mut c = Collector {
        seq_min: i64::MAX,
        seq_max: i64::MIN,
        ..Collector::default()
    };
    for (idx, msg) in messages.iter().enumerate() {
        c.seq_min = c.seq_min.min(msg.seq);
        c.seq_max = c.seq_max.max(msg.seq);
        match msg.role {
            "user" => {
                c.users += 1;
                if msg.texts.iter().any(|t| !t.trim().is_empty()) {
                    c.goal.get_or_insert(idx);
                    c.latest_request = Some(idx);
                }
            }
            "assistant" => c.assistants += 1,
            "system" => c.systems += 1,
            _ => {}
        }
        let is_user = msg.role == "user";
        if is_user || msg.role == "assistant" {
            for text in &msg.texts {
                scan_sentences(prefix(text, TEXT_SCAN_BYTES), |s, tags| {
                    c.add_sentence(s, tags, is_user);
                });
            }
        }
        for tool in &msg.tools {
            c.add_tool(tool);
        }
        for r in &msg.file_refs {
            let key = if r.path.is_empty() { r.file_id } else { r.path };
            if key.is_empty() {
                continue;
            }
            c.mentions += 1;
            let entry = c.files.entry(Cow::Borrowed(key)).or_default();
            entry.last = c.mentions;
            if !r.file_id.is_empty() {
                entry.file_id = Some(r.file_id);
            }
        }
    }
    c.into_sections(messages)
}

impl<'a> Collector<'a> {
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

    fn into_sections(self, messages: &[SourceMessage<'_>]) -> Sections {
        let mut sections: Sections = Default::default();

        if let Some(i) = self.goal {
            sections[SectionKind::Goal.index()].push(item(clip_parts(&messages[i].texts), 0));
        }
        if let Some(i) = self.latest_request.filter(|&i| Some(i) != self.goal) {
            sections[SectionKind::InProgress.index()].push(item(clip_parts(&messages[i].texts), 0));
        }

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

        let seq = if self.seq_min == self.seq_max {
            format!("seq {}", self.seq_min)
        } else {
            format!("seq {}-{}", self.seq_min, self.seq_max)
        };
        let mut other = vec![item(
            format!(
                "Messages covered: {} ({seq}); user {}, assistant {}, system {}",
                messages.len(),
                self.users,
                self.assistants,
                self.systems
            ),
            0,
        )];
        if self.tool_calls > 0 {
            other.push(item(
                format!(
                    "Tool calls: {}, failed: {}",
                    self.tool_calls, self.tool_errors
                ),
                1,
            ));
        }
        sections[SectionKind::Other.index()] = other;
        sections
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
fn tool_count_line(counts: &HashMap<&str, usize>) -> String {
    let mut v: Vec<(&str, usize)> = counts.iter().map(|(k, v)| (*k, *v)).collect();
    v.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut line = String::from("Tool calls completed: ");
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
fn prefix(s: &str, max: usize) -> &str {
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
