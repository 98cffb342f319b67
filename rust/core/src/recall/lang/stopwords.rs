//! Stopwords of each language: English's own list (tuned for questions), the
//! others from the Snowball project's lists as NLTK ships them.

use std::sync::OnceLock;

use rustc_hash::FxHashMap;

use super::{english, Language, LanguageSet};

/// Whether `word` (lowercase) is a stopword of `lang`.
#[must_use]
pub fn is_stopword(word: &str, lang: Language) -> bool {
    if lang == Language::English {
        return english::STOPWORDS.binary_search(&word).is_ok();
    }
    stopword_languages(word).contains(lang)
}

/// The languages other than English that have `word` (lowercase) as a stopword.
pub(super) fn stopword_languages(word: &str) -> LanguageSet {
    let mut set = by_word().get(word).copied().unwrap_or_default();
    if english::STOPWORDS.binary_search(&word).is_ok() {
        set.0 |= Language::English.bit();
    }
    set
}

/// Every non-English stopword with the languages that have it, built once.
fn by_word() -> &'static FxHashMap<&'static str, LanguageSet> {
    static MAP: OnceLock<FxHashMap<&'static str, LanguageSet>> = OnceLock::new();
    MAP.get_or_init(|| {
        let mut map: FxHashMap<&'static str, LanguageSet> = FxHashMap::default();
        for lang in Language::ALL {
            if lang == Language::English {
                continue;
            }
            for word in stop_words::lookup(lang.code()).unwrap_or_default() {
                map.entry(word).or_default().0 |= lang.bit();
            }
        }
        map
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_list_is_sorted() {
        assert!(english::STOPWORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn every_language_has_stopwords() {
        for lang in Language::ALL {
            let common = match lang {
                Language::English => "the",
                Language::German => "und",
                Language::French => "les",
                Language::Spanish => "los",
                Language::Russian => "и",
                _ => continue,
            };
            assert!(is_stopword(common, lang), "{lang:?}");
        }
        for lang in Language::ALL {
            if lang != Language::English {
                assert!(!stop_words::lookup(lang.code())
                    .unwrap_or_default()
                    .is_empty());
            }
        }
        assert!(!is_stopword("ledger", Language::English));
        assert!(!is_stopword("the", Language::German));
    }
}
