//! Which language a text is written in: by its script, then, for the languages
//! written in Latin letters, by whose stopwords it uses most. Stopwords are a
//! language's most frequent words, so a few hundred words of running text hold
//! dozens of them; code, logs and tool output hold English ones or none, and
//! count as English, which is what they are searched in.

use super::segment::{words, WordKind};
use super::stopwords::stopword_languages;
use super::{lowercase, Language};

/// Bytes of a text read to detect its language.
pub const SAMPLE_BYTES: usize = 2_048;

/// Words of the sample whose stopwords are counted.
const SAMPLE_WORDS: usize = 150;

/// Stopwords a language other than English needs to be chosen.
const MIN_VOTES: u32 = 2;

/// The language `text` is most likely written in; English when nothing says
/// otherwise.
#[must_use]
pub fn detect(text: &str) -> Language {
    let sample = sample_of(text);
    if let Some(lang) = by_script(sample) {
        return lang;
    }
    by_stopwords(sample)
}

fn sample_of(text: &str) -> &str {
    if text.len() <= SAMPLE_BYTES {
        return text;
    }
    let mut end = SAMPLE_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Letters of each script that has one stemmed language of its own.
#[derive(Default)]
struct ScriptCounts {
    latin: usize,
    cyrillic: usize,
    greek: usize,
    arabic: usize,
    tamil: usize,
}

/// The language of a text mostly in Cyrillic, Greek, Arabic or Tamil letters.
fn by_script(sample: &str) -> Option<Language> {
    let mut counts = ScriptCounts::default();
    for c in sample.chars().filter(|c| c.is_alphabetic()) {
        match c as u32 {
            0x0041..=0x024F | 0x1E00..=0x1EFF => counts.latin += 1,
            0x0400..=0x04FF => counts.cyrillic += 1,
            0x0370..=0x03FF | 0x1F00..=0x1FFF => counts.greek += 1,
            0x0600..=0x06FF | 0x0750..=0x077F | 0xFB50..=0xFDFF | 0xFE70..=0xFEFF => {
                counts.arabic += 1;
            }
            0x0B80..=0x0BFF => counts.tamil += 1,
            _ => {}
        }
    }
    [
        (counts.cyrillic, Language::Russian),
        (counts.greek, Language::Greek),
        (counts.arabic, Language::Arabic),
        (counts.tamil, Language::Tamil),
    ]
    .into_iter()
    .filter(|(count, _)| *count > counts.latin)
    .max_by_key(|(count, _)| *count)
    .map(|(_, lang)| lang)
}

/// The Latin-script language whose stopwords the sample uses most; English on a
/// tie or when too few are found.
fn by_stopwords(sample: &str) -> Language {
    let sampled: Vec<String> = words(sample)
        .filter(|word| word.kind == WordKind::Word)
        .take(SAMPLE_WORDS)
        .map(|word| lowercase(word.text).into_owned())
        .collect();
    let (best, count) = most_stopwords(&sampled, &Language::ALL);
    if count >= MIN_VOTES {
        best
    } else {
        Language::English
    }
}

/// The language of `among` whose stopwords a query's words (lowercase) use most:
/// the one whose stopwords the query drops. The first of `among` on a tie.
#[must_use]
pub fn query_language(words: &[String], among: &[Language]) -> Language {
    most_stopwords(words, among).0
}

/// The language of `among` with the most stopwords in `words`, and how many; the
/// first of `among` (English when empty) on a tie.
fn most_stopwords(words: &[String], among: &[Language]) -> (Language, u32) {
    let mut votes = [0u32; Language::ALL.len()];
    for word in words {
        let set = stopword_languages(word);
        for lang in among {
            if set.contains(*lang) {
                votes[*lang as usize] += 1;
            }
        }
    }
    let first = among.first().copied().unwrap_or(Language::English);
    among
        .iter()
        .map(|lang| (*lang, votes[*lang as usize]))
        .fold((first, votes[first as usize]), |best, next| {
            if next.1 > best.1 {
                next
            } else {
                best
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_text_is_recognised() {
        let cases = [
            (
                "The deploy key was rotated after the audit, and it is stored in the vault.",
                Language::English,
            ),
            (
                "Der Schlüssel wurde nach der Prüfung gewechselt und ist im Tresor.",
                Language::German,
            ),
            (
                "La clé a été changée après l'audit et elle est dans le coffre.",
                Language::French,
            ),
            (
                "La clave se cambió después de la auditoría y está en la bóveda.",
                Language::Spanish,
            ),
            (
                "La chiave è stata cambiata dopo il controllo ed è nella cassaforte.",
                Language::Italian,
            ),
            (
                "A chave foi trocada depois da auditoria e está no cofre.",
                Language::Portuguese,
            ),
            (
                "De sleutel is na de controle vervangen en ligt in de kluis.",
                Language::Dutch,
            ),
            (
                "Ключ был заменён после проверки и хранится в сейфе.",
                Language::Russian,
            ),
            ("Το κλειδί άλλαξε μετά τον έλεγχο.", Language::Greek),
        ];
        for (text, lang) in cases {
            assert_eq!(detect(text), lang, "{text}");
        }
    }

    #[test]
    fn code_and_short_text_count_as_english() {
        assert_eq!(
            detect("fn main() { let x = vec![1, 2]; }"),
            Language::English
        );
        assert_eq!(detect("Schlüssel"), Language::English);
        assert_eq!(detect(""), Language::English);
        assert_eq!(detect(&"é".repeat(5_000)), Language::English);
    }
}
