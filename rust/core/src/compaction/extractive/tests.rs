use super::collect::{clip, clip_parts};
use super::scan::{
    apply, classify8, looks_like_path, scan_json_strings, scan_sentences, word_kind, Kw, Tags,
    KEYWORDS,
};
use super::*;
use proptest::prelude::*;
use std::cell::Cell;

fn words(s: &str) -> usize {
    s.split_whitespace().count()
}

fn msg<'a>(role: &'a str, seq: i64, text: &'a str) -> SourceMessage<'a> {
    SourceMessage {
        role,
        seq,
        texts: vec![text],
        ..SourceMessage::default()
    }
}

fn tool<'a>(name: &'a str, input: &'a str, status: &'a str) -> SourceTool<'a> {
    SourceTool {
        name,
        input,
        status,
        output: Some("ok"),
        error: None,
    }
}

fn transcript() -> Vec<SourceMessage<'static>> {
    let mut a1 = msg(
        "assistant",
        2,
        "I read the parser. The root cause is an off-by-one in the tokenizer. \
         I fixed the bounds check in src/lexer.rs.",
    );
    a1.tools = vec![
        tool("read_file", r#"{"path": "src/lexer.rs"}"#, "completed"),
        tool("read_file", r#"{"path": "src/parser.rs"}"#, "completed"),
        tool("run_tests", r#"{"cmd": "cargo test"}"#, "completed"),
        SourceTool {
            name: "bash",
            input: r#"{"command": "make lint", "cwd": "/srv/app/"}"#,
            status: "error",
            output: None,
            error: Some("make: *** No rule to make target 'lint'.\nStop."),
        },
    ];
    let mut u2 = msg(
        "user",
        3,
        "Great. Now add a regression test. Make sure it covers empty input.\n\
         TODO: update the changelog afterwards",
    );
    u2.file_refs = vec![SourceFileRef {
        file_id: "file_0123abcd",
        path: "docs/spec.md",
    }];
    vec![
        msg(
            "user",
            1,
            "Fix the crash in the parser when the input ends with a quote. \
             Never change the public API. You must keep the tests green!",
        ),
        a1,
        u2,
        msg(
            "assistant",
            4,
            "Added the test. Next I will update the changelog.",
        ),
    ]
}

#[test]
fn sections_from_small_transcript() {
    let msgs = transcript();
    let out = extractive_summary(&msgs, 10_000, &words);
    let expected = "\
## Goal
Fix the crash in the parser when the input ends with a quote. Never change the public API. You must keep the tests green!

## Instructions and constraints
- Never change the public API.
- You must keep the tests green!
- Make sure it covers empty input.

## Discoveries
- The root cause is an off-by-one in the tokenizer.

## Completed
- Tool calls completed: read_file x2, run_tests x1
- I fixed the bounds check in src/lexer.rs.
- Added the test.

## In progress
Great. Now add a regression test. Make sure it covers empty input. TODO: update the changelog afterwards

## Remaining
- TODO: update the changelog afterwards
- Next I will update the changelog.

## Relevant files
- docs/spec.md (file_0123abcd)
- /srv/app/
- src/parser.rs
- src/lexer.rs

## Failed tools
- bash: make: *** No rule to make target 'lint'.

## Other context
- Messages covered: 4 (seq 1-4); user 2, assistant 2, system 0
- Tool calls: 4, failed: 1";
    assert_eq!(out, expected);
}

#[test]
fn deterministic() {
    let msgs = transcript();
    let counter = crate::tokens::TokenCounter::new("gpt-4o", 1.0);
    let count = |s: &str| counter.count(s);
    for budget in [0, 5, 30, 80, 200, 10_000] {
        let a = extractive_summary(&msgs, budget, &count);
        let b = extractive_summary(&msgs, budget, &count);
        assert_eq!(a, b);
        assert!(count(&a) <= budget);
    }
}

#[test]
fn tight_budget_keeps_priorities() {
    let msgs = transcript();
    let counter = crate::tokens::TokenCounter::new("gpt-4o", 1.0);
    let count = |s: &str| counter.count(s);
    let out = extractive_summary(&msgs, 40, &count);
    assert!(count(&out) <= 40);
    assert!(out.starts_with("## Instructions and constraints"), "{out}");
    assert!(!out.contains("## Other context"));
    let tiny = extractive_summary(&msgs, 3, &count);
    assert!(count(&tiny) <= 3);
    assert!(!tiny.is_empty());
}

#[test]
fn empty_inputs() {
    assert_eq!(extractive_summary(&[], 100, &words), "");
    assert_eq!(extractive_summary(&transcript(), 0, &words), "");
    let only_tool = vec![SourceMessage {
        role: "assistant",
        seq: 7,
        tools: vec![tool("x", "{}", "running")],
        ..SourceMessage::default()
    }];
    let out = extractive_summary(&only_tool, 100, &words);
    assert_eq!(
        out,
        "## Other context\n- Messages covered: 1 (seq 7); user 0, assistant 1, system 0\n\
         - Tool calls: 1, failed: 0"
    );
}

#[test]
fn keywords_are_whole_words() {
    let mut found = Vec::new();
    scan_sentences(
        "Mustard is tasty. Nevertheless fine. Don't push. We only ship. \
         It was unfounded. The rest remains. Follow-up later.",
        |s, t| {
            found.push((
                s,
                t.has(Tags::RULE),
                t.has(Tags::DISCOVERY),
                t.has(Tags::REMAINING),
            ));
        },
    );
    assert_eq!(
        found,
        vec![
            (" Don't push.", true, false, false),
            (" We only ship.", true, false, false),
            (" Follow-up later.", false, false, true),
        ]
    );
}

#[test]
fn typographic_apostrophe_and_case() {
    let mut rules = Vec::new();
    scan_sentences(
        "DON\u{2019}T touch it\nDo NOT merge\nAVOID globals",
        |s, t| {
            if t.has(Tags::RULE) {
                rules.push(s);
            }
        },
    );
    assert_eq!(
        rules,
        vec!["DON\u{2019}T touch it", "Do NOT merge", "AVOID globals"]
    );
}

#[test]
fn keyword_table_lookup() {
    for (word, kind) in KEYWORDS {
        for w in [word.to_owned(), word.to_ascii_uppercase()] {
            assert_eq!(word_kind(w.as_bytes(), 0, w.len()), kind, "{w}");
        }
    }
    for w in [
        "mus",
        "musts",
        "nevermore",
        "xyz",
        "a",
        "implementedx",
        "dox",
    ] {
        assert_eq!(word_kind(w.as_bytes(), 0, w.len()), Kw::None, "{w}");
    }
    let quoted = "'required'";
    assert_eq!(word_kind(quoted.as_bytes(), 0, quoted.len()), Kw::Rule);
}

#[test]
fn path_heuristic() {
    for p in [
        "src/lib.rs",
        "README.md",
        "/etc/hosts",
        "./run",
        "a/b/c",
        "C:\\x\\y.txt",
    ] {
        assert!(looks_like_path(p), "{p}");
    }
    for p in [
        "cargo test",
        "https://x.io/a.html",
        "application/json",
        "v1.2",
        "1/2",
        "--out=/var/x",
        "src/**/*.rs",
        "hello",
    ] {
        assert!(!looks_like_path(p), "{p}");
    }
    let mut values = Vec::new();
    scan_json_strings(
        r#"{"path": "a\/b\/c.rs", "n": 3, "list": ["x.py", "y"], "k\"q": "v"}"#,
        |v| values.push(v.into_owned()),
    );
    assert_eq!(values, vec!["a/b/c.rs", "x.py", "y", "v"]);
}

#[test]
fn clip_collapses_and_cuts() {
    assert_eq!(clip("  a \n\n b\tc  ", 200), "a b c");
    assert_eq!(clip("abcdef", 3), "abc…");
    assert_eq!(clip_parts(&["one", "two"]), "one two");
    let long = "x".repeat(1000);
    assert_eq!(clip_parts(&[&long]).chars().count(), REQUEST_CHARS + 1);
}

#[test]
fn count_calls_are_bounded() {
    let big: Vec<String> = (0..3000)
        .map(|i| format!("You must keep rule number {i} always. Next do item {i}."))
        .collect();
    let msgs: Vec<SourceMessage<'_>> = big
        .iter()
        .enumerate()
        .map(|(i, t)| msg(if i % 2 == 0 { "user" } else { "assistant" }, i as i64, t))
        .collect();
    let calls = Cell::new(0usize);
    let counter = crate::tokens::TokenCounter::new("gpt-4o", 1.0);
    let count = |s: &str| {
        calls.set(calls.get() + 1);
        counter.count(s)
    };
    for budget in [1, 50, 500, 2000, 100_000] {
        calls.set(0);
        let out = extractive_summary(&msgs, budget, &count);
        assert!(counter.count(&out) <= budget);
        assert!(calls.get() <= 40, "{budget}: {} calls", calls.get());
    }
}

#[test]
fn large_transcript_fits() {
    let output = "o".repeat(4096);
    let texts: Vec<String> = (0..10_000)
        .map(|i| {
            format!(
                "Message {i}: we found that step {i} is done. Never skip step {}.",
                i % 50
            )
        })
        .collect();
    let msgs: Vec<SourceMessage<'_>> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut m = msg(if i % 2 == 0 { "user" } else { "assistant" }, i as i64, t);
            if i % 10 < 3 {
                m.tools.push(SourceTool {
                    name: "read_file",
                    input: r#"{"path": "src/module.rs"}"#,
                    status: if i % 7 == 0 { "error" } else { "completed" },
                    output: Some(&output),
                    error: None,
                });
            }
            m
        })
        .collect();
    let counter = crate::tokens::TokenCounter::new("gpt-4o", 1.0);
    let count = |s: &str| counter.count(s);
    let out = extractive_summary(&msgs, 2000, &count);
    assert!(count(&out) <= 2000);
    assert!(out.contains("Never skip step 0."));
    assert!(out.contains("## Goal"));
}

#[derive(Debug, Clone)]
struct OwnedMsg {
    role: &'static str,
    texts: Vec<String>,
    tools: Vec<(String, String, &'static str, Option<String>)>,
    refs: Vec<(String, String)>,
}

fn arb_text() -> impl Strategy<Value = String> {
    let word = prop_oneof![
        3 => "[a-zA-Z]{1,8}",
        1 => prop::sample::select(vec![
            "must", "never", "Always", "don't", "only", "make sure", "avoid", "required",
            "found", "root cause", "because", "turns out", "TODO", "next", "still need",
            "remaining", "follow up", "fixed", "done", ". ", "! ", "\n", "src/a.rs", "é", "日本",
        ])
        .prop_map(str::to_owned),
    ];
    prop::collection::vec(word, 0..60).prop_map(|w| w.join(" "))
}

fn arb_msg() -> impl Strategy<Value = OwnedMsg> {
    let tool = (
        prop::sample::select(vec!["read_file", "bash", "edit", ""]),
        prop::sample::select(vec![
            r#"{"path": "src/main.rs"}"#,
            r#"{"file": "a/b/c", "x": 1}"#,
            "not json",
            r#"{"command": "ls -la"}"#,
        ]),
        prop::sample::select(vec!["completed", "error", "pending", "running"]),
        prop::option::of(arb_text()),
    )
        .prop_map(|(n, i, s, e)| (n.to_owned(), i.to_owned(), s, e));
    (
        prop::sample::select(vec!["user", "assistant", "system"]),
        prop::collection::vec(arb_text(), 0..3),
        prop::collection::vec(tool, 0..3),
        prop::collection::vec(("file_[0-9a-f]{8}", "[a-z]{1,6}\\.md"), 0..2),
    )
        .prop_map(|(role, texts, tools, refs)| OwnedMsg {
            role,
            texts,
            tools,
            refs,
        })
}

fn borrow(msgs: &[OwnedMsg]) -> Vec<SourceMessage<'_>> {
    msgs.iter()
        .enumerate()
        .map(|(i, m)| SourceMessage {
            role: m.role,
            seq: i as i64,
            texts: m.texts.iter().map(String::as_str).collect(),
            tools: m
                .tools
                .iter()
                .map(|(n, inp, st, e)| SourceTool {
                    name: n,
                    input: inp,
                    status: st,
                    output: None,
                    error: e.as_deref(),
                })
                .collect(),
            file_refs: m
                .refs
                .iter()
                .map(|(id, p)| SourceFileRef {
                    file_id: id,
                    path: p,
                })
                .collect(),
        })
        .collect()
}

/// Byte-by-byte reference for [`scan_sentences`]. Splits `text` into sentences (at newlines and at `.`, `!` or `?`
/// followed by whitespace) and calls `emit` for each sentence that carries
/// at least one tag. One pass over the bytes.
fn scan_sentences_simple<'a>(text: &'a str, mut emit: impl FnMut(&'a str, Tags)) {
    let b = text.as_bytes();
    let mut start = 0;
    let mut tags = Tags::default();
    let mut prev = Kw::None;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if is_word_byte(c) {
            let word_start = i;
            i += 1;
            while i < b.len() && is_word_byte(b[i]) {
                i += 1;
            }
            let kw = word_kind(b, word_start, i);
            apply(&mut tags, prev, kw);
            prev = kw;
            continue;
        }
        let end = match c {
            b'\n' => Some(i),
            b'.' | b'!' | b'?' if b.get(i + 1).is_none_or(u8::is_ascii_whitespace) => Some(i + 1),
            _ => None,
        };
        if let Some(end) = end {
            if tags.any() {
                // Sentence bounds are ASCII bytes, so these are char boundaries.
                emit(&text[start..end], tags);
            }
            start = i + 1;
            tags = Tags::default();
            prev = Kw::None;
        }
        i += 1;
    }
    if tags.any() && start < b.len() {
        emit(&text[start..], tags);
    }
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'\'' || b >= 0x80
}

#[test]
fn byte_classes() {
    for v in 0..=255u8 {
        for lane in 0..8 {
            let x = u64::from(v) << (8 * lane) | 0x2020_2020_2020_2020 & !(0xff << (8 * lane));
            let (words, marks) = classify8(x);
            assert_eq!(
                (words >> lane) & 1 == 1,
                is_word_byte(v),
                "{v} in lane {lane}"
            );
            assert_eq!(
                (marks >> lane) & 1 == 1,
                matches!(v, b'\n' | b'.' | b'!' | b'?'),
                "{v} in lane {lane}"
            );
            // The space bytes around it are neither.
            assert_eq!(words & !(1 << lane), 0);
            assert_eq!(marks & !(1 << lane), 0);
        }
    }
}

#[test]
fn block_scanner_edges() {
    let long = "a".repeat(130);
    let cases = [
        format!("{} must", "x".repeat(59)),
        format!("{}must", " ".repeat(60)),
        format!("{}must here", " ".repeat(62)),
        format!("{long} must. {long}. Never {long}"),
        format!("{}. todo", "y".repeat(63)),
        format!("{}\nnever", "z".repeat(64)),
        "must".repeat(40),
        String::new(),
    ];
    for text in &cases {
        let mut fast = Vec::new();
        scan_sentences(text, |s, t| fast.push((s, t)));
        let mut simple = Vec::new();
        scan_sentences_simple(text, |s, t| simple.push((s, t)));
        assert_eq!(fast, simple, "{text:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn classify8_matches_scalar(bytes in prop::array::uniform8(any::<u8>())) {
        let (words, marks) = classify8(u64::from_le_bytes(bytes));
        for (lane, &v) in bytes.iter().enumerate() {
            prop_assert_eq!((words >> lane) & 1 == 1, is_word_byte(v));
            prop_assert_eq!(
                (marks >> lane) & 1 == 1,
                matches!(v, b'\n' | b'.' | b'!' | b'?')
            );
        }
        prop_assert_eq!(words >> 8, 0);
        prop_assert_eq!(marks >> 8, 0);
    }

    #[test]
    fn block_scanner_matches_simple_scanner(
        words in prop::collection::vec(
            prop_oneof![
                "[a-zA-Z']{1,14}",
                prop::sample::select(vec![
                    "must", "Never", "do", "not", "make", "sure", "follow", "up", "still",
                    "need", "TODO", "found", "fixed", "don\u{2019}t", "'only'", "é",
                ]).prop_map(str::to_owned),
                prop::sample::select(vec![
                    " ", "  ", ". ", "! ", "?", ".", "\n", "-", ", ", "\t", "...",
                ]).prop_map(str::to_owned),
            ],
            0..200,
        )
    ) {
        let text = words.concat();
        let mut fast = Vec::new();
        scan_sentences(&text, |s, t| fast.push((s, t)));
        let mut simple = Vec::new();
        scan_sentences_simple(&text, |s, t| simple.push((s, t)));
        prop_assert_eq!(fast, simple);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn always_within_budget(
        msgs in prop::collection::vec(arb_msg(), 0..25),
        budget in 0usize..400,
    ) {
        let borrowed = borrow(&msgs);
        let counter = crate::tokens::TokenCounter::new("gpt-4o", 1.0);
        let tiktoken = |s: &str| counter.count(s);
        let out = extractive_summary(&borrowed, budget, &tiktoken);
        prop_assert!(tiktoken(&out) <= budget, "{} > {}", tiktoken(&out), budget);
        prop_assert_eq!(&out, &extractive_summary(&borrowed, budget, &tiktoken));

        let corrected = crate::tokens::TokenCounter::new("gpt-4", 1.9);
        let heavy = |s: &str| corrected.count(s);
        prop_assert!(heavy(&extractive_summary(&borrowed, budget, &heavy)) <= budget);

        let by_bytes = |s: &str| s.len();
        prop_assert!(extractive_summary(&borrowed, budget, &by_bytes).len() <= budget);
    }
}

/// A user message of rules drawn from a small pool, repeated exactly, in
/// another case or with other spacing, so that runs repeat each other's
/// constraints and long transcripts pass `MAX_CONSTRAINTS`.
fn arb_rules_msg() -> impl Strategy<Value = OwnedMsg> {
    let rule = (0u16..160, 0u8..4).prop_map(|(n, variant)| {
        let s = format!("You must keep rule {n}.");
        match variant {
            0 => s,
            1 => s.to_ascii_uppercase(),
            2 => s.to_ascii_lowercase(),
            _ => s.replace(' ', "  "),
        }
    });
    (
        prop::collection::vec(rule, 1..25),
        prop::collection::vec(arb_ref(), 0..2),
    )
        .prop_map(|(rules, refs)| OwnedMsg {
            role: "user",
            texts: vec![rules.join(" ")],
            tools: Vec::new(),
            refs,
        })
}

/// A file reference from a small pool: with and without an id or a path,
/// and paths that tool inputs mention too.
fn arb_ref() -> impl Strategy<Value = (String, String)> {
    (
        prop::sample::select(vec!["", "file_00000001", "file_00000002"]),
        prop::sample::select(vec!["", "a.md", "src/main.rs", "a/b/c", "file_00000001"]),
    )
        .prop_map(|(id, path)| (id.to_owned(), path.to_owned()))
}

/// Any message, with extra file references and path-bearing tool calls
/// (some with escaped slashes) from small pools so that paths repeat.
fn arb_repeating_msg() -> impl Strategy<Value = OwnedMsg> {
    let tool = (
        prop::sample::select(vec![
            r#"{"path": "src\/main.rs"}"#,
            r#"{"path": "a.md"}"#,
            r#"{"path": "docs/x.md"}"#,
        ]),
        prop::sample::select(vec!["completed", "error"]),
    )
        .prop_map(|(input, status)| ("edit".to_owned(), input.to_owned(), status, None));
    prop_oneof![
        2 => (
            arb_msg(),
            prop::collection::vec(arb_ref(), 0..3),
            prop::collection::vec(tool, 0..2),
        )
            .prop_map(|(mut m, refs, tools)| {
                m.refs.extend(refs);
                m.tools.extend(tools);
                m
            }),
        1 => arb_rules_msg(),
    ]
}

fn tiktoken_count() -> impl Fn(&str) -> usize {
    let counter = crate::tokens::TokenCounter::new("gpt-4o", 1.0);
    move |s: &str| counter.count(s)
}

/// Gathers each piece separately and merges them left to right.
fn merged<'a>(pieces: &[&'a [SourceMessage<'a>]]) -> Collection<'a> {
    pieces
        .iter()
        .map(|piece| Collection::of(piece))
        .fold(Collection::default(), Collection::merge)
}

/// One user message per rule `n` in `rules`, in upper case when `upper`.
fn rule_msgs(rules: std::ops::Range<usize>, upper: bool) -> Vec<String> {
    rules
        .map(|n| {
            let s = format!("You must keep rule {n}.");
            if upper {
                s.to_ascii_uppercase()
            } else {
                s
            }
        })
        .collect()
}

#[test]
fn collection_is_send() {
    fn assert_send<T: Send>() {}
    assert_send::<Collection<'static>>();
}

#[test]
fn merge_of_empty_collections() {
    let msgs = transcript();
    let whole = extractive_summary(&msgs, 10_000, &words);
    assert_eq!(merged(&[&[], &msgs, &[]]).summary(10_000, &words), whole);
    assert_eq!(Collection::default().summary(10_000, &words), "");
    assert_eq!(Collection::of(&[]).summary(10_000, &words), "");
    assert_eq!(Collection::of(&msgs).summary(0, &words), "");
}

#[test]
fn halves_gathered_on_threads() {
    let msgs = transcript();
    let (older, newer) = msgs.split_at(2);
    let collection = std::thread::scope(|scope| {
        let newer = scope.spawn(|| Collection::of(newer));
        Collection::of(older).merge(newer.join().unwrap())
    });
    let whole = extractive_summary(&msgs, 10_000, &words);
    assert_eq!(collection.summary(10_000, &words), whole);
}

#[test]
fn goal_is_not_repeated_as_in_progress() {
    let msgs = vec![
        msg("user", 1, "Fix the parser."),
        msg("assistant", 2, "I fixed it."),
        msg("user", 3, "  "),
    ];
    let whole = Collection::of(&msgs).into_sections();
    assert_eq!(whole[SectionKind::Goal.index()].len(), 1);
    assert!(whole[SectionKind::InProgress.index()].is_empty());
    for cut in 0..=msgs.len() {
        let (a, b) = msgs.split_at(cut);
        assert_eq!(merged(&[a, b]).into_sections(), whole, "cut at {cut}");
    }
}

#[test]
fn constraint_cap_across_a_split() {
    // The later run repeats the earlier 60 rules in upper case before 60 new
    // ones: alone it fills its cap with 40 of the new ones and 60 repeats.
    let texts: Vec<String> = [
        rule_msgs(0..60, false),
        rule_msgs(0..60, true),
        rule_msgs(0..60, false),
        rule_msgs(60..120, false),
    ]
    .concat();
    let msgs: Vec<SourceMessage<'_>> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| msg("user", i as i64, t))
        .collect();
    let whole = Collection::of(&msgs).into_sections();
    let constraints = &whole[SectionKind::Constraints.index()];
    assert_eq!(constraints.len(), MAX_CONSTRAINTS);
    assert_eq!(constraints[99].text, "You must keep rule 99.");
    for cut in [0, 30, 60, 90, 120, 150, 180, 210, 240] {
        let (a, b) = msgs.split_at(cut);
        assert_eq!(merged(&[a, b]).into_sections(), whole, "cut at {cut}");
    }
    let out = extractive_summary(&msgs, 100_000, &words);
    for cut in [60, 120, 180] {
        let (a, b) = msgs.split_at(cut);
        assert_eq!(
            merged(&[a, b]).summary(100_000, &words),
            out,
            "cut at {cut}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn merged_runs_match_whole(
        msgs in prop::collection::vec(arb_repeating_msg(), 0..40),
        cuts in (any::<prop::sample::Index>(), any::<prop::sample::Index>()),
    ) {
        let borrowed = borrow(&msgs);
        let n = borrowed.len();
        if n > 0 {
            let whole = Collection::of(&borrowed).into_sections();
            for k in 0..=n {
                let (a, b) = borrowed.split_at(k);
                prop_assert_eq!(&merged(&[a, b]).into_sections(), &whole, "cut at {}", k);
            }
        }
        let (i, j) = {
            let (x, y) = (cuts.0.index(n + 1), cuts.1.index(n + 1));
            (x.min(y), x.max(y))
        };
        let (a, rest) = borrowed.split_at(i);
        let (b, c) = rest.split_at(j - i);
        let count = tiktoken_count();
        for budget in [0, 1, 40, 300, 100_000] {
            let expected = extractive_summary(&borrowed, budget, &count);
            prop_assert_eq!(&merged(&[a, rest]).summary(budget, &count), &expected);
            prop_assert_eq!(&merged(&[a, b, c]).summary(budget, &count), &expected);
            let right = Collection::of(a).merge(Collection::of(b).merge(Collection::of(c)));
            prop_assert_eq!(&right.summary(budget, &count), &expected);
        }
    }
}
