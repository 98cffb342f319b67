//! Level-3 truncation keeps to its budget for any span and any target: the summary
//! fits unless its notice and file-id footer alone do not, and then it holds nothing
//! else. It never panics, whatever the messages hold.

mod support;

use lossless_core::parts::Role;
use lossless_core::plan::Tail;
use lossless_core::tokens::TokenCounter;
use proptest::prelude::*;
use support::{append, file_id, temp_store, text, tool, MODEL};

fn message_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,400}",
        "\\PC{0,300}",
        (0_u64..50).prop_map(|n| format!("see {} and {}", file_id(n), file_id(n + 1))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn truncation_fits_its_target_or_holds_only_its_notice_and_footer(
        texts in prop::collection::vec(message_text(), 4..30),
        target in 1_i64..3_000,
    ) {
        let (_dir, _path, mut store) = temp_store();
        let session = store.create_session(MODEL, "{}", None).unwrap();
        for (index, body) in texts.iter().enumerate() {
            let body = if body.trim().is_empty() { "x" } else { body.as_str() };
            if index % 3 == 2 {
                append(&mut store, &session, Role::Assistant, &[tool("read", &format!("c{index}"), body)]);
            } else {
                append(&mut store, &session, Role::User, &[text(body)]);
            }
        }
        let span = store
            .compaction_span(&session, Tail { user_turns: 0, max_tokens: 1, max_messages: 1 })
            .unwrap();
        prop_assume!(!span.message_ids.is_empty());
        let result = store.truncate_summary(&span.message_ids, target).unwrap();
        let counted = TokenCounter::new(MODEL, 1.0).count(&result.text) as i64;
        prop_assert_eq!(counted, result.token_count);
        if result.token_count > target {
            // Only the notice and the footer: no message entry was kept.
            prop_assert!(!result.text.contains("\n[#"), "{}", result.text);
        }
        for id in &result.file_ids {
            prop_assert!(result.text.contains(id.as_str()));
        }
    }
}
