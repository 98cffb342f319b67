//! A turn is one transaction: the message or tool result and the event that reports
//! it are written together, or neither is.

mod support;

use lossless_core::parts::{Part, Role, ToolCallPart, ToolStatus};
use lossless_core::store::WriteEvent;
use lossless_core::Error;
use support::{temp_store, text, MODEL};

fn created() -> WriteEvent {
    WriteEvent::parse("message_created", r#"{"role": "user"}"#).unwrap()
}

#[test]
fn an_appended_turn_carries_its_event_with_the_new_message_id() {
    let (_dir, _path, mut store) = temp_store();
    let session = store.create_session(MODEL, "{}", None).unwrap();
    let appended = store
        .append_turn(
            &session,
            Role::User,
            &[text("hello")],
            None,
            Some(&created()),
        )
        .unwrap();
    let events = store.events(&session).unwrap();
    let last = events.last().unwrap();
    assert_eq!(last.name, "message_created");
    let payload: serde_json::Value = serde_json::from_str(&last.payload).unwrap();
    assert_eq!(payload["message_id"], appended.id.as_str());
    assert_eq!(payload["role"], "user");
}

#[test]
fn a_refused_turn_writes_no_event() {
    let (_dir, _path, mut store) = temp_store();
    let session = store.create_session(MODEL, "{}", None).unwrap();
    let before = store.events(&session).unwrap().len();
    let refused = store.append_turn(&session, Role::User, &[], None, Some(&created()));
    assert!(
        matches!(refused, Err(Error::InvalidInput { .. })),
        "{refused:?}"
    );
    let unknown = store.update_tool_turn(
        &session,
        "call_missing",
        ToolStatus::Completed,
        Some("out"),
        None,
        Some(&created()),
    );
    assert!(unknown.is_err());
    assert_eq!(store.events(&session).unwrap().len(), before);
}

#[test]
fn a_tool_result_and_its_event_land_together() {
    let (_dir, _path, mut store) = temp_store();
    let session = store.create_session(MODEL, "{}", None).unwrap();
    let call = Part::Tool(ToolCallPart {
        name: "read_file".into(),
        call_id: "call_1".into(),
        input: "{}".into(),
        output: None,
        status: ToolStatus::Pending,
        error: None,
    });
    store
        .append_message(&session, Role::Assistant, &[call], None)
        .unwrap();
    let updated = WriteEvent::parse("tool_updated", r#"{"call_id": "call_1"}"#).unwrap();
    store
        .update_tool_turn(
            &session,
            "call_1",
            ToolStatus::Completed,
            Some("42 lines"),
            None,
            Some(&updated),
        )
        .unwrap();
    let events = store.events(&session).unwrap();
    assert_eq!(events.last().unwrap().name, "tool_updated");
}

#[test]
fn an_event_payload_must_be_a_json_object() {
    for bad in ["[1, 2]", "not json", "\"text\""] {
        let parsed = WriteEvent::parse("message_created", bad);
        assert!(
            matches!(parsed, Err(Error::InvalidInput { .. })),
            "{bad}: {parsed:?}"
        );
    }
    assert!(WriteEvent::parse("", "{}").is_err());
    assert!(WriteEvent::parse("two\nlines", "{}").is_err());
}
