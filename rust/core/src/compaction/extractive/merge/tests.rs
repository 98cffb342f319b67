use std::cell::Cell;

use proptest::prelude::*;

use super::super::{extractive_summary, SectionKind, SourceMessage, SourceTool};
use super::parse::parse;
use super::{merge_summaries, KEPT_TITLE};
use crate::tokens::TokenCounter;

fn msg<'a>(role: &'a str, seq: i64, text: &'a str) -> SourceMessage<'a> {
    SourceMessage {
        role,
        seq,
        texts: vec![text],
        ..SourceMessage::default()
    }
}

fn tool_message(seq: i64) -> SourceMessage<'static> {
    SourceMessage {
        role: "assistant",
        seq,
        tools: vec![SourceTool {
            name: "read_file",
            input: r#"{"path": "src/lexer.rs"}"#,
            status: "completed",
            output: Some("ok"),
            error: None,
        }],
        ..SourceMessage::default()
    }
}

fn counter() -> TokenCounter {
    TokenCounter::new("gpt-4o", 1.0)
}

fn merge(bodies: &[&str], max_tokens: usize) -> String {
    let counter = counter();
    merge_summaries(bodies, max_tokens, &|text| counter.count(text))
}

/// A summary as the extractive summariser lays it out.
fn summary(goal: &str, constraints: &[&str], discoveries: &[&str]) -> String {
    let mut out = format!("## Goal\n{goal}");
    for (title, items) in [
        ("## Instructions and constraints", constraints),
        ("## Discoveries", discoveries),
    ] {
        if !items.is_empty() {
            out.push_str("\n\n");
            out.push_str(title);
            for item in items {
                out.push_str("\n- ");
                out.push_str(item);
            }
        }
    }
    out
}

fn section<'a>(text: &'a str, title: &str) -> Vec<&'a str> {
    let Some(start) = text.find(&format!("{title}\n")) else {
        return Vec::new();
    };
    text[start + title.len() + 1..]
        .split("\n\n")
        .next()
        .unwrap_or("")
        .lines()
        .map(|line| line.strip_prefix("- ").unwrap_or(line))
        .collect()
}

#[test]
fn same_titled_sections_merge_in_display_order() {
    let older = summary("Fix the parser", &["Never change the API."], &["found a"]);
    let newer = summary("Fix the parser", &["Keep tests green."], &["found b"]);
    let merged = merge(&[&older, &newer], 10_000);
    assert_eq!(merged.matches("## Discoveries").count(), 1, "{merged}");
    assert_eq!(section(&merged, "## Discoveries"), ["found a", "found b"]);
    assert_eq!(
        section(&merged, "## Instructions and constraints"),
        ["Never change the API.", "Keep tests green."]
    );
    assert_eq!(section(&merged, "## Goal"), ["Fix the parser"]);
    let goal = merged.find("## Goal").unwrap();
    let constraints = merged.find("## Instructions").unwrap();
    let discoveries = merged.find("## Discoveries").unwrap();
    assert!(goal < constraints && constraints < discoveries, "{merged}");
}

#[test]
fn a_repeated_item_keeps_only_its_newest_place() {
    let older = summary("g", &[], &["found x", "found y"]);
    let newer = summary("g", &[], &["found z", "found x"]);
    let merged = merge(&[&older, &newer], 10_000);
    assert_eq!(
        section(&merged, "## Discoveries"),
        ["found y", "found z", "found x"]
    );
}

fn numbered(prefix: &str, from: usize, to: usize) -> Vec<String> {
    (from..to)
        .map(|n| format!("{prefix} {n}: the ledger module rounds minor units"))
        .collect()
}

/// Eight summaries of ten discoveries each, numbered oldest first.
fn eight_summaries() -> Vec<String> {
    (0..8)
        .map(|index| {
            let items = numbered("discovery", index * 10, index * 10 + 10);
            let items: Vec<&str> = items.iter().map(String::as_str).collect();
            summary(&format!("goal {index}"), &[], &items)
        })
        .collect()
}

#[test]
fn over_budget_the_newest_items_stay_and_the_oldest_go() {
    let summaries = eight_summaries();
    let bodies: Vec<&str> = summaries.iter().map(String::as_str).collect();
    let merged = merge(&bodies, 300);
    assert!(counter().count(&merged) <= 300);
    let kept = section(&merged, "## Discoveries");
    assert!(kept.len() > 5 && kept.len() < 80, "{merged}");
    assert!(kept.contains(&"discovery 79: the ledger module rounds minor units"));
    assert!(!kept.contains(&"discovery 0: the ledger module rounds minor units"));
    // What is kept is a run of the newest: no older item without every newer one.
    let first: usize = kept[0]["discovery ".len()..]
        .split(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(kept.len(), 80 - first, "{merged}");
}

#[test]
fn constraints_are_kept_over_discoveries() {
    let constraints = numbered("rule", 0, 6);
    let constraints: Vec<&str> = constraints.iter().map(String::as_str).collect();
    let discoveries = numbered("found", 0, 40);
    let discoveries: Vec<&str> = discoveries.iter().map(String::as_str).collect();
    let older = summary("g", &constraints[..3], &discoveries[..20]);
    let newer = summary("g", &constraints[3..], &discoveries[20..]);
    let merged = merge(&[&older, &newer], 150);
    assert_eq!(
        section(&merged, "## Instructions and constraints"),
        constraints,
        "{merged}"
    );
    assert!(section(&merged, "## Discoveries").len() < 40);
}

#[test]
fn the_oldest_goal_is_kept_before_the_newest_when_room_allows() {
    let first = summary("Port the billing service to Rust", &[], &[]);
    let middle = summary("Add the refund endpoint", &[], &[]);
    let last = summary("Write the migration guide", &[], &[]);
    let merged = merge(&[&first, &middle, &last], 10_000);
    assert_eq!(
        section(&merged, "## Goal"),
        [
            "Port the billing service to Rust",
            "Write the migration guide"
        ]
    );
    let tight = merge(&[&first, &middle, &last], 9);
    assert_eq!(
        section(&tight, "## Goal"),
        ["Write the migration guide"],
        "{tight}"
    );
}

#[test]
fn the_request_in_progress_is_the_newest_one() {
    let older = "## Goal\nFix the parser\n\n## In progress\nAdd a regression test";
    let newer_goal_only = "## Goal\nUpdate the changelog";
    let merged = merge(&[older, newer_goal_only], 10_000);
    // The newer summary's messages asked only its goal: the older request is done.
    assert!(!merged.contains("## In progress"), "{merged}");
    let newest = "## Goal\nUpdate the changelog\n\n## In progress\nTag the release";
    let merged = merge(&[older, newest], 10_000);
    assert_eq!(section(&merged, "## In progress"), ["Tag the release"]);
}

#[test]
fn a_summary_in_another_form_is_kept_whole_in_order() {
    let model = "The agent fixed the parser.\n\n### Notes\n- keep the API";
    let erased = "[erased] Part of what this summary covered (messages 3 to 9, 7 in all) \
                  was erased on request. The rest of its sources can still be expanded.";
    let sectioned = summary("Fix the parser", &["Never change the API."], &[]);
    let merged = merge(&[model, &sectioned, erased], 10_000);
    let kept = &merged[merged.find(KEPT_TITLE).expect("kept section")..];
    assert!(kept.contains(model) && kept.contains(erased), "{merged}");
    assert!(kept.find(model) < kept.find(erased), "oldest first");
    assert!(merged.starts_with("## Goal\nFix the parser"), "{merged}");
}

#[test]
fn a_merge_reads_back_as_the_merge_of_its_sources() {
    let summaries = eight_summaries();
    let model = "A model wrote this.\n## Its own heading\ntext";
    let mut bodies: Vec<&str> = summaries.iter().map(String::as_str).collect();
    bodies.insert(3, model);
    let whole = merge(&bodies, 100_000);
    let head = merge(&bodies[..5], 100_000);
    let mut nested = vec![head.as_str()];
    nested.extend(&bodies[5..]);
    assert_eq!(merge(&nested, 100_000), whole);
}

#[test]
fn the_extractive_summary_reads_back_as_its_sections() {
    let messages = [
        msg(
            "user",
            1,
            "Fix the crash in the parser. Never change the public API.",
        ),
        tool_message(2),
        msg("user", 3, "Now add a regression test."),
        msg("assistant", 4, "I found the root cause in the lexer."),
    ];
    let text = extractive_summary(&messages, 2_000, &|text| counter().count(text));
    let parsed = parse(&text).expect("the extractive form");
    let kinds: Vec<SectionKind> = parsed.sections.iter().map(|(kind, _)| *kind).collect();
    assert!(kinds.contains(&SectionKind::Constraints), "{text}");
    assert!(kinds.contains(&SectionKind::InProgress), "{text}");
    assert!(parsed.kept.is_empty());
    assert_eq!(
        merge(&[&text], 2_000),
        text,
        "read back and written again as it was"
    );
}

#[test]
fn only_a_summary_larger_than_the_budget_is_truncated() {
    let huge = format!("[deterministic truncation] {}", "word ".repeat(3_000));
    let small = "## Goal\nShip it";
    let merged = merge(&[small, &huge], 200);
    assert!(counter().count(&merged) <= 200);
    // The large summary is left out rather than cut; the goal stays whole.
    assert_eq!(merged, "## Goal\nShip it");
    let alone = merge(&[&huge], 200);
    assert!(counter().count(&alone) <= 200 && alone.starts_with(KEPT_TITLE));
}

#[test]
fn counting_is_bounded_whatever_the_number_of_items() {
    let summaries: Vec<String> = (0..200)
        .map(|index| {
            let items = numbered("found", index * 20, index * 20 + 20);
            let items: Vec<&str> = items.iter().map(String::as_str).collect();
            summary(&format!("goal {index}"), &items[..2], &items[2..])
        })
        .collect();
    let bodies: Vec<&str> = summaries.iter().map(String::as_str).collect();
    let calls = Cell::new(0usize);
    let counter = counter();
    let merged = merge_summaries(&bodies, 1_500, &|text| {
        calls.set(calls.get() + 1);
        counter.count(text)
    });
    assert!(counter.count(&merged) <= 1_500);
    assert!(calls.get() <= 12, "{} counts", calls.get());
}

#[test]
fn merging_is_deterministic() {
    let summaries = eight_summaries();
    let bodies: Vec<&str> = summaries.iter().map(String::as_str).collect();
    let runs: Vec<String> = (0..3).map(|_| merge(&bodies, 400)).collect();
    assert!(runs.windows(2).all(|pair| pair[0] == pair[1]));
}

fn any_summary() -> impl Strategy<Value = String> {
    let item = "[a-z]{1,8}( [a-z]{1,8}){0,12}";
    prop_oneof![
        (
            item,
            prop::collection::vec(item, 0..6),
            prop::collection::vec(item, 0..12)
        )
            .prop_map(|(goal, constraints, discoveries)| {
                let constraints: Vec<&str> = constraints.iter().map(String::as_str).collect();
                let discoveries: Vec<&str> = discoveries.iter().map(String::as_str).collect();
                summary(&goal, &constraints, &discoveries)
            }),
        "\\PC{0,400}",
        "[a-z ]{0,2000}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn a_merge_never_exceeds_its_budget(
        summaries in prop::collection::vec(any_summary(), 1..9),
        max_tokens in 1_usize..1_500,
    ) {
        let bodies: Vec<&str> = summaries.iter().map(String::as_str).collect();
        let merged = merge(&bodies, max_tokens);
        prop_assert!(counter().count(&merged) <= max_tokens, "{merged}");
        prop_assert_eq!(merge(&bodies, max_tokens), merged);
    }
}

#[test]
fn lines_of_counts_are_summed_not_repeated() {
    let older = "## Goal\ng\n\n## Completed\n- Tool calls completed: read_file x3, bash x1\n\
                 - Added the test\n\n## Other context\n\
                 - Messages covered: 6 (seq 1-6); user 2, assistant 4, system 0\n\
                 - Tool calls: 4, failed: 1";
    let newer = "## Goal\ng\n\n## Completed\n- Tool calls completed: bash x4, read_file x1\n\n\
                 ## Other context\n- Messages covered: 5 (seq 7-11); user 1, assistant 4, system 0\n\
                 - Tool calls: 5, failed: 0";
    let merged = merge(&[older, newer], 10_000);
    assert_eq!(
        section(&merged, "## Completed"),
        [
            "Tool calls completed: bash x5, read_file x4",
            "Added the test"
        ]
    );
    assert_eq!(
        section(&merged, "## Other context"),
        [
            "Messages covered: 11 (seq 1-11); user 3, assistant 8, system 0",
            "Tool calls: 9, failed: 1"
        ]
    );
}

#[test]
fn files_stay_newest_first_as_the_extractive_summariser_shows_them() {
    let older = "## Relevant files\n- src/b.rs\n- src/a.rs";
    let newer = "## Relevant files\n- src/d.rs\n- src/b.rs\n- src/c.rs";
    let merged = merge(&[older, newer], 10_000);
    assert_eq!(
        section(&merged, "## Relevant files"),
        ["src/d.rs", "src/b.rs", "src/c.rs", "src/a.rs"]
    );
    // Over budget, the file mentioned longest ago goes first.
    let tight = merge(&[older, newer], 18);
    assert!(
        !tight.contains("src/a.rs") && tight.contains("src/d.rs"),
        "{tight}"
    );
}
