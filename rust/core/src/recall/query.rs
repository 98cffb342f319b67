//! Full-text queries as people write them: parsing, stopwords, and how ranked
//! summaries and parts share a page of results. No SQL here; the store runs the
//! FTS5 expression this module builds.
//!
//! Syntax: bare words are optional and ranked by bm25 (a document matching any of
//! them is a candidate, so a question finds the turn that answers it); `+word` is
//! required; `"exact words"` (or `+"exact words"`) is a required phrase. The
//! stopwords of the query's language are dropped from the optional words unless
//! nothing else is left, so "what was it" still searches.
//!
//! Stemming: the index holds each document's words stemmed in the document's
//! language (see `crate::lang`), so a query word becomes its stem in every
//! language the index holds, any of which may match ([`Terms::Stemmed`]).

use crate::error::{Error, Result};
use crate::lang::segment::words;
use crate::lang::{self, Language};

/// Optional words a query keeps, and required words and phrases it may hold: bm25
/// reads every phrase's whole doclist once, so a pasted page of text must not make a
/// search cost hundreds of scans.
pub const MAX_TERMS: usize = 32;

/// A parsed full-text query.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Query {
    /// Words any of which may match, lowercased, without duplicates.
    pub optional: Vec<String>,
    /// Words and phrases every match must hold (a phrase is words in order).
    pub required: Vec<Vec<String>>,
}

/// How a query's words become the terms of an index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Terms {
    /// The index stems each document in its language (the `lossless` tokenizer):
    /// a word is any of its stems in these languages.
    Stemmed(Vec<Language>),
    /// The index's own tokenizer turns the words into terms (an index written
    /// before version 6, read without migrating it).
    Verbatim,
}

impl Terms {
    /// The languages a query's stopwords are taken from.
    fn languages(&self) -> Vec<Language> {
        match self {
            Terms::Stemmed(languages) if !languages.is_empty() => languages.clone(),
            _ => vec![Language::English],
        }
    }

    /// The forms of `words` (a phrase) in the index, one per language, without
    /// duplicates.
    fn forms(&self, words: &[String]) -> Vec<String> {
        let Terms::Stemmed(languages) = self else {
            return vec![words.join(" ")];
        };
        let mut forms: Vec<String> = Vec::new();
        for lang in languages {
            let stems: Vec<String> = words.iter().map(|w| lang::index_form(w, *lang)).collect();
            let form = stems.join(" ");
            if !forms.contains(&form) {
                forms.push(form);
            }
        }
        if forms.is_empty() {
            forms.push(words.join(" "));
        }
        forms
    }

    /// The FTS5 expression matching the phrase `words` (one word or more).
    #[must_use]
    pub fn phrase(&self, words: &[String]) -> String {
        let forms: Vec<String> = self
            .forms(words)
            .iter()
            .map(|f| format!("\"{f}\""))
            .collect();
        if let [one] = forms.as_slice() {
            one.clone()
        } else {
            format!("({})", forms.join(" OR "))
        }
    }

    /// The expression matching the one word `word`.
    #[must_use]
    pub fn word(&self, word: &str) -> String {
        self.phrase(&[word.to_string()])
    }
}

/// One piece of the query text before stopwords are weighed.
enum Piece {
    Word { text: String, required: bool },
    Phrase(Vec<String>),
}

/// Parses a query for an index whose words become `terms`; an unbalanced `"` or a
/// query without a word is refused.
pub fn parse(text: &str, terms: &Terms) -> Result<Query> {
    let pieces = split(text)?;
    let mut query = Query::default();
    let mut bare = Vec::new();
    for piece in pieces {
        match piece {
            Piece::Phrase(words) => query.required.push(words),
            Piece::Word {
                text,
                required: true,
            } => query.required.push(vec![text]),
            Piece::Word { text, .. } => bare.push(text),
        }
    }
    let language = lang::query_language(&bare, &terms.languages());
    let content: Vec<&String> = bare
        .iter()
        .filter(|word| !lang::is_stopword(word, language))
        .collect();
    // Only stopwords, and nothing required: search for them rather than for nothing.
    let kept: Vec<&String> = if content.is_empty() && query.required.is_empty() {
        bare.iter().collect()
    } else {
        content
    };
    for word in kept {
        let known = query.optional.contains(word) || query.required.contains(&vec![word.clone()]);
        if !known && query.optional.len() < MAX_TERMS {
            query.optional.push(word.clone());
        }
    }
    if query.required.len() > MAX_TERMS {
        return Err(Error::invalid(
            "query",
            format!("requires more than {MAX_TERMS} words or phrases"),
        ));
    }
    if query.optional.is_empty() && query.required.is_empty() {
        return Err(Error::invalid(
            "query",
            "has no words to search for (only punctuation or spaces)",
        ));
    }
    Ok(query)
}

/// Splits the text into words, `+words` and quoted phrases. A run of Chinese,
/// Japanese or Korean splits into pairs of characters: as bare words, any pair
/// may match; required, they are a phrase.
fn split(text: &str) -> Result<Vec<Piece>> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(|c: char| c == '"' || lang::is_word_char(c)) {
        let before = &text[..text.len() - rest.len() + start];
        rest = &rest[start..];
        if let Some(quoted) = rest.strip_prefix('"') {
            let Some(end) = quoted.find('"') else {
                return Err(Error::invalid(
                    "query",
                    "has an unbalanced double quote (close the phrase with \")",
                ));
            };
            let words = words_of(&quoted[..end]);
            if !words.is_empty() {
                pieces.push(Piece::Phrase(words));
            }
            rest = &quoted[end + 1..];
            continue;
        }
        let end = rest
            .find(|c: char| !lang::is_word_char(c))
            .unwrap_or(rest.len());
        let run = words_of(&rest[..end]);
        let required = required_mark(before);
        if required && run.len() > 1 {
            pieces.push(Piece::Phrase(run));
        } else {
            pieces.extend(run.into_iter().map(|text| Piece::Word { text, required }));
        }
        rest = &rest[end..];
    }
    Ok(pieces)
}

/// Whether the text before a word ends in a `+` that starts a token: `+word`
/// requires the word, `c+b` does not require `b`.
fn required_mark(before: &str) -> bool {
    before
        .strip_suffix('+')
        .is_some_and(|head| head.chars().last().is_none_or(char::is_whitespace))
}

/// The words of `text`, lowercased, as the index splits them.
fn words_of(text: &str) -> Vec<String> {
    words(text)
        // A run of combining marks alone is no word: folding leaves nothing of it.
        .filter(|word| word.text.chars().any(char::is_alphanumeric))
        .map(|word| lang::lowercase(word.text).into_owned())
        .collect()
}

impl Query {
    /// The FTS5 expression: required phrases joined by AND, optional words by OR. When both
    /// are present, the optional words join one required phrase in an OR that the
    /// required phrase always satisfies, so they rank without being required.
    #[must_use]
    pub fn to_fts(&self, terms: &Terms) -> String {
        let required: Vec<String> = self.required.iter().map(|w| terms.phrase(w)).collect();
        let optional: Vec<String> = self.optional.iter().map(|w| terms.word(w)).collect();
        match (required.first(), optional.is_empty()) {
            (None, _) => optional.join(" OR "),
            (Some(_), true) => required.join(" AND "),
            (Some(first), false) => format!(
                "{} AND ({first} OR {})",
                required.join(" AND "),
                optional.join(" OR ")
            ),
        }
    }
}

/// Index rows times phrases bm25 may score for one query. Scoring a row costs about a
/// microsecond per phrase (each phrase's positions in it are read: 2,000 rows of a
/// nine-word question took 21 ms at 100,000 messages), so the newest candidates a
/// query ranks shrink as its phrases grow.
pub const SCORED_PHRASE_ROWS: usize = 6_000;

/// Matches a word may have and still count as rare: every match of a rare word is
/// ranked, however old (see [`Query::rare_fts`]).
pub const RARE_MATCHES: i64 = 500;

/// The newest matches a query ranks: [`SCORED_PHRASE_ROWS`] shared among its
/// phrases, 2,000 for one word, never under 300.
#[must_use]
pub fn candidates(query: &Query) -> usize {
    let phrases = query.optional.len() + query.required.len() * 2;
    (SCORED_PHRASE_ROWS / phrases.max(1)).clamp(300, 2_000)
}

impl Query {
    /// The expression for the matches of the rare optional words only (`rare[i]` for
    /// `optional[i]`), the required phrases kept; `None` when no word is rare or the
    /// query has only one word. The newest candidates of a question's common words
    /// would push an old turn holding its rare word out of reach: every match of a
    /// rare word is ranked too, on its rare words alone, which never scores it better
    /// than the whole expression would.
    #[must_use]
    pub fn rare_fts(&self, rare: &[bool], terms: &Terms) -> Option<String> {
        self.rare_only(rare).map(|narrowed| narrowed.to_fts(terms))
    }

    /// The query [`Query::rare_fts`] writes as an expression.
    #[must_use]
    pub fn rare_only(&self, rare: &[bool]) -> Option<Query> {
        let words: Vec<String> = self
            .optional
            .iter()
            .zip(rare)
            .filter(|(_, rare)| **rare)
            .map(|(word, _)| word.clone())
            .collect();
        if words.is_empty() || words.len() == self.optional.len() {
            return None;
        }
        Some(Query {
            optional: words,
            required: self.required.clone(),
        })
    }
}

/// Share of the index's rows past which a word is too common to search for while
/// rarer words are left: FTS5's bm25 gives a word in half the rows no weight at all
/// (its idf is clamped), one in a quarter about a tenth of a rare word's, while
/// reading its positions costs the most of any word (a millisecond per 50,000 rows).
pub const COMMON_SHARE: f64 = 0.25;

/// Matches under which no word counts as common: reading them costs little.
pub const COMMON_FLOOR: i64 = 2_000;

/// Words kept, the rarest, when every word of a query is common.
pub const KEEP_COMMON: usize = 3;

impl Query {
    /// The query without its common optional words (`matches[i]` is how many index
    /// rows `optional[i]` matches, of `rows`: common past [`COMMON_SHARE`] of them and
    /// [`COMMON_FLOOR`]); when all are common, its [`KEEP_COMMON`] rarest stay.
    #[must_use]
    pub fn without_common(&self, matches: &[i64], rows: i64) -> Query {
        let limit = ((rows as f64 * COMMON_SHARE) as i64).max(COMMON_FLOOR);
        let mut ranked: Vec<(i64, &String)> = matches.iter().copied().zip(&self.optional).collect();
        let mut kept: Vec<&String> = ranked
            .iter()
            .filter(|(count, _)| *count <= limit)
            .map(|(_, word)| *word)
            .collect();
        if kept.is_empty() {
            ranked.sort_by_key(|(count, _)| *count);
            kept = ranked
                .iter()
                .take(KEEP_COMMON)
                .map(|(_, word)| *word)
                .collect();
        }
        Query {
            optional: self
                .optional
                .iter()
                .filter(|word| kept.contains(word))
                .cloned()
                .collect(),
            required: self.required.clone(),
        }
    }
}

/// Two rankings of index rows (bm25: lower is better) as one, best first, each row
/// once with the score of the list that ranked it first: the whole expression's.
#[must_use]
pub fn union_ranked(first: &[(i64, f64)], second: &[(i64, f64)]) -> Vec<(i64, f64)> {
    let seen: std::collections::HashSet<i64> = first.iter().map(|(id, _)| *id).collect();
    let mut all: Vec<(i64, f64)> = first.to_vec();
    all.extend(second.iter().filter(|(id, _)| !seen.contains(id)));
    all.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    all
}

/// Rows a question's parts are re-ranked among: its best by bm25 and every match
/// of its rare words, before [`by_coverage`] orders them by its rare words.
pub const COVERAGE_POOL: usize = 100;

/// The weight of a word that matches `count` of `rows` index rows: bm25's idf.
#[must_use]
pub fn idf(count: i64, rows: i64) -> f64 {
    let (count, rows) = (count.max(0) as f64, rows.max(1) as f64);
    ((rows - count + 0.5) / (count + 0.5) + 1.0).ln()
}

/// Ranked rows (bm25: lower is better) ordered by how much of the question each
/// holds: first by the summed weight of the question's words it matches
/// (`matched[w]` holds the rows word `w` matches, `weights[w]` its weight), then by
/// bm25. bm25 divides a word's score by the length of its row, so a long tool
/// output that holds the one word naming what was asked ranked below short notes
/// holding only its common words; a row holding more of the question's
/// information now comes first.
#[must_use]
pub fn by_coverage<S: std::hash::BuildHasher>(
    ranked: &[(i64, f64)],
    matched: &[std::collections::HashSet<i64, S>],
    weights: &[f64],
) -> Vec<(i64, f64)> {
    let coverage = |row: i64| -> f64 {
        matched
            .iter()
            .zip(weights)
            .filter(|(rows, _)| rows.contains(&row))
            .map(|(_, weight)| weight)
            .sum()
    };
    let mut scored: Vec<(f64, i64, f64)> = ranked
        .iter()
        .map(|&(row, rank)| (coverage(row), row, rank))
        .collect();
    // Coverage compared to a thousandth: sums of the same words are equal.
    scored.sort_by(|a, b| {
        let (ca, cb) = ((a.0 * 1e3).round(), (b.0 * 1e3).round());
        cb.total_cmp(&ca)
            .then(a.2.total_cmp(&b.2))
            .then(a.1.cmp(&b.1))
    });
    scored
        .into_iter()
        .map(|(_, row, rank)| (row, rank))
        .collect()
}

/// Summaries a page of `limit` results may hold before parts have run out: a
/// summary repeats what its sources say in fewer words, so bm25 favours it, and
/// without a cap a few summaries would fill every page.
#[must_use]
pub fn summary_cap(limit: usize) -> usize {
    limit.div_ceil(4).max(1)
}

/// One page from two lists ranked by bm25 (lower is better): best first, with at
/// most [`summary_cap`] summaries unless too few parts matched to fill the page.
#[must_use]
pub fn merge_ranked(
    parts: &[(i64, f64)],
    summaries: &[(i64, f64)],
    limit: usize,
) -> Vec<(i64, f64)> {
    let room = limit.saturating_sub(parts.len().min(limit));
    let cap = summary_cap(limit).max(room).min(summaries.len());
    let mut page: Vec<(i64, f64)> = Vec::with_capacity(limit);
    let (mut p, mut s) = (0, 0);
    while page.len() < limit && (p < parts.len() || s < cap) {
        let take_summary = s < cap && (p >= parts.len() || summaries[s].1 < parts[p].1);
        if take_summary {
            page.push(summaries[s]);
            s += 1;
        } else {
            page.push(parts[p]);
            p += 1;
        }
    }
    page
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const V: Terms = Terms::Verbatim;

    fn stemmed(languages: &[Language]) -> Terms {
        Terms::Stemmed(languages.to_vec())
    }

    #[test]
    fn a_word_is_any_of_its_stems_in_the_index_languages() {
        let english = stemmed(&[Language::English]);
        let query = parse("rotated keys", &english).unwrap();
        assert_eq!(query.to_fts(&english), "\"rotat\" OR \"key\"");
        let both = stemmed(&[Language::English, Language::German]);
        let query = parse("Prüfungen", &both).unwrap();
        assert_eq!(query.to_fts(&both), "(\"prufungen\" OR \"prufung\")");
        let phrase = parse("\"rotated keys\"", &both).unwrap();
        assert_eq!(phrase.to_fts(&both), "(\"rotat key\" OR \"rotated keys\")");
    }

    #[test]
    fn stopwords_are_the_query_languages() {
        let both = stemmed(&[Language::English, Language::German]);
        let german = parse("wo ist der Schlüssel für den Tresor", &both).unwrap();
        assert_eq!(german.optional, ["schlüssel", "tresor"]);
        let english = parse("where did the process die", &both).unwrap();
        assert_eq!(english.optional, ["process", "die"]);
    }

    #[test]
    fn unspaced_words_split_into_pairs() {
        let query = parse("東京都の人口", &V).unwrap();
        assert_eq!(query.optional, ["東京", "京都", "都の", "の人", "人口"]);
        let required = parse("+東京都", &V).unwrap();
        assert_eq!(required.required, [vec!["東京", "京都"]]);
    }

    #[test]
    fn a_question_becomes_an_or_of_its_content_words() {
        let query = parse("What was the codename of the deploy key?", &V).unwrap();
        assert_eq!(query.optional, ["codename", "deploy", "key"]);
        assert_eq!(query.to_fts(&V), "\"codename\" OR \"deploy\" OR \"key\"");
    }

    #[test]
    fn phrases_and_plus_words_are_required() {
        let query = parse("+ledger \"exact words\" rates of Exchange", &V).unwrap();
        assert_eq!(query.required, [vec!["ledger"], vec!["exact", "words"]]);
        assert_eq!(query.optional, ["rates", "exchange"]);
        assert_eq!(
            query.to_fts(&V),
            "\"ledger\" AND \"exact words\" AND (\"ledger\" OR \"rates\" OR \"exchange\")"
        );
        let only = parse("+the", &V).unwrap();
        assert_eq!(only.to_fts(&V), "\"the\"");
    }

    #[test]
    fn a_stopword_only_query_still_searches() {
        assert_eq!(
            parse("what is it", &V).unwrap().optional,
            ["what", "is", "it"]
        );
    }

    #[test]
    fn bad_queries_are_refused() {
        for bad in ["", "   ", "!!! ...", "\"\"", "+"] {
            assert!(parse(bad, &V).is_err(), "{bad:?}");
        }
        let err = parse("the \"open phrase", &V).unwrap_err().to_string();
        assert!(err.contains("unbalanced"), "{err}");
        let many = "+w ".repeat(MAX_TERMS + 1);
        assert!(parse(&many, &V)
            .unwrap_err()
            .to_string()
            .contains("more than"));
        let long = "word ".repeat(10_000);
        assert_eq!(parse(&long, &V).unwrap().optional, ["word"]);
    }

    #[test]
    fn long_queries_rank_fewer_candidates_and_rare_words_alone() {
        let one = parse("ledger", &V).unwrap();
        let question = parse("which ledger rates failed the retry checks in fx today", &V).unwrap();
        assert_eq!(candidates(&one), 2_000);
        assert!(candidates(&question) < 1_000);
        let rare = [false, true, false, false, false, false, false];
        assert_eq!(question.optional.len(), rare.len());
        assert_eq!(question.rare_fts(&rare, &V).as_deref(), Some("\"rates\""));
        assert_eq!(question.rare_fts(&[false; 7], &V), None);
        assert_eq!(question.rare_fts(&[true; 7], &V), None);
        let merged = union_ranked(&[(3, -2.0), (1, -1.0)], &[(1, -0.5), (9, -1.5)]);
        assert_eq!(merged, [(3, -2.0), (9, -1.5), (1, -1.0)]);
    }

    #[test]
    fn common_words_leave_unless_nothing_else_is_left() {
        let query = parse("ledger rates retry checks fx", &V).unwrap();
        let lean = query.without_common(&[10, 9_000, 20, 6_000, 5], 10_000);
        assert_eq!(lean.optional, ["ledger", "retry", "fx"]);
        let all_common = query.without_common(&[9_900, 9_000, 8_000, 6_000, 7_000], 10_000);
        assert_eq!(all_common.optional, ["retry", "checks", "fx"]);
        let small_store = query.without_common(&[990, 900, 800, 600, 700], 1_000);
        assert_eq!(small_store, query);
    }

    #[test]
    fn summaries_are_capped_until_parts_run_out() {
        let parts: Vec<(i64, f64)> = (1..=10).map(|i| (i, -1.0)).collect();
        let summaries: Vec<(i64, f64)> = (1..=10).map(|i| (-i, -5.0)).collect();
        let page = merge_ranked(&parts, &summaries, 8);
        assert_eq!(page.iter().filter(|(id, _)| *id < 0).count(), 2);
        let page = merge_ranked(&parts[..3], &summaries, 8);
        assert_eq!(page.len(), 8);
        assert_eq!(page.iter().filter(|(id, _)| *id < 0).count(), 5);
    }

    fn ranked(len: std::ops::Range<usize>, sign: i64) -> impl Strategy<Value = Vec<(i64, f64)>> {
        proptest::collection::vec(-50.0f64..0.0, len).prop_map(move |mut scores| {
            scores.sort_by(f64::total_cmp);
            (1..).zip(scores).map(|(id, s)| (id * sign, s)).collect()
        })
    }

    proptest! {
        #[test]
        fn parsing_never_panics(text in "\\PC{0,80}") {
            let _ = parse(&text, &V);
        }

        #[test]
        fn parsing_its_own_words_again_changes_nothing(text in "[a-zA-Z +\"!?.,]{0,60}") {
            if let Ok(query) = parse(&text, &V) {
                let mut pieces: Vec<String> = query
                    .required
                    .iter()
                    .map(|words| format!("\"{}\"", words.join(" ")))
                    .collect();
                pieces.extend(query.optional.iter().cloned());
                let again = pieces.join(" ");
                let reparsed = parse(&again, &V).unwrap();
                // Required single words come back as one-word phrases: the same query.
                prop_assert_eq!(reparsed.to_fts(&V), query.to_fts(&V));
            }
        }

        #[test]
        fn the_expression_quotes_every_word(text in "\\PC{0,80}") {
            if let Ok(query) = parse(&text, &V) {
                let fts = query.to_fts(&V);
                prop_assert_eq!(fts.matches('"').count() % 2, 0);
                prop_assert!(query.optional.len() <= MAX_TERMS);
            }
        }

        #[test]
        fn a_page_is_full_ranked_and_caps_summaries(
            parts in ranked(0..30, 1),
            summaries in ranked(0..30, -1),
            limit in 1usize..40,
        ) {
            let page = merge_ranked(&parts, &summaries, limit);
            prop_assert_eq!(page.len(), limit.min(parts.len() + summaries.len()));
            let shown = page.iter().filter(|(id, _)| *id < 0).count();
            if page.iter().filter(|(id, _)| *id > 0).count() < parts.len() {
                prop_assert!(shown <= summary_cap(limit));
            }
            for kind in [1i64, -1] {
                let scores: Vec<f64> = page.iter().filter(|(id, _)| id.signum() == kind)
                    .map(|(_, s)| *s).collect();
                prop_assert!(scores.windows(2).all(|w| w[0] <= w[1]));
            }
        }
    }

    #[test]
    fn a_row_holding_more_of_the_question_ranks_first() {
        use std::collections::HashSet;
        // Row 1: short, the common words; row 2: long, the rare word too.
        let ranked = [(1, -18.7), (2, -14.5), (3, -10.0)];
        let common: HashSet<i64> = [1, 2, 3].into();
        let rare: HashSet<i64> = [2].into();
        let weights = [idf(200, 5_000), idf(1, 5_000)];
        let ordered = by_coverage(&ranked, &[common, rare], &weights);
        assert_eq!(
            ordered.iter().map(|(row, _)| *row).collect::<Vec<_>>(),
            [2, 1, 3]
        );
        // Equal coverage keeps bm25's order.
        let same = by_coverage(&ranked, &[[1, 2, 3].into()], &[1.0]);
        assert_eq!(same, ranked);
    }
}
