//! Streaming replies: checkpoints belong to their owner, finishing a reply ends its
//! checkpoint, and a reply whose owner is gone keeps its last checkpoint as text.

mod support;

use lossless_core::parts::Role;
use lossless_core::store::{Usage, INTERRUPTED};
use lossless_core::Error;
use support::{temp_store, text, MODEL};

#[test]
fn only_the_owner_checkpoints_and_a_finished_reply_keeps_no_checkpoint() {
    let (_dir, _path, mut store) = temp_store();
    let session = store.create_session(MODEL, "{}", None).unwrap();
    let id = store
        .begin_message(&session, Role::Assistant, None, "host:1:a")
        .unwrap();
    store
        .checkpoint_message(&id, "host:1:a", Some("partial"))
        .unwrap();
    let refused = store.checkpoint_message(&id, "host:2:b", Some("other"));
    assert!(matches!(refused, Err(Error::Conflict(_))), "{refused:?}");
    let streams = store.streams(&session).unwrap();
    assert_eq!(streams[0].chars, "partial".len() as i64);
    // A heartbeat keeps the text.
    store.checkpoint_message(&id, "host:1:a", None).unwrap();
    assert_eq!(store.streams(&session).unwrap()[0].chars, 7);

    store
        .finish_message(&id, &[text("the whole reply")], true, &Usage::default())
        .unwrap();
    assert!(store.streams(&session).unwrap().is_empty());
    let late = store.checkpoint_message(&id, "host:1:a", Some("late"));
    assert!(matches!(late, Err(Error::Conflict(_))));
}

#[test]
fn a_reply_whose_owner_is_gone_keeps_its_last_checkpoint() {
    let (_dir, _path, mut store) = temp_store();
    let session = store.create_session(MODEL, "{}", None).unwrap();
    let kept = store
        .begin_message(&session, Role::Assistant, None, "host:1:a")
        .unwrap();
    // Each checkpoint adds what arrived since the one before.
    for piece in ["half ", "a ", "reply"] {
        store
            .checkpoint_message(&kept, "host:1:a", Some(piece))
            .unwrap();
    }
    assert_eq!(store.streams(&session).unwrap()[0].chars, 12);
    let empty = store
        .begin_message(&session, Role::Assistant, None, "host:1:a")
        .unwrap();
    let closed = store
        .flag_interrupted(
            &session,
            &[kept.clone(), empty.clone(), "msg_unknown".into()],
        )
        .unwrap();
    assert_eq!(closed, 2);
    let history = store.history(&session).unwrap();
    assert_eq!(history.len(), 2);
    assert!(history.iter().all(|message| message.status == "incomplete"));
    assert_eq!(history[0].usage.finish_reason.as_deref(), Some(INTERRUPTED));
    assert_eq!(history[0].parts.len(), 1);
    assert!(format!("{:?}", history[0].parts[0].part).contains("half a reply"));
    assert!(history[1].parts.is_empty(), "no empty text part");
    assert!(store.streams(&session).unwrap().is_empty());
    // Closed replies stay out of the view.
    assert!(store.view_items(&session).unwrap().is_empty());
    // A second close finds nothing to do.
    assert_eq!(store.flag_interrupted(&session, &[kept]).unwrap(), 0);
}
