//! A sentence's words, which of them are values (numbers, codes, amounts, paths,
//! names, quoted text), and its subject: what a later sentence must be about to
//! replace it.
//!
//! A value stated as "X is V", "X changed to V", "X: V" or "set X to V" has the
//! subject X. Any other sentence's subject is its words without its values and
//! without words that do not tell subjects apart, so "Escalate to Dana Whitfield if
//! the deploy fails" and "Escalate to Omar Haddad if the deploy fails" share one.

use super::cues::{
    capitalises_nouns, starts_with_phrase, COPULAS, ELISIONS, LEADERS, LEADER_PHRASES,
    SUBJECT_STOPWORDS,
};

/// Most words a subject is made of.
const MAX_SUBJECT_WORDS: usize = 12;
/// Most words of the part before a copula that can be a subject.
const MAX_NAME_WORDS: usize = 6;
/// Most words of a numbered label ("Rule 3:", "Step 2 of 5:").
const MAX_LABEL_WORDS: usize = 4;
/// How far after a copula its value may start ("is now set to V").
const VALUE_REACH: usize = 3;

/// Words of days and months: capitalised, but part of what a rule says rather
/// than a value of it.
const CALENDAR: &[&str] = &[
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "mondays",
    "tuesdays",
    "wednesdays",
    "thursdays",
    "fridays",
    "saturdays",
    "sundays",
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// Names of kinds of statements, not of what they are about.
const GENERIC_NAMES: &[&str] = &[
    "goal",
    "goals",
    "task",
    "objective",
    "aim",
    "plan",
    "note",
    "issue",
    "problem",
    "reason",
    "idea",
    "thing",
    "point",
    "question",
    "answer",
    "result",
    "status",
    "update",
    "decision",
    "rule",
    "fact",
    "preference",
    "request",
    "priority",
    "focus",
    "mission",
    "deliverable",
    "purpose",
    "ask",
    "instruction",
    "instructions",
    "context",
    "summary",
    "ziel",
    "aufgabe",
    "objectif",
    "tâche",
    "objetivo",
    "tarea",
    "obiettivo",
    "compito",
    "doel",
    "taak",
];

/// Verbs that name what they set before its value ("set the cap to $700").
const SETTERS: &[&str] = &[
    "set", "change", "update", "bump", "raise", "lower", "move", "reset",
];

/// Words that stand for something said before: never a subject of their own.
const POINTERS: &[&str] = &[
    "it", "this", "that", "there", "he", "she", "they", "which", "what",
];

/// One word of a sentence.
#[derive(Clone, Debug)]
pub(super) struct Word<'a> {
    /// As written, without surrounding punctuation.
    pub raw: &'a str,
    /// Lowercased.
    pub lower: String,
    /// A value: a number, an amount, a code, a path, an address, a name or quoted.
    pub value: bool,
    /// Written with a colon after it ("Vault code: ...").
    pub colon: bool,
    /// Written with a comma after it (the end of a condition).
    pub comma: bool,
}

/// The words of `sentence`, in order.
pub(super) fn words(sentence: &str) -> Vec<Word<'_>> {
    let mut found: Vec<Word<'_>> = Vec::new();
    // Words capitalised inside the sentence, which may be names: a language that
    // capitalises every noun (German) names nothing by it, and they are not values.
    let mut capitalised: Vec<usize> = Vec::new();
    // A capital after a sentence's end starts the next sentence: it names nothing.
    let mut starts = true;
    for token in sentence.split_whitespace() {
        let first = std::mem::replace(&mut starts, token.ends_with(['.', '!', '?', ':']));
        let quoted = token.starts_with(['"', '\'', '`', '\u{201c}', '\u{2018}', '«']);
        let colon = token.ends_with(':');
        let comma = token.ends_with(',');
        let raw = without_elision(token.trim_matches(is_edge_mark));
        if raw.is_empty() {
            continue;
        }
        let lower = raw.to_lowercase();
        let plain = is_plain_value(raw);
        let named = !plain && !first && is_name(raw, &lower);
        if named && !quoted {
            capitalised.push(found.len());
        }
        let value = quoted || plain || named;
        found.push(Word {
            raw,
            lower,
            value,
            colon,
            comma,
        });
    }
    if !capitalised.is_empty() && capitalises_nouns(found.iter().map(|word| word.lower.as_str())) {
        for at in capitalised {
            found[at].value = false;
        }
    }
    found
}

/// Punctuation around a word that is not part of it.
fn is_edge_mark(c: char) -> bool {
    matches!(
        c,
        '.' | ','
            | ';'
            | ':'
            | '!'
            | '?'
            | '('
            | ')'
            | '['
            | ']'
            | '{'
            | '}'
            | '"'
            | '\''
            | '`'
            | '\u{201c}'
            | '\u{201d}'
            | '\u{2018}'
            | '\u{2019}'
            | '«'
            | '»'
    )
}

/// The word without an elided article or preposition before it ("l'objectif",
/// "dell'audit", "d\u{2019}audit"), so it reads as the word it is.
fn without_elision(raw: &str) -> &str {
    let Some(at) = raw.find(['\'', '\u{2019}']) else {
        return raw;
    };
    let (head, tail) = raw.split_at(at);
    let rest = &tail[tail.chars().next().map_or(0, char::len_utf8)..];
    let elided = ELISIONS
        .iter()
        .any(|prefix| head.eq_ignore_ascii_case(prefix));
    if elided && rest.chars().count() >= 2 && rest.chars().next().is_some_and(char::is_alphabetic) {
        rest
    } else {
        raw
    }
}

/// Whether a word is a value by its characters: it holds a digit, a currency
/// sign, a path or address mark, or two capitals (a code).
fn is_plain_value(raw: &str) -> bool {
    if raw.bytes().any(|b| b.is_ascii_digit())
        || raw.starts_with(['$', '€', '£', '¥'])
        || raw.contains(['/', '\\', '@', '_'])
        || raw.contains("://")
    {
        return true;
    }
    raw.chars().filter(|c| c.is_uppercase()).count() >= 2 && raw.chars().count() >= 2
}

/// Whether a word not opening its sentence is capitalised as a name is.
fn is_name(raw: &str, lower: &str) -> bool {
    let capitalised = raw.chars().next().is_some_and(char::is_uppercase);
    capitalised && raw != "I" && !raw.starts_with("I'") && !CALENDAR.contains(&lower)
}

/// Whether any word is a value.
pub(super) fn has_value(words: &[Word<'_>]) -> bool {
    words.iter().any(|word| word.value)
}

/// How many leading words open the sentence without saying anything ("Update:",
/// "Actually,", "Please").
pub(super) fn leaders(words: &[Word<'_>]) -> usize {
    let mut at = 0;
    while at < words.len() {
        if LEADERS.contains(&words[at].lower.as_str()) {
            at += 1;
            continue;
        }
        let rest: Vec<&str> = words[at..].iter().map(|word| word.lower.as_str()).collect();
        match LEADER_PHRASES
            .iter()
            .find(|phrase| rest.starts_with(phrase))
        {
            Some(phrase) => at += phrase.len(),
            None => break,
        }
    }
    at
}

/// The subject of a sentence (see the module's description). Never empty.
#[must_use]
pub fn subject_of(sentence: &str) -> String {
    let words = words(sentence);
    let start = leaders(&words).min(words.len());
    let words = &words[start..];
    if let Some(named) = named_subject(words) {
        return named;
    }
    let skeleton = skeleton(words);
    if skeleton.is_empty() {
        let lowered: String = sentence.trim().to_lowercase().chars().take(60).collect();
        return lowered;
    }
    skeleton
}

/// The X of "X is V", "X changed to V", "X: V" or "set X to V", when V is a value.
fn named_subject(words: &[Word<'_>]) -> Option<String> {
    let lower: Vec<String> = words.iter().map(|word| word.lower.clone()).collect();
    if let Some((name, rest)) = setter(words, &lower) {
        return subject_if_valued(name, rest);
    }
    let colon = words
        .iter()
        .take(MAX_NAME_WORDS)
        .position(|word| word.colon)
        .map(|at| (at + 1, at + 1));
    let copula = (1..words.len().min(MAX_NAME_WORDS + 1)).find_map(|at| {
        COPULAS
            .iter()
            .find(|phrase| starts_with_phrase(&lower[at..], phrase))
            .map(|phrase| (at, at + phrase.len()))
    });
    // A numbered label names its line whatever follows ("Rule 3: keep file 1 read-only").
    if let Some((end, _)) = colon {
        let label = &words[..end];
        if label.len() <= MAX_LABEL_WORDS && label.iter().any(|word| word.value) {
            return Some(
                label
                    .iter()
                    .map(|word| word.lower.as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
            );
        }
    }
    let (name_end, value_start) = match (colon, copula) {
        (Some(colon), Some(copula)) => colon.min(copula),
        (found, None) | (None, found) => found?,
    };
    subject_if_valued(&words[..name_end], &words[value_start..])
}

/// "set X to V": the words of X and those after "to".
fn setter<'w, 'a>(
    words: &'w [Word<'a>],
    lower: &[String],
) -> Option<(&'w [Word<'a>], &'w [Word<'a>])> {
    if !SETTERS.contains(&lower.first()?.as_str()) {
        return None;
    }
    let to = lower
        .iter()
        .take(MAX_NAME_WORDS + 2)
        .position(|word| word == "to")?;
    (to > 1).then(|| (&words[1..to], &words[to + 1..]))
}

/// The subject named by `name` when `rest` opens with a value.
fn subject_if_valued(name: &[Word<'_>], rest: &[Word<'_>]) -> Option<String> {
    if name.is_empty() || name.len() > MAX_NAME_WORDS {
        return None;
    }
    // "It is 42", "What I need is ...": a name that opens with a pointer names
    // nothing of its own.
    if POINTERS.contains(&name[0].lower.as_str()) {
        return None;
    }
    if !rest.iter().take(VALUE_REACH).any(|word| word.value) {
        return None;
    }
    // Values in the name tell subjects apart ("Rule 3: ...", "Server 7 port is ...").
    let kept: Vec<&str> = name
        .iter()
        .filter(|word| word.value || !SUBJECT_STOPWORDS.contains(&word.lower.as_str()))
        .map(|word| word.lower.as_str())
        .take(MAX_SUBJECT_WORDS)
        .collect();
    // "The goal is ...", "Your task: ...": a word that names a kind of statement
    // would make every goal one subject; the sentence's own words tell them apart.
    if let [only] = kept.as_slice() {
        if GENERIC_NAMES.contains(only) {
            return None;
        }
    }
    (!kept.is_empty()).then(|| kept.join(" "))
}

/// The subject of a sentence that names none: its words without values. With two
/// values or more, the first stays: it names what the sentence is about ("Server 3
/// runs at host-3 on port 8003"), the others are what may change.
fn skeleton(words: &[Word<'_>]) -> String {
    let runs = words
        .iter()
        .enumerate()
        .filter(|(at, word)| word.value && (*at == 0 || !words[at - 1].value))
        .count();
    if runs < 2 {
        return join_subject(words.iter());
    }
    let first_run = words.iter().position(|word| word.value).unwrap_or(0);
    let run_end = words[first_run..]
        .iter()
        .position(|word| !word.value)
        .map_or(words.len(), |n| first_run + n);
    let kept: Vec<&str> = words
        .iter()
        .enumerate()
        .filter(|(at, word)| {
            (first_run..run_end).contains(at)
                || (!word.value && !SUBJECT_STOPWORDS.contains(&word.lower.as_str()))
        })
        .map(|(_, word)| word.lower.as_str())
        .take(MAX_SUBJECT_WORDS)
        .collect();
    kept.join(" ")
}

/// The words that tell a subject apart, lowercased and joined by spaces.
fn join_subject<'w, 'a: 'w>(words: impl Iterator<Item = &'w Word<'a>>) -> String {
    let kept: Vec<&str> = words
        .filter(|word| !word.value && !SUBJECT_STOPWORDS.contains(&word.lower.as_str()))
        .map(|word| word.lower.as_str())
        .take(MAX_SUBJECT_WORDS)
        .collect();
    kept.join(" ")
}
