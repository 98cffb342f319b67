//! Reasoning goes back beside the assistant messages of the current tool loop, to
//! the provider that produced it, and a request counts exactly what it renders.

mod support;

use lossless_core::parts::{replay_tokens, Part, Reasoning, Role, ToolStatus};
use lossless_core::render::ChatMessage;
use lossless_core::store::{Assembled, Store};
use lossless_core::tokens::TokenCounter;
use proptest::prelude::*;
use support::{append, temp_store, text, tool, tool_with};

const CLAUDE: &str = "anthropic/claude-sonnet-4-5";

fn thinking(n: usize) -> String {
    format!(
        r#"{{"type": "thinking", "thinking": "step {n}: read the ledger", "signature": "sig{n}=="}}"#
    )
}

fn reasoning(provider: &str, n: usize) -> Part {
    Part::Reasoning(Reasoning {
        provider: provider.into(),
        text: Some(format!("step {n}: read the ledger")),
        payload: Some(thinking(n)),
    })
}

/// An assistant turn of a tool loop: its reasoning, then a call with its result.
fn step(store: &mut Store, session: &str, provider: &str, n: usize) {
    let call = tool("read", &format!("call_{n}"), &format!("ledger line {n}"));
    append(
        store,
        session,
        Role::Assistant,
        &[reasoning(provider, n), call],
    );
}

fn assistants(assembled: &Assembled) -> Vec<&ChatMessage> {
    assembled
        .messages()
        .filter(|message| message.role == "assistant")
        .collect()
}

fn payloads(message: &ChatMessage) -> Vec<&str> {
    message
        .reasoning
        .iter()
        .map(|block| block.payload.as_str())
        .collect()
}

#[test]
fn the_current_tool_loop_carries_its_blocks_and_an_older_loop_does_not() {
    let (_dir, _path, mut store) = temp_store();
    let session = store.create_session(CLAUDE, "{}", None).unwrap();
    append(
        &mut store,
        &session,
        Role::User,
        &[text("settle the ledger")],
    );
    step(&mut store, &session, "anthropic", 1);
    append(
        &mut store,
        &session,
        Role::Assistant,
        &[reasoning("anthropic", 2), text("settled")],
    );
    append(&mut store, &session, Role::User, &[text("now the refunds")]);
    step(&mut store, &session, "anthropic", 3);
    // Two blocks in one turn (interleaved thinking) go back in their order.
    let two = [
        reasoning("anthropic", 4),
        reasoning("anthropic", 5),
        tool("read", "call_5", "r"),
    ];
    append(&mut store, &session, Role::Assistant, &two);

    let assembled = store.assemble(&session, 100_000).unwrap();
    let turns = assistants(&assembled);
    assert_eq!(turns.len(), 4);
    assert!(turns[0].reasoning.is_empty() && turns[1].reasoning.is_empty());
    assert_eq!(payloads(turns[2]), [thinking(3)]);
    assert_eq!(payloads(turns[3]), [thinking(4), thinking(5)]);
    assert_eq!(
        turns[3].reasoning[0].text.as_deref(),
        Some("step 4: read the ledger")
    );
    // Nothing else of the message changed: its call and the result after it.
    assert_eq!(turns[3].tool_calls[0].id, "call_5");
    assert!(assembled
        .messages()
        .filter(|message| message.role != "assistant")
        .all(|message| message.reasoning.is_empty()));
}

#[test]
fn blocks_go_only_to_the_provider_that_produced_them() {
    let (_dir, _path, mut store) = temp_store();
    let session = store.create_session("openai/gpt-4o", "{}", None).unwrap();
    append(
        &mut store,
        &session,
        Role::User,
        &[text("settle the ledger")],
    );
    step(&mut store, &session, "anthropic", 1);
    let readable = Part::Reasoning(Reasoning {
        provider: "openai".into(),
        text: Some("weighing both".into()),
        payload: None,
    });
    append(
        &mut store,
        &session,
        Role::Assistant,
        &[readable, text("done")],
    );
    let assembled = store.assemble(&session, 100_000).unwrap();
    assert!(assembled
        .messages()
        .all(|message| message.reasoning.is_empty()));

    // A bare model name resolves as litellm resolves it: `claude-…` is Anthropic's.
    let claude = store
        .create_session("claude-sonnet-4-5", "{}", None)
        .unwrap();
    append(
        &mut store,
        &claude,
        Role::User,
        &[text("settle the ledger")],
    );
    step(&mut store, &claude, "anthropic", 1);
    step(&mut store, &claude, "bedrock", 2);
    let assembled = store.assemble(&claude, 100_000).unwrap();
    let turns = assistants(&assembled);
    assert_eq!(payloads(turns[0]), [thinking(1)]);
    assert!(turns[1].reasoning.is_empty());
}

#[test]
fn a_request_counts_what_it_renders_and_never_exceeds_its_budget() {
    let (_dir, _path, mut store) = temp_store();
    let session = store.create_session(CLAUDE, "{}", None).unwrap();
    append(&mut store, &session, Role::User, &[text("an older turn")]);
    step(&mut store, &session, "anthropic", 0);
    append(
        &mut store,
        &session,
        Role::User,
        &[text("settle the ledger")],
    );
    for n in 1..12 {
        step(&mut store, &session, "anthropic", n);
    }
    let counter = TokenCounter::new(CLAUDE, 1.0);
    let view = store.view_stats(&session).unwrap().tokens;
    let whole = store.assemble(&session, 100_000).unwrap();
    let replayed: usize = whole
        .messages()
        .map(|message| replay_tokens(&message.reasoning, &counter))
        .sum();
    assert!(replayed > 0);
    assert_eq!(whole.tokens, view + replayed as i64);
    assert_eq!(whole.tokens, whole.item_tokens.iter().sum::<i64>());
    for budget in (40..whole.tokens + 20).step_by(7) {
        let assembled = store.assemble(&session, budget).unwrap();
        assert!(
            assembled.tokens <= budget,
            "{} over {budget}",
            assembled.tokens
        );
        assert_eq!(assembled.tokens, assembled.item_tokens.iter().sum::<i64>());
        // Every loop turn sent goes with its block.
        for turn in assistants(&assembled) {
            if turn.tool_calls.iter().any(|call| call.id != "call_0") {
                assert_eq!(turn.reasoning.len(), 1, "at {budget}");
            }
        }
    }
}

#[test]
fn a_new_user_turn_sends_the_finished_loop_without_its_blocks() {
    let (_dir, _path, mut store) = temp_store();
    let session = store.create_session(CLAUDE, "{}", None).unwrap();
    append(
        &mut store,
        &session,
        Role::User,
        &[text("settle the ledger")],
    );
    let pending = tool_with("read", "call_1", None, ToolStatus::Pending);
    append(
        &mut store,
        &session,
        Role::Assistant,
        &[reasoning("anthropic", 1), pending],
    );
    let first = store.assemble(&session, 100_000).unwrap();
    assert_eq!(payloads(assistants(&first)[0]), [thinking(1)]);
    // A tool's result changes the message: it goes out again with its block.
    store
        .update_tool(&session, "call_1", ToolStatus::Completed, Some("ok"), None)
        .unwrap();
    let answered = store.assemble(&session, 100_000).unwrap();
    assert_eq!(payloads(assistants(&answered)[0]), [thinking(1)]);
    append(&mut store, &session, Role::User, &[text("thanks")]);
    let after = store.assemble(&session, 100_000).unwrap();
    assert!(assistants(&after)[0].reasoning.is_empty());
    assert_eq!(after.tokens, store.view_stats(&session).unwrap().tokens);
}

/// One turn of a random session: a user turn, or an assistant turn with blocks of
/// the given providers before its call.
#[derive(Clone, Debug)]
enum Turn {
    User(usize),
    Assistant(Vec<bool>),
}

fn turns() -> impl Strategy<Value = Vec<Turn>> {
    let turn = prop_oneof![
        1 => (1_usize..60).prop_map(Turn::User),
        3 => prop::collection::vec(any::<bool>(), 0..3).prop_map(Turn::Assistant),
    ];
    prop::collection::vec(turn, 1..24)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Every request sends each assistant turn after the newest user turn with its
    /// own provider's blocks, in order, and no other turn with any; and it fits its
    /// budget, counted as rendered, whenever its instruction does.
    #[test]
    fn the_loop_s_turns_carry_their_blocks_in_order_within_the_budget(
        session_turns in turns(),
        budget in 30_i64..4_000,
    ) {
        let (_dir, _path, mut store) = temp_store();
        let session = store.create_session(CLAUDE, "{}", None).unwrap();
        let mut expected: Vec<(String, Vec<String>)> = Vec::new();
        let mut n = 0;
        for turn in &session_turns {
            match turn {
                Turn::User(words) => {
                    append(&mut store, &session, Role::User, &[text(&support::words(*words as u64, *words))]);
                    expected.clear();
                }
                Turn::Assistant(providers) => {
                    n += 1;
                    let mut parts = Vec::new();
                    let mut blocks = Vec::new();
                    for (k, anthropic) in providers.iter().enumerate() {
                        let provider = if *anthropic { "anthropic" } else { "bedrock" };
                        parts.push(reasoning(provider, n * 10 + k));
                        if *anthropic {
                            blocks.push(thinking(n * 10 + k));
                        }
                    }
                    let id = format!("call_{n}");
                    parts.push(tool("read", &id, &support::words(n as u64, 20)));
                    append(&mut store, &session, Role::Assistant, &parts);
                    expected.push((id, blocks));
                }
            }
        }
        let assembled = store.assemble(&session, budget).unwrap();
        let instruction = store.view_stats(&session).unwrap().instruction_tokens;
        if instruction + 32 <= budget {
            prop_assert!(assembled.tokens <= budget, "{} over {budget}", assembled.tokens);
        }
        prop_assert_eq!(assembled.tokens, assembled.item_tokens.iter().sum::<i64>());
        for turn in assistants(&assembled) {
            let id = &turn.tool_calls[0].id;
            let blocks = expected
                .iter()
                .find(|(call, _)| call == id)
                .map(|(_, blocks)| blocks.iter().map(String::as_str).collect::<Vec<_>>())
                .unwrap_or_default();
            prop_assert_eq!(payloads(turn), blocks, "{}", id);
        }
    }
}
