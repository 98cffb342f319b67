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

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

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
const TEXT_SCAN_BYTES: usize = 2048;
/// Bytes of each tool input that are scanned for paths.
const INPUT_SCAN_BYTES: usize = 4096;
/// Bytes of an error message searched for its first line.
const ERROR_SCAN_BYTES: usize = 1024;
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
#[derive(Debug)]
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
#[must_use]
pub fn extractive_summary(
    messages: &[SourceMessage<'_>],
    max_tokens: usize,
    count: &dyn Fn(&str) -> usize,
) -> String {
    if max_tokens == 0 || messages.is_empty() {
        return String::new();
    }
    let sections = collect(messages);
    fit(&sections, max_tokens, count)
}

// ---------------------------------------------------------------------------
// Collection
// ---------------------------------------------------------------------------

/// What a sentence is evidence of, as a set of flags.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Tags(u8);

impl Tags {
    const RULE: u8 = 1;
    const DISCOVERY: u8 = 2;
    const REMAINING: u8 = 4;
    const DONE: u8 = 8;

    fn any(self) -> bool {
        self.0 != 0
    }

    fn has(self, flag: u8) -> bool {
        self.0 & flag != 0
    }

    fn set(&mut self, flag: u8) {
        self.0 |= flag;
    }
}

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

fn collect(messages: &[SourceMessage<'_>]) -> Sections {
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
fn clip(s: &str, max_chars: usize) -> String {
    clip_iter(&[s], max_chars)
}

/// Whitespace-collapsed concatenation of `parts` (joined by a space), cut
/// to `REQUEST_CHARS` characters plus an ellipsis.
fn clip_parts(parts: &[&str]) -> String {
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

/// Longest keyword in bytes ("implemented").
const MAX_KEYWORD_LEN: usize = 11;

/// Packs a word of at most 16 bytes into an integer with ASCII letters
/// lowercased (setting bit 5 maps `A-Z` to `a-z` and leaves digits and the
/// apostrophe unchanged), so a keyword lookup compares one integer.
const fn key(word: &[u8]) -> u128 {
    let mut k = 0u128;
    let mut i = 0;
    while i < word.len() {
        k |= ((word[i] | 0x20) as u128) << (8 * i);
        i += 1;
    }
    k
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kw {
    None,
    Rule,
    Discovery,
    Remaining,
    Done,
    Do,
    Not,
    Make,
    Sure,
    Root,
    Cause,
    Turns,
    Out,
    Still,
    Need,
    Follow,
    Up,
}

/// Every keyword and phrase word with its kind.
const KEYWORDS: [(&str, Kw); 42] = [
    ("must", Kw::Rule),
    ("never", Kw::Rule),
    ("always", Kw::Rule),
    ("only", Kw::Rule),
    ("avoid", Kw::Rule),
    ("required", Kw::Rule),
    ("don't", Kw::Rule),
    ("dont", Kw::Rule),
    ("don\u{2019}t", Kw::Rule),
    ("found", Kw::Discovery),
    ("because", Kw::Discovery),
    ("todo", Kw::Remaining),
    ("next", Kw::Remaining),
    ("remaining", Kw::Remaining),
    ("done", Kw::Done),
    ("fixed", Kw::Done),
    ("implemented", Kw::Done),
    ("added", Kw::Done),
    ("updated", Kw::Done),
    ("completed", Kw::Done),
    ("created", Kw::Done),
    ("removed", Kw::Done),
    ("finished", Kw::Done),
    ("resolved", Kw::Done),
    ("refactored", Kw::Done),
    ("renamed", Kw::Done),
    ("wrote", Kw::Done),
    ("merged", Kw::Done),
    ("do", Kw::Do),
    ("not", Kw::Not),
    ("make", Kw::Make),
    ("sure", Kw::Sure),
    ("root", Kw::Root),
    ("cause", Kw::Cause),
    ("turns", Kw::Turns),
    ("turned", Kw::Turns),
    ("out", Kw::Out),
    ("still", Kw::Still),
    ("need", Kw::Need),
    ("needs", Kw::Need),
    ("follow", Kw::Follow),
    ("up", Kw::Up),
];

/// Multiplier of the keyword hash, chosen so that the keywords land in
/// distinct slots (checked when the table is built at compile time).
const KEYWORD_HASH_MUL: u64 = 0x99e8_8843_8ccc_1a5d;
const KEYWORD_SLOTS_BITS: u32 = 7;

const fn keyword_slot(packed: u128) -> usize {
    let lo = packed as u64;
    let hi = (packed >> 64) as u64;
    ((lo ^ hi.rotate_left(29)).wrapping_mul(KEYWORD_HASH_MUL) >> (64 - KEYWORD_SLOTS_BITS)) as usize
}

/// Perfect hash table from packed keyword to kind; a lookup is one hash
/// and one comparison instead of a chain of comparisons.
static KEYWORD_TABLE: [(u128, Kw); 1 << KEYWORD_SLOTS_BITS] = {
    let mut t = [(0u128, Kw::None); 1 << KEYWORD_SLOTS_BITS];
    let mut i = 0;
    while i < KEYWORDS.len() {
        let packed = key(KEYWORDS[i].0.as_bytes());
        let slot = keyword_slot(packed);
        assert!(matches!(t[slot].1, Kw::None), "keyword hash collision");
        t[slot] = (packed, KEYWORDS[i].1);
        i += 1;
    }
    t
};

/// Classifies the word `b[start..end]`, ignoring ASCII case.
///
/// Branch-light on purpose: words are not pre-filtered by first letter,
/// since that test is mispredicted so often that hashing every word of
/// keyword length is cheaper.
#[inline]
fn word_kind(b: &[u8], start: usize, end: usize) -> Kw {
    let len = end - start;
    let first = b[start];
    if first == b'\'' || b[end - 1] == b'\'' {
        // A quoted keyword such as 'must' is still a keyword.
        return keyword_slow(&b[start..end]);
    }
    if !(2..=MAX_KEYWORD_LEN).contains(&len) {
        return Kw::None;
    }
    lookup_word(b, start, len)
}

/// Looks up the word of `len` bytes (2 to `MAX_KEYWORD_LEN`) at `start`.
#[inline]
fn lookup_word(b: &[u8], start: usize, len: usize) -> Kw {
    // Read a whole 16-byte window when the text is long enough, which
    // avoids a variable-length copy; the mask below drops the extra bytes.
    let raw = if let Some(window) = b.get(start..start + 16) {
        u128::from_le_bytes(<[u8; 16]>::try_from(window).unwrap_or([0; 16]))
    } else {
        let mut buf = [0u8; 16];
        buf[..len].copy_from_slice(&b[start..start + len]);
        u128::from_le_bytes(buf)
    };
    let mask = (1u128 << (8 * len)) - 1;
    keyword((raw | 0x2020_2020_2020_2020_2020_2020_2020_2020) & mask)
}

/// Classifies a word with surrounding apostrophes removed.
#[cold]
fn keyword_slow(word: &[u8]) -> Kw {
    let mut word = word;
    while let [b'\'', rest @ ..] = word {
        word = rest;
    }
    while let [rest @ .., b'\''] = word {
        word = rest;
    }
    if word.len() < 2 || word.len() > MAX_KEYWORD_LEN {
        return Kw::None;
    }
    keyword(key(word))
}

/// Maps a packed lowercase word (see [`key`]) to its keyword kind.
fn keyword(packed: u128) -> Kw {
    let (k, kind) = KEYWORD_TABLE[keyword_slot(packed)];
    if k == packed {
        kind
    } else {
        Kw::None
    }
}

/// Adds the tags implied by `kw`, given the previous word of the sentence
/// (for two-word phrases such as "do not").
fn apply(tags: &mut Tags, prev: Kw, kw: Kw) {
    match (prev, kw) {
        (_, Kw::Rule) | (Kw::Do, Kw::Not) | (Kw::Make, Kw::Sure) => tags.set(Tags::RULE),
        (_, Kw::Discovery) | (Kw::Root, Kw::Cause) | (Kw::Turns, Kw::Out) => {
            tags.set(Tags::DISCOVERY);
        }
        (_, Kw::Remaining) | (Kw::Still, Kw::Need) | (Kw::Follow, Kw::Up) => {
            tags.set(Tags::REMAINING);
        }
        (_, Kw::Done) => tags.set(Tags::DONE),
        _ => {}
    }
}

const LOW_BITS: u64 = 0x0101_0101_0101_0101;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// High bit of each byte of `x` set where that byte equals `c`. Exact per
/// byte: no borrow crosses byte lanes.
#[inline]
fn eq_bytes(x: u64, c: u8) -> u64 {
    let e = x ^ (LOW_BITS * u64::from(c));
    !(((e & !HIGH_BITS) + !HIGH_BITS) | e) & HIGH_BITS
}

/// High bit of each byte of `y` (all bytes below 0x80) set where
/// `lo <= byte <= hi`.
#[inline]
fn in_range(y: u64, lo: u8, hi: u8) -> u64 {
    let at_least_lo = y + LOW_BITS * u64::from(0x80 - lo);
    let above_hi = y + LOW_BITS * u64::from(0x80 - hi - 1);
    at_least_lo & !above_hi & HIGH_BITS
}

/// Packs the high bit of each byte into the low 8 bits, byte 0 first.
#[inline]
fn gather_high_bits(v: u64) -> u64 {
    (v >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56
}

/// Classifies 8 bytes at once (little-endian), returning 8-bit masks of
/// word bytes (ASCII letters and digits, the apostrophe, and every
/// non-ASCII byte, so multi-byte letters and the typographic apostrophe
/// stay inside their word) and of bytes that may end a sentence.
#[inline]
fn classify8(x: u64) -> (u64, u64) {
    let ascii = x & !HIGH_BITS;
    let letters = in_range(ascii | (LOW_BITS * 0x20), b'a', b'z');
    let digits = in_range(ascii, b'0', b'9');
    let words = (x & HIGH_BITS) | letters | digits | eq_bytes(x, b'\'');
    let marks = eq_bytes(x, b'\n') | eq_bytes(x, b'.') | eq_bytes(x, b'!') | eq_bytes(x, b'?');
    (gather_high_bits(words), gather_high_bits(marks))
}

/// Word-byte and sentence-mark bit masks of a block of at most 64 bytes,
/// computed 8 bytes at a time without branches.
fn block_masks(block: &[u8]) -> (u64, u64) {
    let mut padded = [0u8; 64];
    let bytes: &[u8] = if block.len() == 64 {
        block
    } else {
        padded[..block.len()].copy_from_slice(block);
        &padded
    };
    let mut words = 0u64;
    let mut marks = 0u64;
    for (j, chunk) in bytes.chunks_exact(8).enumerate() {
        let x = u64::from_le_bytes(<[u8; 8]>::try_from(chunk).unwrap_or([0; 8]));
        let (w, m) = classify8(x);
        words |= w << (8 * j);
        marks |= m << (8 * j);
    }
    (words, marks)
}

/// Classifies the word `b[start..end]` and adds its tags to the sentence.
#[inline]
fn on_word(b: &[u8], start: usize, end: usize, tags: &mut Tags, prev: &mut Kw) {
    let kw = word_kind(b, start, end);
    // Most words are not keywords; skip the dispatch for them.
    if kw != Kw::None {
        apply(tags, *prev, kw);
    }
    *prev = kw;
}

/// Splits `text` into sentences (at newlines and at `.`, `!` or `?`
/// followed by whitespace) and calls `emit` for each sentence that carries
/// at least one tag.
///
/// The text is processed in 64-byte blocks: a branch-free pass builds bit
/// masks of word bytes and possible sentence ends (8 bytes per step), and the loop then visits
/// only word starts and sentence-end candidates, finding each word's end
/// with one bit scan. A byte-by-byte loop would mispredict a branch at
/// nearly every word boundary.
fn scan_sentences<'a>(text: &'a str, mut emit: impl FnMut(&'a str, Tags)) {
    let b = text.as_bytes();
    let mut start = 0;
    let mut tags = Tags::default();
    let mut prev = Kw::None;
    // Start of a word that reaches the end of the previous block.
    let mut open_word: Option<usize> = None;
    for (block_index, block) in b.chunks(64).enumerate() {
        let base = block_index * 64;
        let (words, marks) = block_masks(block);
        let mut starts = words & !(words << 1);
        if let Some(ws) = open_word {
            // The first bytes continue the open word rather than start one.
            starts &= !1;
            let run = (!words).trailing_zeros() as usize;
            if run < 64 {
                on_word(b, ws, base + run, &mut tags, &mut prev);
                open_word = None;
            }
        }
        let mut events = starts | marks;
        while events != 0 {
            let bit = events.trailing_zeros();
            events &= events - 1;
            let pos = base + bit as usize;
            if (marks >> bit) & 1 == 0 {
                // Bytes past a short final block are zero in `words`, so a
                // word there ends at the end of the text.
                let run = (!(words >> bit)).trailing_zeros();
                if bit + run >= 64 {
                    open_word = Some(pos);
                } else {
                    on_word(b, pos, pos + run as usize, &mut tags, &mut prev);
                }
                continue;
            }
            let end = if b[pos] == b'\n' {
                Some(pos)
            } else if b.get(pos + 1).is_none_or(u8::is_ascii_whitespace) {
                Some(pos + 1)
            } else {
                None
            };
            if let Some(end) = end {
                if tags.any() {
                    // Sentence bounds are ASCII bytes, so these are char
                    // boundaries.
                    emit(&text[start..end], tags);
                }
                start = pos + 1;
                tags = Tags::default();
                prev = Kw::None;
            }
        }
    }
    if let Some(ws) = open_word {
        on_word(b, ws, b.len(), &mut tags, &mut prev);
    }
    if tags.any() && start < b.len() {
        emit(&text[start..], tags);
    }
}

/// Calls `f` with every JSON string value (not object keys) in `json`,
/// unescaped. Tolerates invalid or truncated JSON.
fn scan_json_strings<'a>(json: &'a str, mut f: impl FnMut(Cow<'a, str>)) {
    let b = json.as_bytes();
    let mut i = 0;
    while let Some(q) = memchr::memchr(b'"', &b[i..]) {
        let start = i + q + 1;
        let mut j = start;
        let mut escaped = false;
        let mut closed = false;
        while j < b.len() {
            match b[j] {
                b'\\' => {
                    escaped = true;
                    j += 2;
                }
                b'"' => {
                    closed = true;
                    break;
                }
                _ => j += 1,
            }
        }
        if !closed {
            return;
        }
        let raw = &json[start..j];
        i = j + 1;
        let is_key = b[i..]
            .iter()
            .find(|c| !c.is_ascii_whitespace())
            .is_some_and(|&c| c == b':');
        if !is_key {
            f(if escaped {
                Cow::Owned(unescape(raw))
            } else {
                Cow::Borrowed(raw)
            });
        }
    }
}

fn unescape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let ch = u32::from_str_radix(&hex, 16)
                    .ok()
                    .and_then(char::from_u32)
                    .unwrap_or('\u{fffd}');
                out.push(ch);
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// Whether a JSON string value looks like a file path: no whitespace or
/// shell/markup punctuation, not a URL, and either a file name with an
/// extension, an absolute or relative path, or at least two `/` separators.
fn looks_like_path(s: &str) -> bool {
    if s.len() < 3 || s.len() > 300 || s.starts_with('-') || s.contains("://") {
        return false;
    }
    if s.chars().any(|c| {
        c.is_whitespace()
            || c.is_control()
            || matches!(
                c,
                '"' | '\''
                    | '`'
                    | '<'
                    | '>'
                    | '|'
                    | '*'
                    | '?'
                    | '='
                    | ','
                    | ';'
                    | '('
                    | ')'
                    | '{'
                    | '}'
                    | '['
                    | ']'
                    | '^'
                    | '$'
            )
    }) {
        return false;
    }
    if !s.bytes().any(|b| b.is_ascii_alphabetic()) {
        return false;
    }
    let name = s.rsplit('/').next().unwrap_or(s);
    let has_extension = name.rfind('.').is_some_and(|dot| {
        let ext = &name[dot + 1..];
        dot > 0
            && (1..=10).contains(&ext.len())
            && ext.bytes().all(|b| b.is_ascii_alphanumeric())
            && ext.as_bytes()[0].is_ascii_alphabetic()
    });
    if has_extension {
        return true;
    }
    s.contains('/')
        && (s.starts_with('/')
            || s.starts_with("./")
            || s.starts_with("../")
            || s.starts_with("~/")
            || s.ends_with('/')
            || s.matches('/').count() >= 2)
}

// ---------------------------------------------------------------------------
// Budget fitting
// ---------------------------------------------------------------------------

/// Renders the first `take[k]` items (in keep order) of each section.
fn render(sections: &Sections, take: &[usize; 9]) -> String {
    let mut out = String::new();
    for kind in DISPLAY_ORDER {
        let k = take[kind.index()];
        if k == 0 {
            continue;
        }
        let mut chosen: Vec<&Item> = sections[kind.index()][..k].iter().collect();
        chosen.sort_by_key(|it| it.pos);
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(kind.title());
        for it in chosen {
            out.push('\n');
            if kind.is_list() {
                out.push_str("- ");
            }
            out.push_str(&it.text);
        }
    }
    out
}

/// Picks a priority prefix of the items whose estimated cost fits `target`.
/// Selection stops at the first item that does not fit, so a lower-priority
/// item is never kept in place of a higher-priority one.
fn select(sections: &Sections, tokens_per_byte: f64, target: f64) -> [usize; 9] {
    let mut take = [0usize; 9];
    let mut used = 0.0;
    for kind in PRIORITY_ORDER {
        let items = &sections[kind.index()];
        for (i, it) in items.iter().enumerate() {
            let mut bytes = it.text.len() + 3;
            if i == 0 {
                bytes += kind.title().len() + 2;
            }
            let cost = bytes as f64 * tokens_per_byte;
            if used + cost > target {
                return take;
            }
            used += cost;
            take[kind.index()] = i + 1;
        }
    }
    take
}

fn fit(sections: &Sections, max_tokens: usize, count: &dyn Fn(&str) -> usize) -> String {
    let all: [usize; 9] = std::array::from_fn(|i| sections[i].len());
    let full = render(sections, &all);
    let budget = max_tokens as f64;
    let mut rate = DEFAULT_TOKENS_PER_BYTE;
    // Only count the full rendering when it might fit; otherwise the first
    // selection round calibrates the rate on a budget-sized text instead.
    if full.len() as f64 * rate <= 2.0 * budget {
        let n = count(&full);
        if n <= max_tokens {
            return full;
        }
        rate = rate_of(n, &full);
    }
    let mut target = budget;
    let mut last = String::new();
    for _ in 0..MAX_FIT_ROUNDS {
        let take = select(sections, rate, target);
        if take.iter().all(|&k| k == 0) {
            break;
        }
        let out = render(sections, &take);
        let n = count(&out);
        if n <= max_tokens {
            return grow(sections, &take, out, n, max_tokens, count);
        }
        rate = rate_of(n, &out).max(rate);
        target *= 0.97;
        last = out;
    }
    if last.is_empty() {
        last = top_item(sections);
    }
    truncate_to_fit(&last, max_tokens, count)
}

/// After a round that fits with room to spare, tries once more with the
/// rate measured on that round; keeps whichever larger selection fits.
fn grow(
    sections: &Sections,
    take: &[usize; 9],
    out: String,
    n: usize,
    max_tokens: usize,
    count: &dyn Fn(&str) -> usize,
) -> String {
    if (n as f64) >= 0.9 * max_tokens as f64 || n == 0 {
        return out;
    }
    let bigger = select(sections, rate_of(n, &out), max_tokens as f64);
    if bigger.iter().sum::<usize>() <= take.iter().sum::<usize>() {
        return out;
    }
    let candidate = render(sections, &bigger);
    if count(&candidate) <= max_tokens {
        candidate
    } else {
        out
    }
}

fn rate_of(tokens: usize, text: &str) -> f64 {
    if text.is_empty() {
        DEFAULT_TOKENS_PER_BYTE
    } else {
        tokens as f64 / text.len() as f64
    }
}

/// The header and first item of the highest-priority non-empty section.
fn top_item(sections: &Sections) -> String {
    let mut take = [0usize; 9];
    if let Some(kind) = PRIORITY_ORDER
        .into_iter()
        .find(|k| !sections[k.index()].is_empty())
    {
        take[kind.index()] = 1;
    }
    render(sections, &take)
}

/// Longest char-boundary prefix of `text` whose count fits, by binary
/// search (about log2(len) calls to `count`).
fn truncate_to_fit(text: &str, max_tokens: usize, count: &dyn Fn(&str) -> usize) -> String {
    if count(text) <= max_tokens {
        return text.to_owned();
    }
    let (mut lo, mut hi) = (0usize, text.len());
    while hi - lo > 1 {
        let mut mid = lo + (hi - lo) / 2;
        while mid > lo && !text.is_char_boundary(mid) {
            mid -= 1;
        }
        if mid == lo {
            mid = lo + 1;
            while mid < hi && !text.is_char_boundary(mid) {
                mid += 1;
            }
            if mid >= hi {
                break;
            }
        }
        if count(&text[..mid]) <= max_tokens {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let cut = &text[..lo];
    let trimmed = cut.trim_end();
    if trimmed.len() < cut.len() && count(trimmed) <= max_tokens {
        trimmed.to_owned()
    } else {
        cut.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::cell::Cell;

    fn words(s: &str) -> usize {
        s.split_whitespace().count()
    }

    fn msg<'a>(role: &'a str, seq: i64, text: &'a str) -> SourceMessage<'a> {
        SourceMessage {
            role,
            seq,
            texts: vec![text],
            ..SourceMessage::default()
        }
    }

    fn tool<'a>(name: &'a str, input: &'a str, status: &'a str) -> SourceTool<'a> {
        SourceTool {
            name,
            input,
            status,
            output: Some("ok"),
            error: None,
        }
    }

    fn transcript() -> Vec<SourceMessage<'static>> {
        let mut a1 = msg(
            "assistant",
            2,
            "I read the parser. The root cause is an off-by-one in the tokenizer. \
             I fixed the bounds check in src/lexer.rs.",
        );
        a1.tools = vec![
            tool("read_file", r#"{"path": "src/lexer.rs"}"#, "completed"),
            tool("read_file", r#"{"path": "src/parser.rs"}"#, "completed"),
            tool("run_tests", r#"{"cmd": "cargo test"}"#, "completed"),
            SourceTool {
                name: "bash",
                input: r#"{"command": "make lint", "cwd": "/work/app/"}"#,
                status: "error",
                output: None,
                error: Some("make: *** No rule to make target 'lint'.\nStop."),
            },
        ];
        let mut u2 = msg(
            "user",
            3,
            "Great. Now add a regression test. Make sure it covers empty input.\n\
             TODO: update the changelog afterwards",
        );
        u2.file_refs = vec![SourceFileRef {
            file_id: "file_0123abcd",
            path: "docs/spec.md",
        }];
        vec![
            msg(
                "user",
                1,
                "Fix the crash in the parser when the input ends with a quote. \
                 Never change the public API. You must keep the tests green!",
            ),
            a1,
            u2,
            msg(
                "assistant",
                4,
                "Added the test. Next I will update the changelog.",
            ),
        ]
    }

    #[test]
    fn sections_from_small_transcript() {
        let msgs = transcript();
        let out = extractive_summary(&msgs, 10_000, &words);
        let expected = "\
## Goal
Fix the crash in the parser when the input ends with a quote. Never change the public API. You must keep the tests green!

## Instructions and constraints
- Never change the public API.
- You must keep the tests green!
- Make sure it covers empty input.

## Discoveries
- The root cause is an off-by-one in the tokenizer.

## Completed
- Tool calls completed: read_file x2, run_tests x1
- I fixed the bounds check in src/lexer.rs.
- Added the test.

## In progress
Great. Now add a regression test. Make sure it covers empty input. TODO: update the changelog afterwards

## Remaining
- TODO: update the changelog afterwards
- Next I will update the changelog.

## Relevant files
- docs/spec.md (file_0123abcd)
- /work/app/
- src/parser.rs
- src/lexer.rs

## Failed tools
- bash: make: *** No rule to make target 'lint'.

## Other context
- Messages covered: 4 (seq 1-4); user 2, assistant 2, system 0
- Tool calls: 4, failed: 1";
        assert_eq!(out, expected);
    }

    #[test]
    fn deterministic() {
        let msgs = transcript();
        let counter = crate::tokens::TokenCounter::new("gpt-4o", 1.0);
        let count = |s: &str| counter.count(s);
        for budget in [0, 5, 30, 80, 200, 10_000] {
            let a = extractive_summary(&msgs, budget, &count);
            let b = extractive_summary(&msgs, budget, &count);
            assert_eq!(a, b);
            assert!(count(&a) <= budget);
        }
    }

    #[test]
    fn tight_budget_keeps_priorities() {
        let msgs = transcript();
        let counter = crate::tokens::TokenCounter::new("gpt-4o", 1.0);
        let count = |s: &str| counter.count(s);
        let out = extractive_summary(&msgs, 40, &count);
        assert!(count(&out) <= 40);
        assert!(out.starts_with("## Instructions and constraints"), "{out}");
        assert!(!out.contains("## Other context"));
        let tiny = extractive_summary(&msgs, 3, &count);
        assert!(count(&tiny) <= 3);
        assert!(!tiny.is_empty());
    }

    #[test]
    fn empty_inputs() {
        assert_eq!(extractive_summary(&[], 100, &words), "");
        assert_eq!(extractive_summary(&transcript(), 0, &words), "");
        let only_tool = vec![SourceMessage {
            role: "assistant",
            seq: 7,
            tools: vec![tool("x", "{}", "running")],
            ..SourceMessage::default()
        }];
        let out = extractive_summary(&only_tool, 100, &words);
        assert_eq!(
            out,
            "## Other context\n- Messages covered: 1 (seq 7); user 0, assistant 1, system 0\n\
             - Tool calls: 1, failed: 0"
        );
    }

    #[test]
    fn keywords_are_whole_words() {
        let mut found = Vec::new();
        scan_sentences(
            "Mustard is tasty. Nevertheless fine. Don't push. We only ship. \
             It was unfounded. The rest remains. Follow-up later.",
            |s, t| {
                found.push((
                    s,
                    t.has(Tags::RULE),
                    t.has(Tags::DISCOVERY),
                    t.has(Tags::REMAINING),
                ));
            },
        );
        assert_eq!(
            found,
            vec![
                (" Don't push.", true, false, false),
                (" We only ship.", true, false, false),
                (" Follow-up later.", false, false, true),
            ]
        );
    }

    #[test]
    fn typographic_apostrophe_and_case() {
        let mut rules = Vec::new();
        scan_sentences(
            "DON\u{2019}T touch it\nDo NOT merge\nAVOID globals",
            |s, t| {
                if t.has(Tags::RULE) {
                    rules.push(s);
                }
            },
        );
        assert_eq!(
            rules,
            vec!["DON\u{2019}T touch it", "Do NOT merge", "AVOID globals"]
        );
    }

    #[test]
    fn keyword_table_lookup() {
        for (word, kind) in KEYWORDS {
            for w in [word.to_owned(), word.to_ascii_uppercase()] {
                assert_eq!(word_kind(w.as_bytes(), 0, w.len()), kind, "{w}");
            }
        }
        for w in [
            "mus",
            "musts",
            "nevermore",
            "xyz",
            "a",
            "implementedx",
            "dox",
        ] {
            assert_eq!(word_kind(w.as_bytes(), 0, w.len()), Kw::None, "{w}");
        }
        let quoted = "'required'";
        assert_eq!(word_kind(quoted.as_bytes(), 0, quoted.len()), Kw::Rule);
    }

    #[test]
    fn path_heuristic() {
        for p in [
            "src/lib.rs",
            "README.md",
            "/etc/hosts",
            "./run",
            "a/b/c",
            "C:\\x\\y.txt",
        ] {
            assert!(looks_like_path(p), "{p}");
        }
        for p in [
            "cargo test",
            "https://x.io/a.html",
            "application/json",
            "v1.2",
            "1/2",
            "--out=/tmp/x",
            "src/**/*.rs",
            "hello",
        ] {
            assert!(!looks_like_path(p), "{p}");
        }
        let mut values = Vec::new();
        scan_json_strings(
            r#"{"path": "a\/b\/c.rs", "n": 3, "list": ["x.py", "y"], "k\"q": "v"}"#,
            |v| values.push(v.into_owned()),
        );
        assert_eq!(values, vec!["a/b/c.rs", "x.py", "y", "v"]);
    }

    #[test]
    fn clip_collapses_and_cuts() {
        assert_eq!(clip("  a \n\n b\tc  ", 200), "a b c");
        assert_eq!(clip("abcdef", 3), "abc…");
        assert_eq!(clip_parts(&["one", "two"]), "one two");
        let long = "x".repeat(1000);
        assert_eq!(clip_parts(&[&long]).chars().count(), REQUEST_CHARS + 1);
    }

    #[test]
    fn count_calls_are_bounded() {
        let big: Vec<String> = (0..3000)
            .map(|i| format!("You must keep rule number {i} always. Next do item {i}."))
            .collect();
        let msgs: Vec<SourceMessage<'_>> = big
            .iter()
            .enumerate()
            .map(|(i, t)| msg(if i % 2 == 0 { "user" } else { "assistant" }, i as i64, t))
            .collect();
        let calls = Cell::new(0usize);
        let counter = crate::tokens::TokenCounter::new("gpt-4o", 1.0);
        let count = |s: &str| {
            calls.set(calls.get() + 1);
            counter.count(s)
        };
        for budget in [1, 50, 500, 2000, 100_000] {
            calls.set(0);
            let out = extractive_summary(&msgs, budget, &count);
            assert!(counter.count(&out) <= budget);
            assert!(calls.get() <= 40, "{budget}: {} calls", calls.get());
        }
    }

    #[test]
    fn large_transcript_fits() {
        let output = "o".repeat(4096);
        let texts: Vec<String> = (0..10_000)
            .map(|i| {
                format!(
                    "Message {i}: we found that step {i} is done. Never skip step {}.",
                    i % 50
                )
            })
            .collect();
        let msgs: Vec<SourceMessage<'_>> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut m = msg(if i % 2 == 0 { "user" } else { "assistant" }, i as i64, t);
                if i % 10 < 3 {
                    m.tools.push(SourceTool {
                        name: "read_file",
                        input: r#"{"path": "src/module.rs"}"#,
                        status: if i % 7 == 0 { "error" } else { "completed" },
                        output: Some(&output),
                        error: None,
                    });
                }
                m
            })
            .collect();
        let counter = crate::tokens::TokenCounter::new("gpt-4o", 1.0);
        let count = |s: &str| counter.count(s);
        let out = extractive_summary(&msgs, 2000, &count);
        assert!(count(&out) <= 2000);
        assert!(out.contains("Never skip step 0."));
        assert!(out.contains("## Goal"));
    }

    #[derive(Debug, Clone)]
    struct OwnedMsg {
        role: &'static str,
        texts: Vec<String>,
        tools: Vec<(String, String, &'static str, Option<String>)>,
        refs: Vec<(String, String)>,
    }

    fn arb_text() -> impl Strategy<Value = String> {
        let word = prop_oneof![
            3 => "[a-zA-Z]{1,8}",
            1 => prop::sample::select(vec![
                "must", "never", "Always", "don't", "only", "make sure", "avoid", "required",
                "found", "root cause", "because", "turns out", "TODO", "next", "still need",
                "remaining", "follow up", "fixed", "done", ". ", "! ", "\n", "src/a.rs", "é", "日本",
            ])
            .prop_map(str::to_owned),
        ];
        prop::collection::vec(word, 0..60).prop_map(|w| w.join(" "))
    }

    fn arb_msg() -> impl Strategy<Value = OwnedMsg> {
        let tool = (
            prop::sample::select(vec!["read_file", "bash", "edit", ""]),
            prop::sample::select(vec![
                r#"{"path": "src/main.rs"}"#,
                r#"{"file": "a/b/c", "x": 1}"#,
                "not json",
                r#"{"command": "ls -la"}"#,
            ]),
            prop::sample::select(vec!["completed", "error", "pending", "running"]),
            prop::option::of(arb_text()),
        )
            .prop_map(|(n, i, s, e)| (n.to_owned(), i.to_owned(), s, e));
        (
            prop::sample::select(vec!["user", "assistant", "system"]),
            prop::collection::vec(arb_text(), 0..3),
            prop::collection::vec(tool, 0..3),
            prop::collection::vec(("file_[0-9a-f]{8}", "[a-z]{1,6}\\.md"), 0..2),
        )
            .prop_map(|(role, texts, tools, refs)| OwnedMsg {
                role,
                texts,
                tools,
                refs,
            })
    }

    fn borrow(msgs: &[OwnedMsg]) -> Vec<SourceMessage<'_>> {
        msgs.iter()
            .enumerate()
            .map(|(i, m)| SourceMessage {
                role: m.role,
                seq: i as i64,
                texts: m.texts.iter().map(String::as_str).collect(),
                tools: m
                    .tools
                    .iter()
                    .map(|(n, inp, st, e)| SourceTool {
                        name: n,
                        input: inp,
                        status: st,
                        output: None,
                        error: e.as_deref(),
                    })
                    .collect(),
                file_refs: m
                    .refs
                    .iter()
                    .map(|(id, p)| SourceFileRef {
                        file_id: id,
                        path: p,
                    })
                    .collect(),
            })
            .collect()
    }

    /// Byte-by-byte reference for [`scan_sentences`]. Splits `text` into sentences (at newlines and at `.`, `!` or `?`
    /// followed by whitespace) and calls `emit` for each sentence that carries
    /// at least one tag. One pass over the bytes.
    fn scan_sentences_simple<'a>(text: &'a str, mut emit: impl FnMut(&'a str, Tags)) {
        let b = text.as_bytes();
        let mut start = 0;
        let mut tags = Tags::default();
        let mut prev = Kw::None;
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if is_word_byte(c) {
                let word_start = i;
                i += 1;
                while i < b.len() && is_word_byte(b[i]) {
                    i += 1;
                }
                let kw = word_kind(b, word_start, i);
                apply(&mut tags, prev, kw);
                prev = kw;
                continue;
            }
            let end = match c {
                b'\n' => Some(i),
                b'.' | b'!' | b'?' if b.get(i + 1).is_none_or(u8::is_ascii_whitespace) => {
                    Some(i + 1)
                }
                _ => None,
            };
            if let Some(end) = end {
                if tags.any() {
                    // Sentence bounds are ASCII bytes, so these are char boundaries.
                    emit(&text[start..end], tags);
                }
                start = i + 1;
                tags = Tags::default();
                prev = Kw::None;
            }
            i += 1;
        }
        if tags.any() && start < b.len() {
            emit(&text[start..], tags);
        }
    }

    fn is_word_byte(b: u8) -> bool {
        b.is_ascii_alphanumeric() || b == b'\'' || b >= 0x80
    }

    #[test]
    fn byte_classes() {
        for v in 0..=255u8 {
            for lane in 0..8 {
                let x = u64::from(v) << (8 * lane) | 0x2020_2020_2020_2020 & !(0xff << (8 * lane));
                let (words, marks) = classify8(x);
                assert_eq!(
                    (words >> lane) & 1 == 1,
                    is_word_byte(v),
                    "{v} in lane {lane}"
                );
                assert_eq!(
                    (marks >> lane) & 1 == 1,
                    matches!(v, b'\n' | b'.' | b'!' | b'?'),
                    "{v} in lane {lane}"
                );
                // The space bytes around it are neither.
                assert_eq!(words & !(1 << lane), 0);
                assert_eq!(marks & !(1 << lane), 0);
            }
        }
    }

    #[test]
    fn block_scanner_edges() {
        let long = "a".repeat(130);
        let cases = [
            format!("{} must", "x".repeat(59)),
            format!("{}must", " ".repeat(60)),
            format!("{}must here", " ".repeat(62)),
            format!("{long} must. {long}. Never {long}"),
            format!("{}. todo", "y".repeat(63)),
            format!("{}\nnever", "z".repeat(64)),
            "must".repeat(40),
            String::new(),
        ];
        for text in &cases {
            let mut fast = Vec::new();
            scan_sentences(text, |s, t| fast.push((s, t)));
            let mut simple = Vec::new();
            scan_sentences_simple(text, |s, t| simple.push((s, t)));
            assert_eq!(fast, simple, "{text:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn classify8_matches_scalar(bytes in prop::array::uniform8(any::<u8>())) {
            let (words, marks) = classify8(u64::from_le_bytes(bytes));
            for (lane, &v) in bytes.iter().enumerate() {
                prop_assert_eq!((words >> lane) & 1 == 1, is_word_byte(v));
                prop_assert_eq!(
                    (marks >> lane) & 1 == 1,
                    matches!(v, b'\n' | b'.' | b'!' | b'?')
                );
            }
            prop_assert_eq!(words >> 8, 0);
            prop_assert_eq!(marks >> 8, 0);
        }

        #[test]
        fn block_scanner_matches_simple_scanner(
            words in prop::collection::vec(
                prop_oneof![
                    "[a-zA-Z']{1,14}",
                    prop::sample::select(vec![
                        "must", "Never", "do", "not", "make", "sure", "follow", "up", "still",
                        "need", "TODO", "found", "fixed", "don\u{2019}t", "'only'", "é",
                    ]).prop_map(str::to_owned),
                    prop::sample::select(vec![
                        " ", "  ", ". ", "! ", "?", ".", "\n", "-", ", ", "\t", "...",
                    ]).prop_map(str::to_owned),
                ],
                0..200,
            )
        ) {
            let text = words.concat();
            let mut fast = Vec::new();
            scan_sentences(&text, |s, t| fast.push((s, t)));
            let mut simple = Vec::new();
            scan_sentences_simple(&text, |s, t| simple.push((s, t)));
            prop_assert_eq!(fast, simple);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn always_within_budget(
            msgs in prop::collection::vec(arb_msg(), 0..25),
            budget in 0usize..400,
        ) {
            let borrowed = borrow(&msgs);
            let counter = crate::tokens::TokenCounter::new("gpt-4o", 1.0);
            let tiktoken = |s: &str| counter.count(s);
            let out = extractive_summary(&borrowed, budget, &tiktoken);
            prop_assert!(tiktoken(&out) <= budget, "{} > {}", tiktoken(&out), budget);
            prop_assert_eq!(&out, &extractive_summary(&borrowed, budget, &tiktoken));

            let corrected = crate::tokens::TokenCounter::new("gpt-4", 1.9);
            let heavy = |s: &str| corrected.count(s);
            prop_assert!(heavy(&extractive_summary(&borrowed, budget, &heavy)) <= budget);

            let by_bytes = |s: &str| s.len();
            prop_assert!(extractive_summary(&borrowed, budget, &by_bytes).len() <= budget);
        }
    }
}
