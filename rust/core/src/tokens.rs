//! Token counting for the OpenAI BPE encodings.
//!
//! Counts are used for budgeting context windows, so they must be cheap,
//! deterministic and must never fail: special-token text such as
//! `<|endoftext|>` is counted as ordinary text.
//!
//! Counts are those of `tiktoken-rs`'s `encode_ordinary`, token for token,
//! but most text is counted with `toktok`, an exact BPE encoder about ten
//! times faster. The two split text with the same pattern; they differ only
//! in the Unicode tables behind it (`toktok` ships Unicode 17, the regex
//! engine under `tiktoken-rs` Unicode 16), so text containing one of the
//! characters whose class changed is counted with `tiktoken-rs` itself.

use std::fmt;
use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;
use toktok::Tokenizer;

/// A BPE encoding supported by [`TokenCounter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// `o200k_base`: GPT-4o, GPT-4.1, GPT-4.5, GPT-5 and the o-series.
    O200kBase,
    /// `cl100k_base`: GPT-4, GPT-3.5, the embedding models, and the default
    /// approximation for every other provider.
    Cl100kBase,
}

impl Encoding {
    /// The canonical tiktoken name of the encoding.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
        }
    }

    /// The process-wide fast encoder. Its tables are compiled into the binary
    /// (`rust/vendor/toktok-rs`), so making it reads them in place.
    fn fast(self) -> &'static Tokenizer {
        static O200K: OnceLock<Tokenizer> = OnceLock::new();
        static CL100K: OnceLock<Tokenizer> = OnceLock::new();
        let cell = match self {
            Encoding::O200kBase => &O200K,
            Encoding::Cl100kBase => &CL100K,
        };
        cell.get_or_init(|| {
            Tokenizer::builtin(self.name()).expect("the encoder tables are embedded in the crate")
        })
    }

    /// The reference encoder, for the rare text the fast one would count
    /// differently; loaded on first such text.
    fn reference(self) -> &'static CoreBPE {
        match self {
            Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
            Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
        }
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Picks the encoding for a model name such as `"openai/gpt-4o-mini"`.
///
/// Anything up to the last `/` is treated as a provider prefix and ignored,
/// as is the `ft:` prefix of fine-tuned models; matching is case-insensitive.
/// Models without a known tiktoken encoding (Anthropic, Google, local
/// models, ...) get `cl100k_base`, which is a reasonable approximation that
/// the correction factor can calibrate.
#[must_use]
pub fn encoding_for_model(model: &str) -> Encoding {
    // gpt-oss uses o200k_harmony, whose ordinary (non-special) tokens are
    // exactly o200k_base's, and this counter never emits special tokens.
    const O200K_PREFIXES: [&str; 6] = [
        "gpt-4o",
        "gpt-4.1",
        "gpt-4.5",
        "gpt-5",
        "chatgpt-4o",
        "gpt-oss",
    ];
    let name = model.rsplit('/').next().unwrap_or(model).trim();
    let name = name.to_ascii_lowercase();
    // Fine-tuned models ("ft:gpt-4o-mini:org::id") use their base model's encoding.
    let name = name.strip_prefix("ft:").unwrap_or(&name);
    let o_series = {
        let b = name.as_bytes();
        b.len() >= 2 && b[0] == b'o' && b[1].is_ascii_digit()
    };
    if o_series || O200K_PREFIXES.iter().any(|p| name.starts_with(p)) {
        Encoding::O200kBase
    } else {
        Encoding::Cl100kBase
    }
}

/// Lower and upper bounds for the correction factor; anything outside this
/// range would indicate a broken calibration rather than a tokenizer mismatch.
const MIN_CORRECTION: f64 = 0.5;
const MAX_CORRECTION: f64 = 2.0;

/// Larger texts are encoded in chunks of roughly this size, cut at
/// boundaries that the pre-tokenizer also cuts at, so the sum is exact, the
/// token vector per call stays small, and a chunk that needs the reference
/// encoder does not send the rest of the text there with it.
const CHUNK_TARGET: usize = 256 * 1024;
/// Reference encoder only: texts up to this many bytes are encoded in one
/// call, without the run scan below (see [`MAX_RUN`]); a run in them is far
/// too short to trip its regex.
const DIRECT_LIMIT: usize = 64 * 1024;
/// Reference encoder only: runs of whitespace, or of non-whitespace, longer
/// than this are split before encoding. A run of about 1,000,000
/// non-newline whitespace characters makes its regex fail, and a huge run of
/// letters, punctuation or whitespace becomes a single BPE piece whose merge
/// cost grows faster than linearly (1 MB of `a` or of newlines takes about
/// 0.3 s). Only such runs, in text that also holds one of the characters
/// of [`UNICODE_17_CHANGES`], make a count inexact, by at most a couple of
/// tokens per split. The fast encoder is linear on any run and needs no
/// split.
const MAX_RUN: usize = 32 * 1024;

/// Characters whose class (letter, number, whitespace, and for `o200k_base`
/// upper- or lowercase-like) differs between Unicode 17, which `toktok`'s
/// tables follow, and Unicode 16, which the regex under `tiktoken-rs`
/// follows: the characters new in Unicode 17 and U+0295, which became `Lo`.
/// The `unicode_tables_agree_outside_the_changed_characters` test checks
/// every other character, so a table update on either side shows up there.
const UNICODE_17_CHANGES: [(char, char); 28] = [
    ('\u{0295}', '\u{0295}'),
    ('\u{088F}', '\u{088F}'),
    ('\u{0C5C}', '\u{0C5C}'),
    ('\u{0CDC}', '\u{0CDC}'),
    ('\u{1ACF}', '\u{1ADD}'),
    ('\u{1AE0}', '\u{1AEB}'),
    ('\u{A7CE}', '\u{A7CF}'),
    ('\u{A7D2}', '\u{A7D2}'),
    ('\u{A7D4}', '\u{A7D4}'),
    ('\u{A7F1}', '\u{A7F1}'),
    ('\u{10940}', '\u{10959}'),
    ('\u{10EC5}', '\u{10EC7}'),
    ('\u{10EFA}', '\u{10EFB}'),
    ('\u{11B60}', '\u{11B67}'),
    ('\u{11DB0}', '\u{11DDB}'),
    ('\u{11DE0}', '\u{11DE9}'),
    ('\u{16EA0}', '\u{16EB8}'),
    ('\u{16EBB}', '\u{16ED3}'),
    ('\u{16FF2}', '\u{16FF6}'),
    ('\u{187F8}', '\u{187FF}'),
    ('\u{18D09}', '\u{18D1E}'),
    ('\u{18D80}', '\u{18DF2}'),
    ('\u{1E6C0}', '\u{1E6DE}'),
    ('\u{1E6E0}', '\u{1E6F5}'),
    ('\u{1E6FE}', '\u{1E6FF}'),
    ('\u{2B73A}', '\u{2B73F}'),
    ('\u{2CEA2}', '\u{2CEAD}'),
    ('\u{323B0}', '\u{33479}'),
];

/// Counts tokens for one model, optionally scaled by a calibration factor.
///
/// Creating or cloning a counter is cheap: the BPE tables are process-wide
/// singletons (the first use of each encoding loads it, see [`warm`]).
#[derive(Clone)]
pub struct TokenCounter {
    encoding: Encoding,
    fast: &'static Tokenizer,
    correction: f64,
}

impl fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenCounter")
            .field("encoding", &self.encoding)
            .field("correction", &self.correction)
            .finish_non_exhaustive()
    }
}

impl TokenCounter {
    /// Creates a counter for `model` (see [`encoding_for_model`]).
    ///
    /// `correction` multiplies raw counts; it is calibrated from
    /// provider-reported usage and clamped to `[0.5, 2.0]`. `1.0` means no
    /// correction; NaN is treated as `1.0`.
    #[must_use]
    pub fn new(model: &str, correction: f64) -> TokenCounter {
        let encoding = encoding_for_model(model);
        let correction = if correction.is_nan() {
            1.0
        } else {
            correction.clamp(MIN_CORRECTION, MAX_CORRECTION)
        };
        TokenCounter {
            encoding,
            fast: encoding.fast(),
            correction,
        }
    }

    /// The encoding this counter uses.
    #[must_use]
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// The effective (clamped) correction factor.
    #[must_use]
    pub fn correction(&self) -> f64 {
        self.correction
    }

    /// Number of tokens in `text`, scaled by the correction factor and
    /// rounded up. Never fails; the empty string counts as 0.
    #[must_use]
    pub fn count(&self, text: &str) -> usize {
        let raw = count_raw(self.encoding, self.fast, text);
        #[allow(clippy::float_cmp)] // exactly 1.0 is the "no correction" marker
        let uncorrected = self.correction == 1.0;
        if uncorrected || raw == 0 {
            raw
        } else {
            (raw as f64 * self.correction).ceil() as usize
        }
    }

    /// Counts each text; equivalent to mapping [`TokenCounter::count`].
    #[must_use]
    pub fn count_many(&self, texts: &[&str]) -> Vec<usize> {
        texts.iter().map(|t| self.count(t)).collect()
    }
}

/// Loads both encoders now, so the first real count does not pay the
/// one-off load cost (a few hundred milliseconds for o200k, less for
/// cl100k). The reference tables, needed only for text with characters new
/// in Unicode 17, still load on first such text.
pub fn warm() {
    let _ = Encoding::O200kBase.fast();
    let _ = Encoding::Cl100kBase.fast();
}

fn count_raw(encoding: Encoding, fast: &Tokenizer, text: &str) -> usize {
    if text.len() <= CHUNK_TARGET {
        return count_piece(encoding, fast, text);
    }
    let mut total = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let cut = chunk_end(rest);
        let (chunk, tail) = rest.split_at(cut);
        total += count_piece(encoding, fast, chunk);
        rest = tail;
    }
    total
}

/// Counts a text, or a chunk of one, with whichever encoder counts it the
/// way `tiktoken-rs` does.
fn count_piece(encoding: Encoding, fast: &Tokenizer, text: &str) -> usize {
    if has_changed_class(text) {
        count_reference(encoding.reference(), text)
    } else {
        fast.count(text.as_bytes())
    }
}

/// Whether `text` holds a character of [`UNICODE_17_CHANGES`].
fn has_changed_class(text: &str) -> bool {
    // The first changed character, U+0295, is encoded as 0xCA 0x95, so only
    // characters starting with a byte of 0xCA or more need decoding. Such a
    // byte is always the first of a character.
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] < 0xCA {
            i += 1;
            continue;
        }
        let Some(c) = text[i..].chars().next() else {
            break;
        };
        if UNICODE_17_CHANGES
            .binary_search_by(|&(lo, hi)| {
                if hi < c {
                    std::cmp::Ordering::Less
                } else if lo > c {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .is_ok()
        {
            return true;
        }
        i += c.len_utf8();
    }
    false
}

fn count_reference(bpe: &CoreBPE, text: &str) -> usize {
    if text.len() <= DIRECT_LIMIT {
        bpe.encode_ordinary(text).len()
    } else {
        count_chunk(bpe, text)
    }
}

/// End of the next chunk of `text`: just after a newline at or beyond
/// `CHUNK_TARGET` that is followed by a character which no pre-tokenizer
/// piece can join to that newline (not whitespace, not `/`), or the whole
/// text when there is no such newline.
fn chunk_end(text: &str) -> usize {
    let bytes = text.as_bytes();
    if bytes.len() <= CHUNK_TARGET {
        return bytes.len();
    }
    let mut from = CHUNK_TARGET;
    while let Some(i) = memchr::memchr(b'\n', &bytes[from..]) {
        let after = from + i + 1;
        match text[after..].chars().next() {
            None => return bytes.len(),
            Some(c) if !c.is_whitespace() && c != '/' => return after,
            Some(_) => from = after,
        }
    }
    bytes.len()
}

/// Counts a chunk, splitting overlong runs (see [`MAX_RUN`]).
fn count_chunk(bpe: &CoreBPE, chunk: &str) -> usize {
    let mut total = 0;
    let mut seg_start = 0;
    let mut run = 0usize;
    let mut run_is_space = false;
    for (i, c) in chunk.char_indices() {
        // Newlines count as whitespace: a run of them, or of mixed spaces and
        // newlines, is a single pre-tokenizer piece too.
        let is_space = c.is_whitespace();
        if run > 0 && is_space == run_is_space {
            run += 1;
        } else {
            run = 1;
            run_is_space = is_space;
        }
        if run > MAX_RUN {
            total += bpe.encode_ordinary(&chunk[seg_start..i]).len();
            seg_start = i;
            run = 1;
        }
    }
    total + bpe.encode_ordinary(&chunk[seg_start..]).len()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn direct(enc: Encoding, text: &str) -> usize {
        enc.reference().encode_ordinary(text).len()
    }

    fn counter_for(enc: Encoding) -> TokenCounter {
        let model = match enc {
            Encoding::O200kBase => "gpt-4o",
            Encoding::Cl100kBase => "gpt-4",
        };
        TokenCounter::new(model, 1.0)
    }

    const BOTH: [Encoding; 2] = [Encoding::O200kBase, Encoding::Cl100kBase];

    #[test]
    fn hello_world_is_two_tokens() {
        for model in ["gpt-4o", "gpt-4"] {
            assert_eq!(TokenCounter::new(model, 1.0).count("hello world"), 2);
        }
    }

    #[test]
    fn matches_library_counts() {
        let samples = [
            "",
            "a",
            "The quick brown fox jumps over the lazy dog.",
            "fn main() {\n    println!(\"hi\");\n}\n",
            "Ünïcödé テキスト 🙂 mixed",
            "    indented\n\n\n\ttabs",
            "file_0123abcd and src/lib.rs:42",
        ];
        for (model, enc) in [
            ("gpt-4o", Encoding::O200kBase),
            ("gpt-4", Encoding::Cl100kBase),
        ] {
            let counter = TokenCounter::new(model, 1.0);
            assert_eq!(counter.encoding(), enc);
            for s in samples {
                assert_eq!(counter.count(s), direct(enc, s), "{model}: {s:?}");
            }
        }
    }

    #[test]
    fn special_tokens_are_ordinary_text() {
        let c = TokenCounter::new("gpt-4o", 1.0);
        let n = c.count("<|endoftext|>");
        assert!(n > 1, "special token text must not collapse to one token");
        assert_eq!(n, direct(Encoding::O200kBase, "<|endoftext|>"));
        let c = TokenCounter::new("gpt-4", 1.0);
        assert_eq!(
            c.count("a <|endofprompt|> b"),
            direct(Encoding::Cl100kBase, "a <|endofprompt|> b")
        );
    }

    #[test]
    fn empty_is_zero_even_with_correction() {
        assert_eq!(TokenCounter::new("gpt-4o", 1.7).count(""), 0);
    }

    #[test]
    fn model_mapping() {
        let table = [
            ("gpt-4o", Encoding::O200kBase),
            ("gpt-4o-mini", Encoding::O200kBase),
            ("openai/gpt-4o-2024-08-06", Encoding::O200kBase),
            ("azure/GPT-4.1-nano", Encoding::O200kBase),
            ("gpt-4.5-preview", Encoding::O200kBase),
            ("gpt-5", Encoding::O200kBase),
            ("openrouter/openai/gpt-5-mini", Encoding::O200kBase),
            ("chatgpt-4o-latest", Encoding::O200kBase),
            ("o1", Encoding::O200kBase),
            ("o1-preview", Encoding::O200kBase),
            ("o3-mini", Encoding::O200kBase),
            ("openai/o4-mini", Encoding::O200kBase),
            ("ft:gpt-4o-mini-2024-07-18:org::abc123", Encoding::O200kBase),
            ("ft:gpt-3.5-turbo:org:name:id", Encoding::Cl100kBase),
            ("gpt-oss-120b", Encoding::O200kBase),
            ("groq/openai/gpt-oss-20b", Encoding::O200kBase),
            ("gpt-4", Encoding::Cl100kBase),
            ("gpt-4-turbo", Encoding::Cl100kBase),
            ("gpt-4-0613", Encoding::Cl100kBase),
            ("gpt-3.5-turbo", Encoding::Cl100kBase),
            ("text-embedding-3-small", Encoding::Cl100kBase),
            ("anthropic/claude-sonnet-4", Encoding::Cl100kBase),
            ("gemini-2.5-pro", Encoding::Cl100kBase),
            ("ollama/llama3", Encoding::Cl100kBase),
            ("omni", Encoding::Cl100kBase),
            ("o", Encoding::Cl100kBase),
            ("", Encoding::Cl100kBase),
        ];
        for (model, enc) in table {
            assert_eq!(encoding_for_model(model), enc, "{model}");
        }
        assert_eq!(Encoding::O200kBase.name(), "o200k_base");
        assert_eq!(Encoding::Cl100kBase.name(), "cl100k_base");
    }

    #[test]
    fn correction_is_applied_and_clamped() {
        let text = "The quick brown fox jumps over the lazy dog.";
        let raw = TokenCounter::new("gpt-4o", 1.0).count(text);
        assert_eq!(raw, 10);
        let c = TokenCounter::new("gpt-4o", 1.15);
        assert!((c.correction() - 1.15).abs() < f64::EPSILON);
        assert_eq!(c.count(text), 12); // ceil(11.5)
        assert!((TokenCounter::new("x", 9.0).correction() - 2.0).abs() < f64::EPSILON);
        assert!((TokenCounter::new("x", 0.1).correction() - 0.5).abs() < f64::EPSILON);
        assert!((TokenCounter::new("x", -3.0).correction() - 0.5).abs() < f64::EPSILON);
        assert!((TokenCounter::new("x", f64::NAN).correction() - 1.0).abs() < f64::EPSILON);
        assert!((TokenCounter::new("x", f64::INFINITY).correction() - 2.0).abs() < f64::EPSILON);
        assert_eq!(TokenCounter::new("gpt-4o", 0.5).count(text), 5);
    }

    #[test]
    fn count_many_matches_count() {
        let c = TokenCounter::new("gpt-4o", 1.3);
        let texts = ["hello world", "", "a b c d e f", "<|endoftext|>"];
        let many = c.count_many(&texts);
        let single: Vec<usize> = texts.iter().map(|t| c.count(t)).collect();
        assert_eq!(many, single);
        assert!(c.count_many(&[]).is_empty());
    }

    #[test]
    fn chunked_count_is_exact_for_large_text() {
        let para = "Line with words, numbers 12345 and punctuation;\n/path/starts/line.rs\n\
                    \t  indented code { x: 1 }\n\n\nUnicode: café テキスト\n  \n";
        let big = para.repeat((3 * CHUNK_TARGET) / para.len());
        assert!(big.len() > 2 * CHUNK_TARGET);
        for enc in BOTH {
            assert_eq!(counter_for(enc).count(&big), direct(enc, &big));
            // A changed character in one chunk sends only that chunk to the
            // reference encoder; the sum stays exact.
            let mixed = format!("{big}\u{323B0}'s {big}");
            assert_eq!(counter_for(enc).count(&mixed), direct(enc, &mixed));
        }
    }

    #[test]
    fn huge_letter_run_is_counted_in_linear_time() {
        let s = "a".repeat(2_000_000);
        // One piece of 8-letter tokens.
        assert_eq!(TokenCounter::new("gpt-4o", 1.0).count(&s), 250_000);
    }

    #[test]
    fn huge_newline_run_is_counted_in_linear_time() {
        let s = "\n".repeat(2_000_000);
        assert_eq!(TokenCounter::new("gpt-4", 1.0).count(&s), 62_500);
    }

    #[test]
    fn huge_whitespace_run_does_not_fail() {
        // A run this long makes the reference encoder panic.
        let mut s = String::from("start");
        s.push_str(&" ".repeat(1_100_000));
        s.push_str("end");
        for model in ["gpt-4o", "gpt-4"] {
            let n = TokenCounter::new(model, 1.0).count(&s);
            assert!(n > 2 && n < 20_000, "{model}: {n}");
        }
        // The same run next to a changed character goes to the reference
        // encoder, split into runs it can handle.
        s.push('\u{0295}');
        for model in ["gpt-4o", "gpt-4"] {
            let n = TokenCounter::new(model, 1.0).count(&s);
            assert!(n > 2 && n < 20_000, "{model}: {n}");
        }
    }

    #[test]
    fn changed_characters_are_counted_like_the_reference() {
        // The fast encoder counts each of these but the last one token short:
        // its tables make the unassigned character a letter, a digit, or (for
        // o200k, U+1AD2) a mark, which joins it to its neighbour.
        let samples = [
            "\u{3275D}.g",
            "\u{330D2}'s",
            "\u{A7D4}/z",
            "\u{1E6C9}_s",
            "\u{1AD2}=z",
            " \u{11DE0}.x",
            "a \u{16FF4}.x",
            "\u{0295}Ab \u{0295}AB's",
        ];
        for enc in BOTH {
            let counter = counter_for(enc);
            for s in samples {
                assert!(has_changed_class(s), "{s:?}");
                assert_eq!(counter.count(s), direct(enc, s), "{enc}: {s:?}");
            }
        }
        assert!(!has_changed_class(
            "plain ascii, café, テキスト 🙂, \u{0294}\u{0296}"
        ));
        assert!(has_changed_class("x\u{33479}"));
        assert!(!has_changed_class("x\u{3347A}"));
    }

    /// Contexts that make each of the pre-tokenizer pattern's classes matter
    /// around a character.
    const CONTEXTS: [(&str, &str); 6] = [
        ("a", "b"),
        ("A", "a's"),
        ("1", "2"),
        (" ", ".x"),
        ("'", "t"),
        ("x ", " \n"),
    ];

    /// Every character outside [`UNICODE_17_CHANGES`], in `contexts`, is encoded by
    /// the fast encoder exactly as by the reference one. The check runs over every
    /// character, so it is split by encoding and context into tests the harness
    /// runs side by side.
    fn tables_agree_outside_the_changed_characters(enc: Encoding, contexts: &[(&str, &str)]) {
        let chars: Vec<char> = ('\0'..=char::MAX)
            .filter(|&c| !has_changed_class(c.encode_utf8(&mut [0; 4])))
            .collect();
        let (fast, reference) = (enc.fast(), enc.reference());
        for &(before, after) in contexts {
            for block in chars.chunks(4096) {
                let mut text = String::with_capacity(block.len() * 16);
                for &c in block {
                    text.push_str(before);
                    text.push(c);
                    text.push_str(after);
                    text.push('\n');
                }
                assert_eq!(
                    fast.encode(text.as_bytes()),
                    reference.encode_ordinary(&text),
                    "{enc}: context {before:?} {after:?}, block from {:?}",
                    block[0]
                );
            }
        }
    }

    #[test]
    fn o200k_tables_agree_in_letter_and_digit_contexts() {
        tables_agree_outside_the_changed_characters(BOTH[0], &CONTEXTS[..3]);
    }

    #[test]
    fn o200k_tables_agree_in_space_and_quote_contexts() {
        tables_agree_outside_the_changed_characters(BOTH[0], &CONTEXTS[3..]);
    }

    #[test]
    fn cl100k_tables_agree_in_letter_and_digit_contexts() {
        tables_agree_outside_the_changed_characters(BOTH[1], &CONTEXTS[..3]);
    }

    #[test]
    fn cl100k_tables_agree_in_space_and_quote_contexts() {
        tables_agree_outside_the_changed_characters(BOTH[1], &CONTEXTS[3..]);
    }

    /// Pieces that exercise each part of the pre-tokenizer pattern: cases,
    /// contractions, digits, whitespace before newlines, marks, special-token
    /// text, and characters whose class changed in Unicode 17.
    const ATOMS: [&str; 40] = [
        " ",
        "  ",
        "\t",
        "\n",
        "\r\n",
        "\n\n ",
        "\u{a0}",
        "\u{3000}",
        "a",
        "Z",
        "hello",
        "World",
        "HTTPServer",
        "'s",
        "'LL",
        "\u{2019}t",
        "'",
        "7",
        "12345",
        "\u{661}\u{662}",
        ".",
        "/",
        "::",
        "=>",
        "{",
        "_",
        "-",
        "<|endoftext|>",
        "caf\u{e9}",
        "e\u{301}",
        "\u{1c5}",
        "\u{2b0}",
        "\u{5f20}\u{4e09}",
        "\u{30c6}\u{30ad}",
        "\u{1f642}",
        "\u{1f468}\u{200d}\u{1f469}",
        "\u{0295}",
        "\u{323B0}",
        "\u{1E6C0}",
        "\u{10FFFF}",
    ];

    fn atom_text() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(&ATOMS[..]), 0..48).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn counts_equal_the_reference_on_arbitrary_text(text in any::<String>()) {
            for enc in BOTH {
                prop_assert_eq!(counter_for(enc).count(&text), direct(enc, &text), "{}", enc);
            }
        }

        #[test]
        fn counts_equal_the_reference_on_pattern_pieces(text in atom_text()) {
            for enc in BOTH {
                prop_assert_eq!(counter_for(enc).count(&text), direct(enc, &text), "{}", enc);
            }
        }

        #[test]
        fn counts_equal_the_reference_on_ascii(text in "[ -~\t\n\r]{0,200}") {
            for enc in BOTH {
                prop_assert_eq!(counter_for(enc).count(&text), direct(enc, &text), "{}", enc);
            }
        }
    }

    #[test]
    fn counter_is_send_sync_and_clone() {
        fn assert_traits<T: Send + Sync + Clone>() {}
        assert_traits::<TokenCounter>();
        warm();
    }
}
