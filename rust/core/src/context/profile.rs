//! Rendering profiles: what stricter targets need beyond the request every
//! provider accepts. Chat templates of open models (run by llama.cpp, vLLM and
//! others) refuse what hosted APIs take: roles that do not alternate, tool-call
//! ids not of one exact form, several calls in one assistant message, and (Gemma
//! 2's) any tool message at all.
//!
//! A profile rewrites an assembled request; the default profile leaves it as is.

use crate::render::ChatMessage;

/// The letters and digits of a short tool-call id.
const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// What a target requires of a request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    /// User and assistant turns alternate: consecutive messages of one role are
    /// merged, and a system message after the first turn is sent as a user one.
    pub alternate: bool,
    /// Tool-call ids are exactly this many letters and digits (Mistral: 9).
    pub call_id_chars: Option<usize>,
    /// Each assistant message carries one tool call at most (Llama 3).
    pub one_call_per_message: bool,
    /// Tool exchanges go as text: a call as a line of its assistant turn, a result
    /// as a user turn (templates without tool support, Gemma 2's among them).
    pub tools_as_text: bool,
}

impl Profile {
    /// The profile named `name`: `default`, `strict`, `mistral`, `llama3`,
    /// `strictest` (every rule at once: what a template with tool support refuses
    /// least) or `plain` (`strictest` with tool exchanges as text, for a template
    /// without tool support).
    #[must_use]
    pub fn named(name: &str) -> Option<Profile> {
        let strict = Profile {
            alternate: true,
            ..Profile::default()
        };
        match name {
            "default" => Some(Profile::default()),
            "strict" => Some(strict),
            "mistral" => Some(Profile {
                call_id_chars: Some(9),
                ..strict
            }),
            "llama3" => Some(Profile {
                one_call_per_message: true,
                ..strict
            }),
            "strictest" => Some(Profile {
                alternate: true,
                call_id_chars: Some(9),
                one_call_per_message: true,
                tools_as_text: false,
            }),
            "plain" => Some(Profile {
                tools_as_text: true,
                ..Profile::named("strictest")?
            }),
            _ => None,
        }
    }

    /// Whether the profile changes anything.
    #[must_use]
    pub fn is_default(&self) -> bool {
        *self == Profile::default()
    }

    /// `messages` as this profile sends them.
    #[must_use]
    pub fn apply(&self, messages: Vec<ChatMessage>) -> Vec<ChatMessage> {
        let mut messages = messages;
        if self.one_call_per_message {
            messages = split_calls(messages);
        }
        if let Some(chars) = self.call_id_chars {
            for message in &mut messages {
                for call in &mut message.tool_calls {
                    call.id = short_id(&call.id, chars);
                }
                if let Some(id) = &message.tool_call_id {
                    message.tool_call_id = Some(short_id(id, chars));
                }
            }
        }
        if self.tools_as_text {
            messages = messages.into_iter().map(tool_exchange_as_text).collect();
        }
        if self.alternate {
            messages = alternate(messages);
        }
        messages
    }
}

/// A tool exchange's message as plain text: an assistant turn's calls become lines
/// of its text, a result becomes a user turn that names the call it answers.
fn tool_exchange_as_text(message: ChatMessage) -> ChatMessage {
    if let Some(id) = message.tool_call_id {
        let result = message.content.unwrap_or_default();
        return ChatMessage::plain("user", format!("[result of tool call {id}]\n{result}"));
    }
    if message.tool_calls.is_empty() {
        return message;
    }
    let mut lines: Vec<String> = message.content.into_iter().collect();
    for call in &message.tool_calls {
        lines.push(format!(
            "[tool call {}: {}({})]",
            call.id, call.name, call.arguments
        ));
    }
    ChatMessage {
        role: message.role,
        content: Some(lines.join("\n")),
        tool_calls: Vec::new(),
        tool_call_id: None,
        reasoning: message.reasoning,
        attachments: message.attachments,
    }
}

/// A tool-call id of exactly `chars` letters and digits, the same for the same id:
/// the id itself when it already has that form, else a hash of it in base 62. The
/// renaming rules of [`crate::request`] made ids unique before; 62^9 values make a
/// collision within one request vanishingly unlikely.
#[must_use]
pub fn short_id(id: &str, chars: usize) -> String {
    if id.len() == chars && id.bytes().all(|byte| byte.is_ascii_alphanumeric()) {
        return id.to_string();
    }
    // FNV-1a over the id, then further rounds for ids longer than one hash holds.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut out = String::with_capacity(chars);
    for byte in id.bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    while out.len() < chars {
        out.push(DIGITS[(hash % 62) as usize] as char);
        hash /= 62;
        if hash == 0 {
            hash = (out.len() as u64 + 0xcbf2_9ce4_8422_2325).wrapping_mul(0x0100_0000_01b3);
        }
    }
    out
}

/// Each assistant message with several calls becomes one message per call, each
/// followed by its result; the text stays with the first.
fn split_calls(messages: Vec<ChatMessage>) -> Vec<ChatMessage> {
    let mut out = Vec::with_capacity(messages.len());
    let mut iter = messages.into_iter().peekable();
    while let Some(message) = iter.next() {
        if message.tool_calls.len() < 2 {
            out.push(message);
            continue;
        }
        let mut results = Vec::new();
        while iter.peek().is_some_and(|next| next.role == "tool") {
            results.extend(iter.next());
        }
        let mut content = message.content;
        // Reasoning opens the turn: it stays with the first call, as the text does.
        let mut reasoning = message.reasoning;
        let mut attachments = message.attachments;
        for call in message.tool_calls {
            let position = results
                .iter()
                .position(|result| result.tool_call_id.as_deref() == Some(call.id.as_str()));
            out.push(ChatMessage {
                role: message.role,
                content: content.take(),
                tool_calls: vec![call],
                tool_call_id: None,
                reasoning: std::mem::take(&mut reasoning),
                attachments: std::mem::take(&mut attachments),
            });
            out.extend(position.map(|position| results.remove(position)));
        }
        out.extend(results);
    }
    out
}

/// Consecutive user (or leading system) messages are merged, and so are consecutive
/// assistant messages when the first carries no tool call (its calls must stay
/// right before their results). A system message after the first turn becomes a
/// user message.
fn alternate(messages: Vec<ChatMessage>) -> Vec<ChatMessage> {
    let mut out: Vec<ChatMessage> = Vec::with_capacity(messages.len());
    for mut message in messages {
        if message.role == "system" && out.iter().any(|earlier| earlier.role != "system") {
            message.role = "user";
            message.content = message.content.map(|text| format!("[system] {text}"));
        }
        if let Some(last) = out.last_mut() {
            let mergeable = last.role == message.role
                && matches!(message.role, "user" | "assistant" | "system")
                && last.tool_calls.is_empty();
            if mergeable {
                last.content = join(last.content.take(), message.content);
                last.tool_calls = message.tool_calls;
                last.reasoning.extend(message.reasoning);
                continue;
            }
        }
        out.push(message);
    }
    bridge_tool_exchanges(out)
}

/// The text of an assistant turn put between two user turns that only tool
/// exchanges separate.
const BRIDGE_TEXT: &str = "[tool calls done]";

/// Templates that check alternation (Mistral's among them) skip tool results and
/// assistant messages that carry calls: two user turns with only a tool exchange
/// between them would not alternate. A one-line assistant turn goes between them.
fn bridge_tool_exchanges(messages: Vec<ChatMessage>) -> Vec<ChatMessage> {
    let mut out = Vec::with_capacity(messages.len());
    let mut last_plain: Option<&'static str> = None;
    for message in messages {
        let plain = message.role != "tool" && message.tool_calls.is_empty();
        if plain && message.role == "user" && last_plain == Some("user") {
            let after_tools = out
                .last()
                .is_some_and(|last: &ChatMessage| last.role == "tool");
            if after_tools {
                out.push(ChatMessage::plain("assistant", BRIDGE_TEXT.to_string()));
            }
        }
        if plain {
            last_plain = Some(message.role);
        }
        out.push(message);
    }
    out
}

fn join(first: Option<String>, second: Option<String>) -> Option<String> {
    match (first, second) {
        (Some(first), Some(second)) => Some(format!("{first}\n\n{second}")),
        (first, second) => first.or(second),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::ToolCall;

    fn text(role: &'static str, content: &str) -> ChatMessage {
        ChatMessage {
            role,
            content: Some(content.to_string()),
            tool_calls: Vec::new(),
            tool_call_id: None,
            reasoning: Vec::new(),
            attachments: Vec::new(),
        }
    }

    fn calls(ids: &[&str]) -> ChatMessage {
        ChatMessage {
            role: "assistant",
            content: Some("working".to_string()),
            tool_calls: ids
                .iter()
                .map(|id| ToolCall {
                    id: (*id).to_string(),
                    name: "t".to_string(),
                    arguments: "{}".to_string(),
                })
                .collect(),
            tool_call_id: None,
            reasoning: Vec::new(),
            attachments: Vec::new(),
        }
    }

    fn result(id: &str) -> ChatMessage {
        ChatMessage {
            role: "tool",
            content: Some(format!("out {id}")),
            tool_calls: Vec::new(),
            tool_call_id: Some(id.to_string()),
            reasoning: Vec::new(),
            attachments: Vec::new(),
        }
    }

    fn roles(messages: &[ChatMessage]) -> Vec<&str> {
        messages.iter().map(|message| message.role).collect()
    }

    #[test]
    fn strictest_alternates_with_short_ids_and_one_call_per_message() {
        let sent = Profile::named("strictest").unwrap().apply(vec![
            text("user", "a"),
            text("user", "b"),
            calls(&["call_1", "call_2"]),
            result("call_1"),
            result("call_2"),
            text("user", "next"),
        ]);
        assert_eq!(
            roles(&sent),
            [
                "user",
                "assistant",
                "tool",
                "assistant",
                "tool",
                "assistant",
                "user"
            ]
        );
        for pair in sent[1..5].chunks(2) {
            let id = &pair[0].tool_calls[0].id;
            assert_eq!(pair[0].tool_calls.len(), 1);
            assert_eq!(id.len(), 9);
            assert_eq!(pair[1].tool_call_id.as_ref(), Some(id));
        }
    }

    #[test]
    fn plain_sends_tool_exchanges_as_alternating_text() {
        let sent = Profile::named("plain").unwrap().apply(vec![
            text("user", "a"),
            calls(&["call_1", "call_2"]),
            result("call_1"),
            result("call_2"),
        ]);
        assert_eq!(
            roles(&sent),
            ["user", "assistant", "user", "assistant", "user"]
        );
        assert!(sent.iter().all(|message| message.tool_calls.is_empty()));
        assert!(sent.iter().all(|message| message.tool_call_id.is_none()));
        let call = sent[1].content.as_deref().unwrap();
        assert!(call.starts_with("working\n[tool call ") && call.ends_with(": t({})]"));
        let answer = sent[2].content.as_deref().unwrap();
        assert!(answer.starts_with("[result of tool call ") && answer.ends_with("out call_1"));
    }

    #[test]
    fn the_default_profile_changes_nothing() {
        let messages = vec![
            text("user", "a"),
            text("user", "b"),
            calls(&["call_1", "call_2"]),
        ];
        assert_eq!(Profile::default().apply(messages.clone()), messages);
    }

    #[test]
    fn strict_merges_roles_that_repeat_and_keeps_calls_before_their_results() {
        let messages = vec![
            text("system", "rules"),
            text("user", "[summary]"),
            text("user", "do it"),
            text("assistant", "thinking"),
            calls(&["call_1"]),
            result("call_1"),
            text("system", "note"),
            text("user", "next"),
        ];
        let sent = Profile::named("strict").unwrap().apply(messages);
        assert_eq!(
            roles(&sent),
            ["system", "user", "assistant", "tool", "assistant", "user"]
        );
        assert_eq!(sent[1].content.as_deref(), Some("[summary]\n\ndo it"));
        assert_eq!(sent[2].content.as_deref(), Some("thinking\n\nworking"));
        assert_eq!(sent[2].tool_calls.len(), 1);
        assert_eq!(sent[4].content.as_deref(), Some(BRIDGE_TEXT));
        assert_eq!(sent[5].content.as_deref(), Some("[system] note\n\nnext"));
    }

    #[test]
    fn mistral_ids_are_nine_letters_and_digits_on_calls_and_results() {
        let sent = Profile::named("mistral").unwrap().apply(vec![
            text("user", "go"),
            calls(&["call_1"]),
            result("call_1"),
        ]);
        let id = &sent[1].tool_calls[0].id;
        assert_eq!(id.len(), 9);
        assert!(id.bytes().all(|byte| byte.is_ascii_alphanumeric()));
        assert_eq!(sent[2].tool_call_id.as_ref(), Some(id));
        assert_eq!(short_id("abcDEF123", 9), "abcDEF123");
        assert_ne!(short_id("call_1", 9), short_id("call_2", 9));
        let long = "x".repeat(500);
        assert_eq!(short_id(&long, 40).len(), 40);
    }

    #[test]
    fn llama3_sends_one_call_per_message_each_followed_by_its_result() {
        let messages = vec![
            text("user", "go"),
            calls(&["a", "b", "c"]),
            result("a"),
            result("b"),
            result("c"),
        ];
        let sent = Profile::named("llama3").unwrap().apply(messages);
        assert_eq!(
            roles(&sent),
            [
                "user",
                "assistant",
                "tool",
                "assistant",
                "tool",
                "assistant",
                "tool"
            ]
        );
        for pair in sent[1..].chunks(2) {
            assert_eq!(pair[0].tool_calls.len(), 1);
            assert_eq!(
                pair[1].tool_call_id.as_ref(),
                Some(&pair[0].tool_calls[0].id)
            );
        }
        assert_eq!(sent[1].content.as_deref(), Some("working"));
        assert_eq!(sent[3].content, None);
    }
}
