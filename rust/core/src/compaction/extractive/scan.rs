//! Lexical scanning: sentence splitting and keyword tagging, JSON string
//! extraction and the file-path heuristic.

use std::borrow::Cow;

/// What a sentence is evidence of, as a set of flags.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Tags(u8);

impl Tags {
    pub(super) const RULE: u8 = 1;
    pub(super) const DISCOVERY: u8 = 2;
    pub(super) const REMAINING: u8 = 4;
    pub(super) const DONE: u8 = 8;

    pub(super) fn any(self) -> bool {
        self.0 != 0
    }

    pub(super) fn has(self, flag: u8) -> bool {
        self.0 & flag != 0
    }

    fn set(&mut self, flag: u8) {
        self.0 |= flag;
    }
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
pub(super) enum Kw {
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
pub(super) const KEYWORDS: [(&str, Kw); 42] = [
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
pub(super) fn word_kind(b: &[u8], start: usize, end: usize) -> Kw {
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
pub(super) fn apply(tags: &mut Tags, prev: Kw, kw: Kw) {
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
pub(super) fn classify8(x: u64) -> (u64, u64) {
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
pub(super) fn scan_sentences<'a>(text: &'a str, mut emit: impl FnMut(&'a str, Tags)) {
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
pub(super) fn scan_json_strings<'a>(json: &'a str, mut f: impl FnMut(Cow<'a, str>)) {
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
pub(super) fn looks_like_path(s: &str) -> bool {
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
