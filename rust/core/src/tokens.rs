//! Token counting with the BPE tables shipped in `tiktoken-rs`.
//!
//! Counts are used for budgeting context windows, so they must be cheap,
//! deterministic and must never fail: special-token text such as
//! `<|endoftext|>` is counted as ordinary text.

use std::fmt;

use tiktoken_rs::CoreBPE;

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

    /// The process-wide BPE table; loaded on first use and shared afterwards.
    fn bpe(self) -> &'static CoreBPE {
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

/// Texts up to this many bytes are encoded in one call, without the run
/// scan below (see [`MAX_RUN`]): a run in them is far too short to trip the
/// regex and costs at most some milliseconds to merge, and skipping the scan
/// keeps short counts as fast as calling tiktoken directly.
const DIRECT_LIMIT: usize = 64 * 1024;
/// Larger texts are encoded in chunks of roughly this size, cut at
/// boundaries that the pre-tokenizer also cuts at, so the sum is exact and
/// the token vector per call stays small.
const CHUNK_TARGET: usize = 256 * 1024;
/// Runs of whitespace, or of non-whitespace, longer than this are split
/// before encoding. A run of about 1,000,000 non-newline whitespace
/// characters makes the regex fail, and a huge run of letters, punctuation
/// or whitespace becomes a single BPE piece whose merge cost grows faster
/// than linearly (1 MB of `a` or of newlines takes about 0.3 s). Only such runs make the count inexact, by at
/// most a couple of tokens per split.
const MAX_RUN: usize = 32 * 1024;

/// Counts tokens for one model, optionally scaled by a calibration factor.
///
/// Creating or cloning a counter is cheap: the BPE tables are process-wide
/// singletons (the first use of each encoding loads it, see [`warm`]).
#[derive(Clone)]
pub struct TokenCounter {
    encoding: Encoding,
    bpe: &'static CoreBPE,
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
            bpe: encoding.bpe(),
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
        let raw = count_raw(self.bpe, text);
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

/// Loads both BPE tables now, so the first real count does not pay the
/// one-off load cost (about 150 ms for o200k and 60 ms for cl100k).
pub fn warm() {
    let _ = Encoding::O200kBase.bpe();
    let _ = Encoding::Cl100kBase.bpe();
}

fn count_raw(bpe: &CoreBPE, text: &str) -> usize {
    if text.len() <= DIRECT_LIMIT {
        return bpe.encode_ordinary(text).len();
    }
    let mut total = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let cut = chunk_end(rest);
        let (chunk, tail) = rest.split_at(cut);
        total += count_chunk(bpe, chunk);
        rest = tail;
    }
    total
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
    use super::*;

    fn direct(enc: Encoding, text: &str) -> usize {
        enc.bpe().encode_ordinary(text).len()
    }

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
        for enc in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let counter = TokenCounter::new(
                if enc == Encoding::O200kBase {
                    "gpt-4o"
                } else {
                    "gpt-4"
                },
                1.0,
            );
            assert_eq!(counter.count(&big), direct(enc, &big));
        }
    }

    #[test]
    fn huge_letter_run_is_counted_in_linear_time() {
        let s = "a".repeat(2_000_000);
        let n = TokenCounter::new("gpt-4o", 1.0).count(&s);
        // 8 letters per token for this run, give or take the split points.
        assert!((249_000..=251_000).contains(&n), "{n}");
    }

    #[test]
    fn huge_newline_run_is_counted_in_linear_time() {
        let s = "\n".repeat(2_000_000);
        let n = TokenCounter::new("gpt-4", 1.0).count(&s);
        assert!((62_000..=63_000).contains(&n), "{n}");
    }

    #[test]
    fn huge_whitespace_run_does_not_fail() {
        // A run this long makes the library's own encode panic.
        let mut s = String::from("start");
        s.push_str(&" ".repeat(1_100_000));
        s.push_str("end");
        for model in ["gpt-4o", "gpt-4"] {
            let n = TokenCounter::new(model, 1.0).count(&s);
            assert!(n > 2 && n < 20_000, "{model}: {n}");
        }
    }

    #[test]
    fn counter_is_send_sync_and_clone() {
        fn assert_traits<T: Send + Sync + Clone>() {}
        assert_traits::<TokenCounter>();
        warm();
    }
}
