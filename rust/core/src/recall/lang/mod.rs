//! Words of many languages for the full-text index: how text splits into
//! words, which language a text is written in, each language's stemmer and
//! stopwords, and how a word is folded (lowercase, without diacritics).
//!
//! The index stems a document's words with the stemmer of the language it is
//! detected in ([`detect`]); a query stems each of its words with every language
//! the index holds, so "Schlüssel" finds "Schlüsseln" in German text and
//! "rotated" finds "rotates" in English text. Chinese, Japanese and Korean have
//! no spaces between words: their runs are indexed as overlapping pairs of
//! characters ([`segment`]).

mod detect;
mod english;
pub mod segment;
mod stopwords;

use std::borrow::Cow;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

pub use detect::{detect, query_language, SAMPLE_BYTES};
pub use stopwords::is_stopword;

/// A language the index stems: those Snowball has a stemmer for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Language {
    English,
    Arabic,
    Danish,
    Dutch,
    Finnish,
    French,
    German,
    Greek,
    Hungarian,
    Italian,
    Norwegian,
    Portuguese,
    Romanian,
    Russian,
    Spanish,
    Swedish,
    Tamil,
    Turkish,
}

impl Language {
    /// Every language, English (the default) first.
    pub const ALL: [Language; 18] = [
        Language::English,
        Language::Arabic,
        Language::Danish,
        Language::Dutch,
        Language::Finnish,
        Language::French,
        Language::German,
        Language::Greek,
        Language::Hungarian,
        Language::Italian,
        Language::Norwegian,
        Language::Portuguese,
        Language::Romanian,
        Language::Russian,
        Language::Spanish,
        Language::Swedish,
        Language::Tamil,
        Language::Turkish,
    ];

    /// The ISO 639-1 code, as the database stores it.
    #[must_use]
    pub fn code(self) -> &'static str {
        match self {
            Language::English => "en",
            Language::Arabic => "ar",
            Language::Danish => "da",
            Language::Dutch => "nl",
            Language::Finnish => "fi",
            Language::French => "fr",
            Language::German => "de",
            Language::Greek => "el",
            Language::Hungarian => "hu",
            Language::Italian => "it",
            Language::Norwegian => "no",
            Language::Portuguese => "pt",
            Language::Romanian => "ro",
            Language::Russian => "ru",
            Language::Spanish => "es",
            Language::Swedish => "sv",
            Language::Tamil => "ta",
            Language::Turkish => "tr",
        }
    }

    /// The language of an ISO 639-1 code; `None` for one the index does not stem.
    #[must_use]
    pub fn from_code(code: &str) -> Option<Language> {
        Language::ALL.into_iter().find(|lang| lang.code() == code)
    }

    /// This language's bit in a [`LanguageSet`].
    #[must_use]
    pub fn bit(self) -> u32 {
        1 << (self as u32)
    }

    fn algorithm(self) -> Algorithm {
        match self {
            Language::English => Algorithm::English,
            Language::Arabic => Algorithm::Arabic,
            Language::Danish => Algorithm::Danish,
            Language::Dutch => Algorithm::Dutch,
            Language::Finnish => Algorithm::Finnish,
            Language::French => Algorithm::French,
            Language::German => Algorithm::German,
            Language::Greek => Algorithm::Greek,
            Language::Hungarian => Algorithm::Hungarian,
            Language::Italian => Algorithm::Italian,
            Language::Norwegian => Algorithm::Norwegian,
            Language::Portuguese => Algorithm::Portuguese,
            Language::Romanian => Algorithm::Romanian,
            Language::Russian => Algorithm::Russian,
            Language::Spanish => Algorithm::Spanish,
            Language::Swedish => Algorithm::Swedish,
            Language::Tamil => Algorithm::Tamil,
            Language::Turkish => Algorithm::Turkish,
        }
    }
}

/// A set of languages, one bit each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LanguageSet(pub u32);

impl LanguageSet {
    /// The set of these languages.
    #[must_use]
    pub fn of(languages: &[Language]) -> Self {
        LanguageSet(languages.iter().fold(0, |bits, lang| bits | lang.bit()))
    }

    #[must_use]
    pub fn contains(self, lang: Language) -> bool {
        self.0 & lang.bit() != 0
    }

    /// The languages in the set, English first; English alone for an empty set
    /// (an index that holds nothing yet is searched as English).
    #[must_use]
    pub fn languages(self) -> Vec<Language> {
        let found: Vec<Language> = Language::ALL
            .into_iter()
            .filter(|lang| self.contains(*lang))
            .collect();
        if found.is_empty() {
            vec![Language::English]
        } else {
            found
        }
    }
}

/// Words longer than this are folded but not stemmed: they are identifiers,
/// hashes or encoded data, not words of a language.
const LONGEST_STEMMED: usize = 40;

/// A word as the index holds it: lowercased, stemmed in `lang`, without
/// diacritics (folded after stemming: stemmers read the accents).
#[must_use]
pub fn index_form(word: &str, lang: Language) -> String {
    let lower = lowercase(word);
    let stemmable = lower.len() <= LONGEST_STEMMED
        && lower.chars().any(char::is_alphabetic)
        && !lower.chars().any(segment::is_unspaced);
    if !stemmable {
        return fold(&lower).into_owned();
    }
    STEMS.with_borrow_mut(|stems| {
        if let Some(known) = stems.get(&(lang, lower.as_ref())) {
            return known.clone();
        }
        let stemmed = Stemmer::create(lang.algorithm()).stem(&lower);
        let form = fold(&stemmed).into_owned();
        if stems.len() >= STEMS_KEPT {
            stems.clear();
        }
        stems.insert((lang, lower.into_owned()), form.clone());
        form
    })
}

/// Stems a thread keeps: an agent's text repeats its words (names, code, log
/// lines), and a lookup costs a fraction of stemming again.
const STEMS_KEPT: usize = 1 << 14;

thread_local! {
    static STEMS: std::cell::RefCell<StemCache> = std::cell::RefCell::default();
}

/// Index forms by language and lowercase word, looked up by borrowed word.
#[derive(Default)]
struct StemCache(rustc_hash::FxHashMap<Language, rustc_hash::FxHashMap<String, String>>);

impl StemCache {
    fn get(&self, key: &(Language, &str)) -> Option<&String> {
        self.0.get(&key.0)?.get(key.1)
    }

    fn len(&self) -> usize {
        self.0.values().map(std::collections::HashMap::len).sum()
    }

    fn clear(&mut self) {
        self.0.clear();
    }

    fn insert(&mut self, key: (Language, String), form: String) {
        self.0.entry(key.0).or_default().insert(key.1, form);
    }
}

/// A word lowercased, cheaply when it is ASCII already lowercase.
#[must_use]
pub fn lowercase(word: &str) -> Cow<'_, str> {
    if word
        .bytes()
        .all(|b| !b.is_ascii_uppercase() && b.is_ascii())
    {
        Cow::Borrowed(word)
    } else {
        Cow::Owned(word.to_lowercase())
    }
}

/// A word without diacritics ("café" becomes "cafe"): decomposed, its combining
/// marks dropped. ASCII comes back as it is.
#[must_use]
pub fn fold(word: &str) -> Cow<'_, str> {
    if word.is_ascii() {
        return Cow::Borrowed(word);
    }
    Cow::Owned(
        word.nfd()
            .filter(|c| !is_combining_mark(*c))
            .nfc()
            .collect(),
    )
}

/// Whether `c` belongs to a word: letters, digits and the marks that combine
/// with them. Everything else separates words.
#[must_use]
pub fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || is_combining_mark(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for lang in Language::ALL {
            assert_eq!(Language::from_code(lang.code()), Some(lang));
        }
        assert_eq!(Language::from_code("xx"), None);
    }

    #[test]
    fn words_are_stemmed_in_their_language_and_folded() {
        assert_eq!(index_form("Rotated", Language::English), "rotat");
        assert_eq!(index_form("rotates", Language::English), "rotat");
        assert_eq!(
            index_form("Prüfungen", Language::German),
            index_form("Prüfung", Language::German)
        );
        assert_eq!(
            index_form("Élève", Language::French),
            index_form("élèves", Language::French)
        );
        assert!(index_form("Élève", Language::French).is_ascii());
        assert_eq!(
            index_form("ключами", Language::Russian),
            index_form("ключи", Language::Russian)
        );
        assert_eq!(index_form("2024", Language::English), "2024");
        let long = "a".repeat(LONGEST_STEMMED + 1) + "ing";
        assert_eq!(index_form(&long, Language::English), long);
    }

    #[test]
    fn an_empty_set_searches_english() {
        assert_eq!(LanguageSet::default().languages(), [Language::English]);
        let set = LanguageSet::of(&[Language::German, Language::English]);
        assert_eq!(set.languages(), [Language::English, Language::German]);
    }
}
