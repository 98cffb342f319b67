//! Full-text terms for PostgreSQL: the store's own tokenizer, as `tsvector` and
//! `tsquery` literals.
//!
//! PostgreSQL's text search configurations drop stopwords and know other languages
//! and stems than the store's tokenizer does. So the store makes the terms itself,
//! exactly as SQLite's `lossless` FTS5 tokenizer indexes them (`recall/tokenizer.rs`:
//! each document stemmed in its detected language, stopwords kept), and hands them
//! over as literals that PostgreSQL parses without a configuration: a query finds
//! the same rows on both backends. Ranking is PostgreSQL's (`ts_rank_cd`), not bm25.
//!
//! Limits of `tsvector` the literal respects: a lexeme is under 2 KiB (longer words
//! are left out), positions go up to 16,383 (later words share the last), a lexeme
//! keeps 256 positions, and a vector stays under 1 MiB (words past that are left
//! out of the index; regex grep still reads the whole text).

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::lang::segment::{words, WordKind};
use crate::lang::{self, Language};
use crate::query::Query;

/// The longest lexeme PostgreSQL takes, in bytes (`MAXSTRLEN`).
const MAX_LEXEME_BYTES: usize = 2_046;
/// The last word position a `tsvector` holds (`MAXENTRYPOS - 1`).
const MAX_POSITION: usize = 16_383;
/// Positions kept per lexeme (`MAXNUMPOS`).
const MAX_POSITIONS: usize = 256;
/// Lexeme bytes a vector may hold: under its 1 MiB bound (`MAXSTRPOS`), with room
/// for the positions.
const MAX_VECTOR_BYTES: usize = 768 * 1024;

/// The `tsvector` literal of a document, and the language it was stemmed in.
#[must_use]
pub fn document_vector(text: &str) -> (String, Language) {
    let sample = &text.as_bytes()[..text.len().min(lang::SAMPLE_BYTES)];
    let language = lang::detect(&String::from_utf8_lossy(sample));
    let mut order: Vec<String> = Vec::new();
    let mut positions: HashMap<String, Vec<usize>> = HashMap::new();
    let mut bytes = 0;
    // Positions count the terms emitted, as FTS5's do.
    let mut index = 0;
    for word in words(text) {
        let term = match word.kind {
            WordKind::Pair => lang::lowercase(word.text).into_owned(),
            WordKind::Word => lang::index_form(word.text, language),
        };
        if term.is_empty() {
            // Only combining marks, which folding drops.
            continue;
        }
        index += 1;
        if term.len() > MAX_LEXEME_BYTES {
            continue;
        }
        let position = index.min(MAX_POSITION);
        if let Some(seen) = positions.get_mut(&term) {
            if seen.len() < MAX_POSITIONS && seen.last() != Some(&position) {
                seen.push(position);
            }
            continue;
        }
        if bytes + term.len() > MAX_VECTOR_BYTES {
            continue;
        }
        bytes += term.len();
        positions.insert(term.clone(), vec![position]);
        order.push(term);
    }
    let mut literal = String::with_capacity(bytes + order.len() * 8);
    for term in order {
        if !literal.is_empty() {
            literal.push(' ');
        }
        push_quoted(&mut literal, &term);
        literal.push(':');
        let list: Vec<String> = positions[&term].iter().map(usize::to_string).collect();
        literal.push_str(&list.join(","));
    }
    (literal, language)
}

/// The `tsquery` literal of `query` for an index holding documents in `languages`:
/// each word is any of its forms in those languages, a phrase its words in order
/// (`<->`); required pieces are joined by `&`, optional words by `|`. When both are
/// present the optional words join the first required piece in an alternative it
/// satisfies anyway, so they rank without being required (as in `Query::to_fts`).
#[must_use]
pub fn query_literal(query: &Query, languages: &[Language]) -> String {
    let languages = if languages.is_empty() {
        &[Language::English][..]
    } else {
        languages
    };
    let required: Vec<String> = query
        .required
        .iter()
        .map(|words| phrase(words, languages))
        .collect();
    let optional: Vec<String> = query
        .optional
        .iter()
        .map(|word| phrase(std::slice::from_ref(word), languages))
        .collect();
    match required.first() {
        None => optional.join(" | "),
        Some(_) if optional.is_empty() => required.join(" & "),
        Some(first) => format!(
            "{} & ({first} | {})",
            required.join(" & "),
            optional.join(" | ")
        ),
    }
}

/// The words of a phrase in every language's forms, without repeats.
/// The `tsquery` literal matching `word` in any of `languages` (English without one).
#[must_use]
pub fn word_literal(word: &str, languages: &[Language]) -> String {
    let languages = if languages.is_empty() {
        &[Language::English][..]
    } else {
        languages
    };
    phrase(&[word.to_string()], languages)
}

fn phrase(words: &[String], languages: &[Language]) -> String {
    let mut forms: Vec<String> = Vec::new();
    for lang in languages {
        let mut form = String::new();
        for (i, word) in words.iter().enumerate() {
            if i > 0 {
                form.push_str(" <-> ");
            }
            push_quoted(&mut form, &lang::index_form(word, *lang));
        }
        if !forms.contains(&form) {
            forms.push(form);
        }
    }
    if let [one] = forms.as_slice() {
        format!("({one})")
    } else {
        format!("({})", forms.join(" | "))
    }
}

/// `term` quoted for a `tsvector` or `tsquery` literal: inside single quotes, with
/// quotes and backslashes doubled.
fn push_quoted(out: &mut String, term: &str) {
    out.push('\'');
    for c in term.chars() {
        if c == '\'' || c == '\\' {
            out.push(c);
        }
        let _ = out.write_char(c);
    }
    out.push('\'');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_is_stemmed_in_its_language_with_positions() {
        let (literal, language) =
            document_vector("The runners were running and running again in the park");
        assert_eq!(language, Language::English);
        assert!(literal.contains("'run':4,6"), "{literal}");
        assert!(literal.contains("'the':1,9"), "{literal}");
    }

    #[test]
    fn quotes_and_backslashes_are_doubled() {
        let mut out = String::new();
        push_quoted(&mut out, r"it's\x");
        assert_eq!(out, r"'it''s\\x'");
    }

    #[test]
    fn positions_past_the_last_share_it() {
        let text = "word ".repeat(20_000) + "tail";
        let (literal, _) = document_vector(&text);
        assert!(
            literal.contains("'tail':16383"),
            "{}",
            &literal[literal.len() - 40..]
        );
        let word_positions = literal.split(' ').next().unwrap().matches(',').count() + 1;
        assert_eq!(word_positions, MAX_POSITIONS);
    }

    #[test]
    fn required_and_optional_pieces_combine_as_in_sqlite() {
        let query = Query {
            optional: vec!["cats".into()],
            required: vec![vec!["red".into(), "house".into()]],
        };
        let literal = query_literal(&query, &[Language::English]);
        assert_eq!(
            literal,
            "('red' <-> 'hous') & (('red' <-> 'hous') | ('cat'))"
        );
    }
}
