//! Full-text queries as people write them: parsing, stopwords, and how ranked
//! summaries and parts share a page of results. No SQL here; the store runs the
//! FTS5 expression this module builds.
//!
//! Syntax: bare words are optional and ranked by bm25 (a document matching any of
//! them is a candidate, so a question finds the turn that answers it); `+word` is
//! required; `"exact words"` (or `+"exact words"`) is a required phrase. English
//! stopwords are dropped from the optional words unless nothing else is left, so
//! "what was it" still searches. Stemming is the index's: its tokenizer is FTS5's
//! `porter` over `unicode61`, which stems the query's words the same way.

use crate::error::{Error, Result};

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

/// English stopwords (the Snowball list's common core, plus question words an
/// asker adds). Sorted: looked up by binary search.
const STOPWORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "d",
    "did",
    "didn",
    "do",
    "does",
    "doesn",
    "doing",
    "don",
    "down",
    "during",
    "each",
    "ever",
    "few",
    "for",
    "from",
    "further",
    "get",
    "got",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "isn",
    "it",
    "its",
    "itself",
    "just",
    "know",
    "ll",
    "m",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "please",
    "re",
    "remind",
    "s",
    "said",
    "same",
    "say",
    "she",
    "should",
    "so",
    "some",
    "such",
    "t",
    "tell",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "us",
    "ve",
    "very",
    "was",
    "wasn",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "whose",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Whether `word` (lowercase) is an English stopword.
#[must_use]
pub fn is_stopword(word: &str) -> bool {
    STOPWORDS.binary_search(&word).is_ok()
}

/// One piece of the query text before stopwords are weighed.
enum Piece {
    Word { text: String, required: bool },
    Phrase(Vec<String>),
}

/// Parses a query; an unbalanced `"` or a query without a word is refused.
pub fn parse(text: &str) -> Result<Query> {
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
    let content: Vec<&String> = bare.iter().filter(|word| !is_stopword(word)).collect();
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

/// Splits the text into words, `+words` and quoted phrases.
fn split(text: &str) -> Result<Vec<Piece>> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(|c: char| c == '"' || is_word_char(c)) {
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
        let end = rest.find(|c: char| !is_word_char(c)).unwrap_or(rest.len());
        pieces.push(Piece::Word {
            text: rest[..end].to_lowercase(),
            required: required_mark(before),
        });
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

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric()
}

fn words_of(text: &str) -> Vec<String> {
    text.split(|c: char| !is_word_char(c))
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect()
}

impl Query {
    /// The FTS5 expression: required phrases joined by AND, optional words by OR. When both
    /// are present, the optional words join one required phrase in an OR that the
    /// required phrase always satisfies, so they rank without being required.
    #[must_use]
    pub fn to_fts(&self) -> String {
        let required: Vec<String> = self.required.iter().map(|w| quote(w)).collect();
        let optional: Vec<String> = self.optional.iter().map(|w| quote(&[w])).collect();
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

/// An FTS5 string: words are alphanumeric, so nothing inside needs escaping.
fn quote<S: AsRef<str>>(words: &[S]) -> String {
    let joined: Vec<&str> = words.iter().map(AsRef::as_ref).collect();
    format!("\"{}\"", joined.join(" "))
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
    pub fn rare_fts(&self, rare: &[bool]) -> Option<String> {
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
        let narrowed = Query {
            optional: words,
            required: self.required.clone(),
        };
        Some(narrowed.to_fts())
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

    #[test]
    fn stopwords_are_sorted() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn a_question_becomes_an_or_of_its_content_words() {
        let query = parse("What was the codename of the deploy key?").unwrap();
        assert_eq!(query.optional, ["codename", "deploy", "key"]);
        assert_eq!(query.to_fts(), "\"codename\" OR \"deploy\" OR \"key\"");
    }

    #[test]
    fn phrases_and_plus_words_are_required() {
        let query = parse("+ledger \"exact words\" rates of Exchange").unwrap();
        assert_eq!(query.required, [vec!["ledger"], vec!["exact", "words"]]);
        assert_eq!(query.optional, ["rates", "exchange"]);
        assert_eq!(
            query.to_fts(),
            "\"ledger\" AND \"exact words\" AND (\"ledger\" OR \"rates\" OR \"exchange\")"
        );
        let only = parse("+the").unwrap();
        assert_eq!(only.to_fts(), "\"the\"");
    }

    #[test]
    fn a_stopword_only_query_still_searches() {
        assert_eq!(parse("what is it").unwrap().optional, ["what", "is", "it"]);
    }

    #[test]
    fn bad_queries_are_refused() {
        for bad in ["", "   ", "!!! ...", "\"\"", "+"] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        let err = parse("the \"open phrase").unwrap_err().to_string();
        assert!(err.contains("unbalanced"), "{err}");
        let many = "+w ".repeat(MAX_TERMS + 1);
        assert!(parse(&many).unwrap_err().to_string().contains("more than"));
        let long = "word ".repeat(10_000);
        assert_eq!(parse(&long).unwrap().optional, ["word"]);
    }

    #[test]
    fn long_queries_rank_fewer_candidates_and_rare_words_alone() {
        let one = parse("ledger").unwrap();
        let question = parse("which ledger rates failed the retry checks in fx today").unwrap();
        assert_eq!(candidates(&one), 2_000);
        assert!(candidates(&question) < 1_000);
        let rare = [false, true, false, false, false, false, false];
        assert_eq!(question.optional.len(), rare.len());
        assert_eq!(question.rare_fts(&rare).as_deref(), Some("\"rates\""));
        assert_eq!(question.rare_fts(&[false; 7]), None);
        assert_eq!(question.rare_fts(&[true; 7]), None);
        let merged = union_ranked(&[(3, -2.0), (1, -1.0)], &[(1, -0.5), (9, -1.5)]);
        assert_eq!(merged, [(3, -2.0), (9, -1.5), (1, -1.0)]);
    }

    #[test]
    fn common_words_leave_unless_nothing_else_is_left() {
        let query = parse("ledger rates retry checks fx").unwrap();
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
            let _ = parse(&text);
        }

        #[test]
        fn parsing_its_own_words_again_changes_nothing(text in "[a-zA-Z +\"!?.,]{0,60}") {
            if let Ok(query) = parse(&text) {
                let mut pieces: Vec<String> = query
                    .required
                    .iter()
                    .map(|words| format!("\"{}\"", words.join(" ")))
                    .collect();
                pieces.extend(query.optional.iter().cloned());
                let again = pieces.join(" ");
                let reparsed = parse(&again).unwrap();
                // Required single words come back as one-word phrases: the same query.
                prop_assert_eq!(reparsed.to_fts(), query.to_fts());
            }
        }

        #[test]
        fn the_expression_quotes_every_word(text in "\\PC{0,80}") {
            if let Ok(query) = parse(&text) {
                let fts = query.to_fts();
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
