//! Checks a model-written summary against what the built-in extractive pass found
//! in the same messages: the user's instructions and constraints, and the
//! identifiers (paths, names, ids) the work refers to. A small model may drop a
//! "never touch `legacy_billing/`" rule or echo its own prompt; a summary is kept
//! only once nothing required is missing, and one that mostly repeats the prompt
//! is refused.

use std::collections::HashSet;

/// The extractive summary's section of user instructions and constraints.
const CONSTRAINTS_TITLE: &str = "## Instructions and constraints";
/// The extractive summary's section of files the work touched.
const FILES_TITLE: &str = "## Relevant files";
/// The section a checked summary gains for what it left out.
pub const KEPT_TITLE: &str = "## Kept from the source";
/// Words of one shingle when comparing a summary with its prompt.
const SHINGLE_WORDS: usize = 4;
/// Share of a constraint's content words a summary must contain to keep it.
const WORDS_KEPT: f64 = 0.5;

/// What a check found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SummaryCheck {
    /// Constraints and identifiers of the source that the summary left out, as the
    /// extractive pass wrote them.
    pub missing: Vec<String>,
    /// Share of the summary's word shingles that also occur in the prompt.
    pub prompt_echo: f64,
    /// Share of the summary's word shingles that repeat an earlier one: a small
    /// model stuck in a loop writes the same phrase over and over.
    pub repetition: f64,
}

/// Checks `summary` against `extractive` (the built-in summary of the same
/// messages) and `prompt` (the instructions the model was given).
#[must_use]
pub fn check_summary(summary: &str, extractive: &str, prompt: &str) -> SummaryCheck {
    let lowered = summary.to_lowercase();
    let words: HashSet<&str> = content_words(&lowered).collect();
    let mut missing = Vec::new();
    for constraint in section_items(extractive, CONSTRAINTS_TITLE) {
        if !constraint_kept(constraint, summary, &words) {
            missing.push(constraint.to_string());
        }
    }
    for file in section_items(extractive, FILES_TITLE) {
        if !summary.contains(file) && !missing.iter().any(|kept| kept.contains(file)) {
            missing.push(file.to_string());
        }
    }
    SummaryCheck {
        missing,
        prompt_echo: echo_share(&lowered, &prompt.to_lowercase()),
        repetition: repetition(&lowered),
    }
}

/// `summary` with the items it left out appended in their own section.
#[must_use]
pub fn with_kept(summary: &str, missing: &[String]) -> String {
    if missing.is_empty() {
        return summary.to_string();
    }
    let mut text = summary.trim_end().to_string();
    text.push_str("\n\n");
    text.push_str(KEPT_TITLE);
    for item in missing {
        text.push_str("\n- ");
        text.push_str(item);
    }
    text
}

/// The bullet items of every section titled `title` in a markdown text (a condensed
/// summary's input holds one per summary), without repeats.
fn section_items<'a>(text: &'a str, title: &str) -> Vec<&'a str> {
    let mut items: Vec<&str> = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with("## ") {
            inside = line.trim() == title;
            continue;
        }
        let Some(item) = line.trim().strip_prefix("- ").map(str::trim) else {
            continue;
        };
        if inside && !item.is_empty() && !items.contains(&item) {
            items.push(item);
        }
    }
    items
}

/// A constraint is kept when every identifier in it appears verbatim and at least
/// half of its content words appear in the summary.
fn constraint_kept(constraint: &str, summary: &str, words: &HashSet<&str>) -> bool {
    if !identifiers(constraint).all(|identifier| summary.contains(identifier)) {
        return false;
    }
    let lowered = constraint.to_lowercase();
    let needed: Vec<&str> = content_words(&lowered).collect();
    if needed.is_empty() {
        return true;
    }
    let found = needed.iter().filter(|word| words.contains(*word)).count();
    found as f64 / needed.len() as f64 >= WORDS_KEPT
}

/// Words that carry meaning: four letters or more.
fn content_words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|word| word.chars().count() >= 4)
}

/// Tokens that name something exactly: paths, dotted or `snake_case` names, ids.
fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | '"' | '`' | '\''))
        .map(|token| token.trim_end_matches(['.', ':', '!', '?']))
        .filter(|token| {
            let has_letter = token.chars().any(char::is_alphabetic);
            has_letter && token.len() >= 3 && token.contains(['/', '_', '.'])
        })
}

/// Shingles below which a text is too short to call repetitive.
const MIN_SHINGLES: usize = 8;

/// Share of the word shingles of `text` that repeat an earlier one. Words are split
/// at every character that is not a letter or digit, so `a.a.a.a` repeats too.
fn repetition(text: &str) -> f64 {
    let words: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .collect();
    let shingles: Vec<&[&str]> = words.windows(SHINGLE_WORDS).collect();
    if shingles.len() < MIN_SHINGLES {
        return 0.0;
    }
    let distinct: HashSet<&[&str]> = shingles.iter().copied().collect();
    1.0 - distinct.len() as f64 / shingles.len() as f64
}

/// Share of the word shingles of `summary` that occur in `prompt`.
fn echo_share(summary: &str, prompt: &str) -> f64 {
    let shingles = |text: &str| -> Vec<String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        words
            .windows(SHINGLE_WORDS)
            .map(|window| window.join(" "))
            .collect()
    };
    let ours = shingles(summary);
    if ours.is_empty() {
        return 0.0;
    }
    let theirs: HashSet<String> = shingles(prompt).into_iter().collect();
    let shared = ours
        .iter()
        .filter(|shingle| theirs.contains(*shingle))
        .count();
    shared as f64 / ours.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXTRACTIVE: &str = "## Goal\nRefactor it.\n\n## Instructions and constraints\n\
        - Refactor the payout client in src/payout/client.py; never touch legacy_billing/.\n\
        - Always run pytest -q before committing.\n\n## Relevant files\n- src/payout/client.py\n\
        - docs/spec.md\n\n## Other context\n- Messages covered: 5";

    #[test]
    fn a_summary_that_keeps_everything_passes() {
        let summary = "The user asked to refactor the payout client (src/payout/client.py) \
            and never touch legacy_billing/. Always run pytest before committing. \
            Spec in docs/spec.md.";
        let check = check_summary(summary, EXTRACTIVE, "Summarise the conversation.");
        assert!(check.missing.is_empty(), "{:?}", check.missing);
        assert!(check.prompt_echo < 0.1);
    }

    #[test]
    fn a_dropped_rule_and_a_dropped_path_are_found_and_added_back() {
        let summary = "Refactored the payout client in src/payout/client.py; tests pass.";
        let check = check_summary(summary, EXTRACTIVE, "");
        assert_eq!(
            check.missing,
            vec![
                "Refactor the payout client in src/payout/client.py; never touch legacy_billing/.",
                "Always run pytest -q before committing.",
                "docs/spec.md",
            ]
        );
        let fixed = with_kept(summary, &check.missing);
        assert!(fixed.contains("legacy_billing/") && fixed.contains(KEPT_TITLE));
        assert!(check_summary(&fixed, EXTRACTIVE, "").missing.is_empty());
    }

    #[test]
    fn a_summary_that_repeats_its_prompt_is_measured_as_an_echo() {
        let prompt = "You summarise a coding session. Keep every instruction the user gave \
            and every file path. Write short markdown sections.";
        let echo = "You summarise a coding session. Keep every instruction the user gave \
            and every file path.";
        assert!(check_summary(echo, EXTRACTIVE, prompt).prompt_echo > 0.9);
    }

    #[test]
    fn every_constraints_section_of_a_condensed_input_counts() {
        let input = "## Instructions and constraints\n- Keep prices in minor units.\n\n---\n\n\
            ## Instructions and constraints\n- Never call the live_payments API.\n";
        let check = check_summary("Prices stay in minor units.", input, "");
        assert_eq!(check.missing, vec!["Never call the live_payments API."]);
    }

    #[test]
    fn a_summary_stuck_in_a_loop_is_measured_as_repetitive() {
        let looping = "Summary: payout.payout.payout.payout.payout.payout.payout.payout.payout.payout.payout.payout";
        assert!(check_summary(looping, "", "").repetition >= 0.75);
        let sentence = "The client retries failed payouts. ";
        assert!(check_summary(&sentence.repeat(6), "", "").repetition > 0.6);
        let fine = "The user asked to refactor the payout client without touching the legacy \
            billing module. Tests in tests/test_payout.py failed twice on rounding, then passed \
            after amounts moved to minor units.";
        assert!(check_summary(fine, "", "").repetition < 0.1);
    }

    #[test]
    fn identifiers_are_paths_and_names_not_plain_words() {
        let found: Vec<&str> =
            identifiers("never touch legacy_billing/, use Client.retry, see v1.2 and a.b end.")
                .collect();
        assert_eq!(
            found,
            vec!["legacy_billing/", "Client.retry", "v1.2", "a.b"]
        );
    }
}
