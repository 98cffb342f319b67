//! The built-in rules that find ledger items in messages: deterministic, no model.
//!
//! Only what people wrote becomes a rule, a constraint, a fact, a goal or a
//! preference: user and system text. The agent's own text gives decisions and the
//! state of the work; tool calls give the files, commands and errors of
//! [`super::records`]. Tool output never becomes an instruction.

use super::cues::{bit, cue_bits, cues_of, has_phrase, phrases_of, ANAPHORS, COPULA_BIT};
use super::sentences::sentences;
use super::subject::{has_value, leaders, subject_of, words, Word};
use super::{records, Found, Kind};
use crate::extractive::SourceMessage;

/// Fewest words of a sentence that can be an item.
const MIN_WORDS: usize = 3;
/// Most words of a sentence that points back to the one before ("Never exceed it").
const MAX_POINTER_WORDS: usize = 8;
/// Fewest words of a sentence with a value that is a fact without a linking verb.
const MIN_FACT_WORDS: usize = 4;
/// Fewest words of the sentence that tells the state of the work.
const MIN_STATE_WORDS: usize = 4;

/// Who wrote a text.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Speaker {
    Person,
    Agent,
}

/// The items of `messages` (oldest first), in the order they were said.
#[must_use]
pub fn extract(messages: &[SourceMessage<'_>]) -> Vec<Found> {
    let mut found = Vec::new();
    for message in messages {
        match message.role {
            "user" | "system" => statements(message, Speaker::Person, &mut found),
            "assistant" => statements(message, Speaker::Agent, &mut found),
            _ => {}
        }
        records::from_tools(message, &mut found);
    }
    if let Some(state) = newest_state(messages) {
        found.push(state);
    }
    found
}

/// The items of one message's text.
fn statements(message: &SourceMessage<'_>, speaker: Speaker, found: &mut Vec<Found>) {
    for text in &message.texts {
        // The item the sentence before gave, which a pointer may extend.
        let mut previous: Option<(usize, &str)> = None;
        for sentence in sentences(text) {
            let words = words(sentence);
            let classified = classify(sentence, &words, speaker);
            let note = classified.is_none() && speaker == Speaker::Person && limit_note(&words);
            let Some(kind) = classified.or(note.then_some(Kind::Constraint)) else {
                previous = None;
                continue;
            };
            if let Some(at) = extends(previous, &words, kind) {
                let before = &mut found[at];
                before.text = format!("{} {sentence}", before.text);
                before.kind = joined_kind(before.kind, kind);
                previous = None;
                continue;
            }
            if note {
                // "That is a hard limit." says nothing without the sentence before.
                previous = None;
                continue;
            }
            let mut item = Found::new(
                kind,
                subject_of(sentence),
                sentence.to_string(),
                message.seq,
            );
            mark_replacement(&words, &mut item);
            previous = Some((found.len(), sentence));
            found.push(item);
        }
    }
}

/// The index of the item a short rule pointing back ("Never exceed it") joins.
fn extends(previous: Option<(usize, &str)>, words: &[Word<'_>], kind: Kind) -> Option<usize> {
    let (at, _) = previous?;
    let points = words.len() <= MAX_POINTER_WORDS
        && words
            .iter()
            .any(|word| ANAPHORS.contains(&word.lower.as_str()))
        && matches!(kind, Kind::Rule | Kind::Constraint);
    points.then_some(at)
}

/// A short sentence pointing back that calls what came before a limit ("That is
/// a hard limit."): with the value before it, a constraint.
fn limit_note(words: &[Word<'_>]) -> bool {
    let lower: Vec<String> = words.iter().map(|word| word.lower.clone()).collect();
    words.len() <= MAX_POINTER_WORDS
        && !has_value(words)
        && lower.iter().any(|word| ANAPHORS.contains(&word.as_str()))
        && (cues_of(&lower) | phrases_of(&lower)) & bit::LIMIT != 0
}

/// A value stated, then a rule about it: a hard constraint.
fn joined_kind(before: Kind, rule: Kind) -> Kind {
    match before {
        Kind::Fact | Kind::Constraint => Kind::Constraint,
        _ => before.stronger(rule),
    }
}

/// "use X instead of Y" replaces the item holding Y; "the Z changed to X", "use X
/// instead for the Z" or "Z is now X" replace the item whose subject Z names.
fn mark_replacement(words: &[Word<'_>], item: &mut Found) {
    let lower: Vec<String> = words.iter().map(|word| word.lower.clone()).collect();
    item.restates = (cues_of(&lower) | phrases_of(&lower)) & bit::RESTATE != 0;
    let Some(at) = lower
        .iter()
        .position(|word| word == "instead" || word == "rather")
    else {
        return;
    };
    let after = &words[at + 1..];
    let named: Vec<&str> = after
        .iter()
        .skip_while(|word| matches!(word.lower.as_str(), "of" | "than" | "the" | "a"))
        .take_while(|word| word.value)
        .map(|word| word.raw)
        .collect();
    if !named.is_empty() && matches!(after.first().map(|w| w.lower.as_str()), Some("of" | "than")) {
        item.replaces = Some(named.join(" "));
    } else if after.first().is_some_and(|word| word.lower == "for") {
        // "use X instead for the protected branch": the subject is what follows.
        let rest: Vec<&str> = after[1..].iter().map(|word| word.raw).collect();
        item.subject = subject_of(&rest.join(" "));
    }
}

/// What a sentence is, if it is an item at all.
fn classify(sentence: &str, words: &[Word<'_>], speaker: Speaker) -> Option<Kind> {
    if words.len() < MIN_WORDS || sentence.trim_end().ends_with('?') {
        return None;
    }
    let start = leaders(words).min(words.len());
    let body: Vec<String> = words[start..]
        .iter()
        .map(|word| word.lower.clone())
        .collect();
    let cues = Cues::of(&body, &words[start..]);
    match speaker {
        Speaker::Agent => cues.decided.then_some(Kind::Decision),
        Speaker::Person => cues.kind(),
    }
}

/// What the words of a sentence say about it.
// Each flag is one cue the sentence holds or lacks, read once and combined in
// `kind`: a set of bits would only hide their names.
#[allow(clippy::struct_excessive_bools)]
struct Cues {
    ruled: bool,
    limited: bool,
    valued: bool,
    styled: bool,
    prefers: bool,
    decided: bool,
    goal: bool,
    stated: bool,
    words: usize,
}

impl Cues {
    fn of(body: &[String], words: &[Word<'_>]) -> Cues {
        let bits = cues_of(body) | phrases_of(body);
        let has = |flag: u16| bits & flag != 0;
        let valued = has_value(words);
        let styled = has(bit::STYLE);
        Cues {
            ruled: has(bit::RULE) || standing_instruction(body, words, bits, valued || styled),
            limited: has(bit::LIMIT) && !has_phrase(body, &["under", "no", "circumstances"]),
            valued,
            styled,
            prefers: has(bit::PREFERENCE),
            decided: has(bit::DECISION),
            goal: has(bit::GOAL),
            stated: has(COPULA_BIT) || words.iter().any(|word| word.colon),
            words: body.len(),
        }
    }

    /// The kind of a person's sentence.
    fn kind(&self) -> Option<Kind> {
        if self.goal {
            return Some(Kind::Goal);
        }
        if self.prefers || (self.ruled && self.styled) {
            return Some(Kind::Preference);
        }
        if self.ruled {
            let limit = self.valued && self.limited;
            return Some(if limit { Kind::Constraint } else { Kind::Rule });
        }
        if self.decided {
            return Some(Kind::Decision);
        }
        if self.valued && self.limited {
            return Some(Kind::Constraint);
        }
        // A value a person states is a fact, linked to its subject or not ("Server
        // 3 runs at host-3", "Ship it to Dana Whitfield's office").
        (self.valued && (self.stated || self.words >= MIN_FACT_WORDS)).then_some(Kind::Fact)
    }
}

/// An instruction that holds beyond the next step: it opens with a verb (or a
/// condition, then a verb) and has a condition, an "every" or "any", a value or
/// a word about how answers look. "Check the logs" alone is a one-off request.
fn standing_instruction(body: &[String], words: &[Word<'_>], bits: u16, specific: bool) -> bool {
    let first = body.first().map(String::as_str).unwrap_or_default();
    let conditioned = cue_bits(first) & bit::CONDITION != 0;
    let verb_first = cue_bits(first) & bit::IMPERATIVE != 0
        || (conditioned && verb_after_condition(body, words));
    verb_first && (bits & (bit::CONDITION | bit::ABSOLUTE) != 0 || specific)
}

/// "If the deploy fails, stop and escalate": the word after the condition's comma
/// is a verb.
fn verb_after_condition(body: &[String], words: &[Word<'_>]) -> bool {
    let offset = words.len() - body.len();
    words[offset..]
        .iter()
        .position(|word| word.comma)
        .and_then(|at| body.get(at + 1))
        .is_some_and(|word| cue_bits(word) & bit::IMPERATIVE != 0)
}

/// The state of the work: the first statement of the newest text the agent wrote.
fn newest_state(messages: &[SourceMessage<'_>]) -> Option<Found> {
    let message = messages.iter().rev().find(|message| {
        message.role == "assistant" && message.texts.iter().any(|t| !t.trim().is_empty())
    })?;
    let sentence = message
        .texts
        .iter()
        .flat_map(|text| sentences(text))
        .find(|sentence| !sentence.ends_with('?') && words(sentence).len() >= MIN_STATE_WORDS)?;
    Some(Found::new(
        Kind::State,
        "state".into(),
        sentence.to_string(),
        message.seq,
    ))
}
