//! The converters on chat messages built by hand: turns, merging, reasoning,
//! cache marks and attachments.

use std::sync::Arc;

use serde_json::json;

use super::{anthropic, rejoined, responses, Node};
use crate::model::chat::{
    Attachment, AttachmentKind, AttachmentSource, BlockKind, ChatMessage, ReasoningBlock, ToolCall,
};

fn message(role: &'static str, content: Option<&str>) -> ChatMessage {
    ChatMessage {
        role,
        content: content.map(str::to_string),
        tool_calls: Vec::new(),
        tool_call_id: None,
        reasoning: Vec::new(),
        attachments: Vec::new(),
    }
}

fn calls(text: Option<&str>, ids: &[&str], reasoning: &[&str]) -> ChatMessage {
    let mut message = message("assistant", text);
    message.tool_calls = ids
        .iter()
        .map(|id| ToolCall {
            id: (*id).to_string(),
            name: "read".to_string(),
            arguments: format!("{{\"path\":\"{id}.py\",\"a\":1}}"),
        })
        .collect();
    message.reasoning = reasoning
        .iter()
        .map(|payload| ReasoningBlock {
            payload: (*payload).to_string(),
            text: None,
            kind: BlockKind::Thinking,
        })
        .collect();
    message
}

fn result(id: &str, text: &str) -> ChatMessage {
    let mut message = message("tool", Some(text));
    message.tool_call_id = Some(id.to_string());
    message
}

fn image(source: AttachmentSource) -> Attachment {
    Attachment {
        kind: AttachmentKind::Image,
        media_type: "image/png".to_string(),
        source,
        caption: None,
    }
}

fn pdf(caption: Option<&str>) -> Attachment {
    Attachment {
        kind: AttachmentKind::Document,
        media_type: "application/pdf".to_string(),
        source: AttachmentSource::Base64(Arc::from("JVBERi0=")),
        caption: caption.map(str::to_string),
    }
}

fn json_of(nodes: &[Node<'_>]) -> serde_json::Value {
    nodes.iter().map(Node::to_json).collect()
}

const THINKING: &str = r#"{"type":"thinking","thinking":"look first","signature":"sig"}"#;
const REDACTED: &str = r#"{"type":"redacted_thinking","data":"opaque"}"#;
const OPENAI_REASONING: &str =
    r#"{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"enc"}"#;

#[test]
fn anthropic_keeps_the_system_apart_and_merges_results_with_the_next_user_text() {
    let messages = [
        message("system", Some("be brief")),
        message("user", Some("fix it")),
        calls(
            Some("reading"),
            &["a", "b"],
            &[THINKING, REDACTED, OPENAI_REASONING],
        ),
        result("a", "one"),
        result("b", "two"),
        message("user", Some("and now?")),
        message("user", Some("<context>")),
        message("system", Some("late")),
    ];
    let refs: Vec<&ChatMessage> = messages.iter().collect();
    let request = anthropic::request(&refs, &[0, 5]);
    assert_eq!(
        json_of(&request.system),
        json!([{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(
        json_of(&request.messages),
        json!([
            {"role": "user", "content": [{"type": "text", "text": "fix it"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "look first", "signature": "sig"},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "text", "text": "reading"},
                {"type": "tool_use", "id": "a", "name": "read", "input": {"path": "a.py", "a": 1}},
                {"type": "tool_use", "id": "b", "name": "read", "input": {"path": "b.py", "a": 1}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "one"},
                {"type": "tool_result", "tool_use_id": "b", "content": "two"},
                {"type": "text", "text": "and now?", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "<context>"},
                {"type": "text", "text": "[system] late"},
            ]},
        ])
    );
    // Reasoning goes out as the stored text, not re-serialized.
    let Node::Map(turn) = &request.messages[1] else {
        panic!("a turn is a map")
    };
    let Node::List(blocks) = &turn[1].1 else {
        panic!("content is a list")
    };
    assert_eq!(blocks[0], Node::Raw(THINKING));
}

#[test]
fn anthropic_puts_a_merged_assistant_message_s_reasoning_first() {
    let messages = [
        message("user", Some("go")),
        message("assistant", Some("first")),
        calls(None, &["c"], &[THINKING]),
        result("c", "done"),
    ];
    let refs: Vec<&ChatMessage> = messages.iter().collect();
    let request = anthropic::request(&refs, &[]);
    let kinds: Vec<String> = request.messages[1].to_json()["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| block["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds, ["thinking", "text", "tool_use"]);
}

#[test]
fn anthropic_sends_attachments_as_image_and_document_blocks_in_results_too() {
    let mut user = message("user", Some("what is this?"));
    user.attachments = vec![
        image(AttachmentSource::Base64(Arc::from("iVBORw0="))),
        pdf(Some("report.pdf")),
    ];
    let mut shot = result("s", "screenshot taken");
    shot.attachments = vec![image(AttachmentSource::Url(
        "https://example.com/a.png".into(),
    ))];
    let messages = [user, calls(None, &["s"], &[]), shot];
    let refs: Vec<&ChatMessage> = messages.iter().collect();
    let request = json_of(&anthropic::request(&refs, &[2]).messages);
    assert_eq!(
        request[0]["content"],
        json!([
            {"type": "text", "text": "what is this?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0="}},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}, "title": "report.pdf"},
        ])
    );
    assert_eq!(
        request[2]["content"],
        json!([{"type": "tool_result", "tool_use_id": "s", "content": [
            {"type": "text", "text": "screenshot taken"},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
        ], "cache_control": {"type": "ephemeral"}}])
    );
}

#[test]
fn responses_items_put_reasoning_before_the_calls_it_came_with() {
    let messages = [
        message("system", Some("be brief")),
        message("user", Some("fix it")),
        calls(Some("reading"), &["a"], &[OPENAI_REASONING, THINKING]),
        result("a", "one"),
        message("assistant", Some("fixed")),
    ];
    let refs: Vec<&ChatMessage> = messages.iter().collect();
    let items = responses::input(&refs);
    assert_eq!(items[2], Node::Raw(OPENAI_REASONING));
    assert_eq!(
        json_of(&items),
        json!([
            {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "be brief"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc"},
            {"type": "message", "role": "assistant", "content": "reading"},
            {"type": "function_call", "call_id": "a", "name": "read", "arguments": "{\"path\":\"a.py\",\"a\":1}"},
            {"type": "function_call_output", "call_id": "a", "output": "one"},
            {"type": "message", "role": "assistant", "content": "fixed"},
        ])
    );
}

#[test]
fn responses_outputs_with_attachments_are_lists_of_input_parts() {
    let mut shot = result("s", "two files");
    shot.attachments = vec![
        image(AttachmentSource::Base64(Arc::from("iVBORw0="))),
        pdf(None),
        Attachment {
            source: AttachmentSource::Url("https://example.com/r.pdf".into()),
            ..pdf(None)
        },
    ];
    let mut user = message("user", None);
    user.attachments = vec![image(AttachmentSource::Url(
        "https://example.com/a.png".into(),
    ))];
    let messages = [user, calls(None, &["s"], &[]), shot];
    let refs: Vec<&ChatMessage> = messages.iter().collect();
    let items = json_of(&responses::input(&refs));
    assert_eq!(
        items[0]["content"],
        json!([{"type": "input_image", "image_url": "https://example.com/a.png", "detail": "auto"}])
    );
    assert_eq!(
        items[2]["output"],
        json!([
            {"type": "input_text", "text": "two files"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0=", "detail": "auto"},
            {"type": "input_file", "file_data": "data:application/pdf;base64,JVBERi0=", "filename": "document.pdf"},
            {"type": "input_file", "file_url": "https://example.com/r.pdf"},
        ])
    );
}

#[test]
fn a_stored_message_split_for_a_repeated_call_is_joined_again() {
    let messages = [
        message("user", Some("go")),
        calls(Some("twice"), &["a"], &[THINKING]),
        result("a", "one"),
        calls(None, &["b"], &[]),
        result("b", "two"),
        calls(None, &["c"], &[]),
        result("c", "three"),
    ];
    // The first five render one stored message; the last two another.
    let items = [
        Some(0),
        Some(1),
        Some(1),
        Some(1),
        Some(1),
        Some(2),
        Some(2),
    ];
    let paired: Vec<(&ChatMessage, Option<usize>)> = messages.iter().zip(items).collect();
    let (joined, marks) = rejoined(&paired, &[4, 6]);
    let roles: Vec<&str> = joined.iter().map(|message| message.role).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool", "tool", "assistant", "tool"]
    );
    let ids: Vec<&str> = joined[1]
        .tool_calls
        .iter()
        .map(|call| call.id.as_str())
        .collect();
    assert_eq!(ids, ["a", "b"]);
    assert_eq!(joined[1].reasoning.len(), 1);
    assert_eq!(marks, [3, 5]);
}

#[test]
fn anthropic_trims_only_a_final_assistant_text() {
    let messages = [
        message("user", Some("go ")),
        message("assistant", Some("thinking aloud \n")),
        message("user", Some("more ")),
        message("assistant", Some("done \n")),
    ];
    let refs: Vec<&ChatMessage> = messages.iter().collect();
    let request = json_of(&anthropic::request(&refs, &[]).messages);
    assert_eq!(request[1]["content"][0]["text"], "thinking aloud \n");
    assert_eq!(request[2]["content"][0]["text"], "more ");
    assert_eq!(request[3]["content"][0]["text"], "done");
}
