//! Text into words: runs of word characters ([`super::is_word_char`]), and in
//! Chinese, Japanese and Korean, which do not put spaces between words,
//! overlapping pairs of characters. A pair of neighbours is the unit search
//! engines index such text in without a dictionary: a word of two or more
//! characters is found as the pairs it is made of, in order.

use std::collections::VecDeque;

use super::is_word_char;

/// What a piece of text is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WordKind {
    /// A word of a language written with spaces, or a number.
    Word,
    /// A pair of neighbouring ideographs, kana or hangul (a lone one when its
    /// run has one character).
    Pair,
}

/// A word and where it is in the text (byte offsets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Word<'a> {
    pub text: &'a str,
    pub start: usize,
    pub end: usize,
    pub kind: WordKind,
}

/// Whether `c` is written without spaces between words: CJK ideographs,
/// Japanese kana, Korean hangul.
#[must_use]
pub fn is_unspaced(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF      // Hangul Jamo
        | 0x3040..=0x30FF    // Hiragana, Katakana
        | 0x3130..=0x318F    // Hangul compatibility Jamo
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0x20000..=0x3FFFF) // CJK extensions B and later
}

/// The words of `text`, in order.
#[must_use]
pub fn words(text: &str) -> Words<'_> {
    Words {
        text,
        pos: 0,
        queued: VecDeque::new(),
    }
}

/// Iterator over the words of a text (see [`words`]).
pub struct Words<'a> {
    text: &'a str,
    pos: usize,
    /// Words of the current run not yet returned.
    queued: VecDeque<Word<'a>>,
}

impl<'a> Iterator for Words<'a> {
    type Item = Word<'a>;

    fn next(&mut self) -> Option<Word<'a>> {
        loop {
            if let Some(word) = self.queued.pop_front() {
                return Some(word);
            }
            let rest = &self.text[self.pos..];
            let start = self.pos + rest.find(is_word_char)?;
            let run = &self.text[start..];
            let end = start + run.find(|c| !is_word_char(c)).unwrap_or(run.len());
            self.pos = end;
            split_run(self.text, start, end, &mut self.queued);
        }
    }
}

/// Splits one run of word characters into plain words and pairs.
fn split_run<'a>(text: &'a str, start: usize, end: usize, out: &mut VecDeque<Word<'a>>) {
    let run = &text[start..end];
    if run.is_ascii() {
        out.push_back(word(text, start, end, WordKind::Word));
        return;
    }
    let mut piece_start = start;
    let mut unspaced: Vec<(usize, usize)> = Vec::new();
    for (offset, c) in run.char_indices() {
        let at = start + offset;
        if is_unspaced(c) {
            if unspaced.is_empty() && piece_start < at {
                out.push_back(word(text, piece_start, at, WordKind::Word));
            }
            unspaced.push((at, at + c.len_utf8()));
            piece_start = at + c.len_utf8();
        } else if !unspaced.is_empty() {
            pairs(text, &unspaced, out);
            unspaced.clear();
            piece_start = at;
        }
    }
    if unspaced.is_empty() {
        if piece_start < end {
            out.push_back(word(text, piece_start, end, WordKind::Word));
        }
    } else {
        pairs(text, &unspaced, out);
    }
}

/// Overlapping pairs of the characters at `chars` (byte ranges), or the one.
fn pairs<'a>(text: &'a str, chars: &[(usize, usize)], out: &mut VecDeque<Word<'a>>) {
    if let [(start, end)] = chars {
        out.push_back(word(text, *start, *end, WordKind::Pair));
        return;
    }
    for pair in chars.windows(2) {
        out.push_back(word(text, pair[0].0, pair[1].1, WordKind::Pair));
    }
}

fn word(text: &str, start: usize, end: usize, kind: WordKind) -> Word<'_> {
    Word {
        text: &text[start..end],
        start,
        end,
        kind,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn texts(text: &str) -> Vec<&str> {
        words(text).map(|word| word.text).collect()
    }

    #[test]
    fn spaced_text_splits_on_what_is_not_a_word_character() {
        assert_eq!(
            texts("rotate the key_v2, now!"),
            ["rotate", "the", "key", "v2", "now"]
        );
        assert_eq!(texts("Café crème"), ["Café", "crème"]);
        assert!(texts("  ... ").is_empty());
    }

    #[test]
    fn unspaced_runs_become_overlapping_pairs() {
        assert_eq!(texts("東京都"), ["東京", "京都"]);
        assert_eq!(texts("東"), ["東"]);
        assert_eq!(texts("API東京v2"), ["API", "東京", "v2"]);
        assert_eq!(texts("서울 특별시"), ["서울", "특별", "별시"]);
        let kinds: Vec<WordKind> = words("key 東京").map(|w| w.kind).collect();
        assert_eq!(kinds, [WordKind::Word, WordKind::Pair]);
    }

    proptest! {
        #[test]
        fn words_are_in_order_and_point_at_their_text(text in "\\PC{0,60}") {
            let mut last_start = 0;
            for word in words(&text) {
                prop_assert_eq!(&text[word.start..word.end], word.text);
                prop_assert!(word.start >= last_start);
                prop_assert!(!word.text.is_empty());
                prop_assert!(word.text.chars().all(is_word_char));
                last_start = word.start;
            }
        }
    }
}
