//! Rules that make an assembled context a request every provider accepts: after
//! the system prompt the first message is a user message, a lead marker says when
//! messages were left out, and every tool-call id is unique within the request.
//!
//! Each stored message already renders valid on its own (see [`crate::render`]);
//! these rules concern how the rendered items sit together.

use std::collections::{HashSet, VecDeque};

use rustc_hash::{FxBuildHasher, FxHashSet};

use crate::model::{ItemKind, RenderedItem, ViewItem};
use crate::parts::{merge_reference_footer, Role};
use crate::render::ChatMessage;
use crate::tokens::TokenCounter;

/// Tokens reserved for the lead marker: its text is one short line.
pub const MARKER_TOKENS: i64 = 32;

/// Where in `chosen` (indices of `items`, ascending) a lead marker goes, if one is
/// needed: at the last place where view items were left out (right before the
/// newest messages sent, after the instruction and summaries kept in front of
/// them), else before the first chosen item that is neither a system nor a user
/// message (system messages may lead; a summary renders as a user message), else
/// at the end when no user message was chosen at all.
///
/// Only summaries and the instruction are chosen before a gap other than the last
/// (see [`crate::store`]'s selection), and both render as user messages, so a
/// marker at the last gap leaves the request opening with a user message.
#[must_use]
pub fn marker_position(items: &[ViewItem], chosen: &[usize]) -> Option<usize> {
    if items.is_empty() {
        return None;
    }
    let mut expected = 0;
    let mut last_gap = None;
    for (position, &index) in chosen.iter().enumerate() {
        if index != expected {
            last_gap = Some(position);
        }
        expected = index + 1;
    }
    if chosen.len() < items.len() && expected < items.len() {
        return Some(chosen.len());
    }
    if last_gap.is_some() {
        return last_gap;
    }
    let lead = chosen
        .iter()
        .position(|&index| items[index].role != Some(Role::System));
    match lead {
        None => Some(chosen.len()),
        Some(position) => {
            let first = &items[chosen[position]];
            (first.kind == ItemKind::Message && first.role != Some(Role::User)).then_some(position)
        }
    }
}

/// The lead marker's text: what was left out, or that the conversation opens with
/// another role.
#[must_use]
pub fn marker_text(omitted: usize, file_ids: &[String]) -> String {
    let line = if omitted == 0 {
        "[the conversation begins with the message below]".to_string()
    } else {
        format!(
            "[{omitted} earlier messages are left out of this context to fit the window; \
             they are stored in full: search them with lossless_grep]"
        )
    };
    // The images and documents of what was left out are named as summaries name
    // them: no reference leaves the context.
    merge_reference_footer(&line, file_ids)
}

/// What the lead marker costs: [`MARKER_TOKENS`] for its line, and the lines that
/// name the file ids, images and documents of what was left out.
#[must_use]
pub fn marker_tokens(counter: &TokenCounter, file_ids: &[String]) -> i64 {
    if file_ids.is_empty() {
        return MARKER_TOKENS;
    }
    MARKER_TOKENS + counter.count(&merge_reference_footer("", file_ids)) as i64
}

/// The lead marker as a rendered item. Its id is empty: it is no view item.
#[must_use]
pub fn marker_item(text: String) -> RenderedItem {
    RenderedItem::new(String::new(), vec![ChatMessage::plain("user", text)])
}

/// Whether two tool calls of `items` share an id. Cheap on the common path: one
/// set insert per call, no copies.
#[must_use]
pub fn has_repeated_call_ids(items: &[&RenderedItem]) -> bool {
    // Ids are short and not attacker-chosen keys of a long-lived table: a fast
    // hash is what this per-assembly check needs.
    let mut seen = FxHashSet::with_capacity_and_hasher(items.len(), FxBuildHasher);
    items
        .iter()
        .flat_map(|item| item.messages.iter())
        .flat_map(|message| message.tool_calls.iter())
        .any(|call| !seen.insert(call.id.as_str()))
}

/// Renderings of `items` whose repeated tool-call ids are renamed, with their
/// positions in `items`. The first use of an id keeps it; a later one becomes
/// `{id}_{n}` with the smallest `n` unused in the request, on the call and on its
/// result (results follow their calls in order). Stored ids do not change.
#[must_use]
pub fn renamed_call_ids(items: &[&RenderedItem]) -> Vec<(usize, RenderedItem)> {
    let mut taken: HashSet<String> = items
        .iter()
        .flat_map(|item| item.messages.iter())
        .flat_map(|message| message.tool_calls.iter())
        .map(|call| call.id.clone())
        .collect();
    let mut used = HashSet::new();
    let mut renamed = Vec::new();
    for (position, item) in items.iter().enumerate() {
        // The id each call of the item goes out with, in order; cloned only if one changes.
        let mut ids = Vec::new();
        let mut changed = false;
        for call in item
            .messages
            .iter()
            .flat_map(|message| message.tool_calls.iter())
        {
            let mut id = call.id.clone();
            if !used.insert(id.clone()) {
                id = unused_id(&id, &mut taken);
                used.insert(id.clone());
                changed = true;
            }
            ids.push(id);
        }
        if changed {
            renamed.push((position, with_call_ids(item, ids)));
        }
    }
    renamed
}

/// A copy of `item` whose calls take `ids` in order, and whose results take the id of
/// the call they answer (results follow their calls in order).
fn with_call_ids(item: &RenderedItem, ids: Vec<String>) -> RenderedItem {
    let mut messages = item.messages.clone();
    let mut ids = ids.into_iter();
    let mut answers: VecDeque<String> = VecDeque::new();
    for message in &mut messages {
        for call in &mut message.tool_calls {
            call.id = ids.next().expect("one id per call");
            answers.push_back(call.id.clone());
        }
        if message.tool_call_id.is_some() {
            message.tool_call_id = answers.pop_front();
        }
    }
    RenderedItem::new(item.id.clone(), messages)
}

fn unused_id(id: &str, taken: &mut HashSet<String>) -> String {
    // Each attempt either succeeds or finds an id already taken; `taken` is finite.
    let mut n = 2_usize;
    loop {
        let fresh = format!("{id}_{n}");
        if taken.insert(fresh.clone()) {
            return fresh;
        }
        n += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::ToolCall;

    fn view_item(kind: ItemKind, role: Option<Role>) -> ViewItem {
        ViewItem {
            position: 0,
            kind,
            id: String::new(),
            tokens: 1,
            role,
            seq: 0,
        }
    }

    fn calls(ids: &[&str]) -> RenderedItem {
        let head = ChatMessage {
            role: "assistant",
            content: None,
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
        };
        let mut messages = vec![head];
        messages.extend(ids.iter().map(|id| ChatMessage {
            role: "tool",
            content: Some("ok".to_string()),
            tool_calls: Vec::new(),
            tool_call_id: Some((*id).to_string()),
            reasoning: Vec::new(),
            attachments: Vec::new(),
        }));
        RenderedItem::new("msg".to_string(), messages)
    }

    #[test]
    fn a_marker_goes_where_items_were_left_out_or_before_an_assistant_opening() {
        let user = view_item(ItemKind::Message, Some(Role::User));
        let assistant = view_item(ItemKind::Message, Some(Role::Assistant));
        let summary = view_item(ItemKind::Summary, None);
        let items = vec![summary.clone(), user.clone(), assistant.clone()];
        assert_eq!(marker_position(&items, &[0, 1, 2]), None);
        assert_eq!(marker_position(&items, &[0, 2]), Some(1));
        assert_eq!(marker_position(&items, &[2]), Some(0));
        assert_eq!(marker_position(&items, &[]), Some(0));
        assert_eq!(
            marker_position(&[assistant.clone(), user], &[0, 1]),
            Some(0)
        );
        assert_eq!(marker_position(&[], &[]), None);
    }

    #[test]
    fn repeated_ids_are_renamed_on_the_call_and_its_result() {
        let first = calls(&["call_0", "call_1"]);
        let second = calls(&["call_0", "call_0_2"]);
        let third = calls(&["call_0"]);
        let items = [&first, &second, &third];
        assert!(has_repeated_call_ids(&items));
        let renamed = renamed_call_ids(&items);
        let mut all: Vec<String> = Vec::new();
        for (position, item) in items.iter().enumerate() {
            let item = renamed
                .iter()
                .find(|(at, _)| *at == position)
                .map_or(*item, |(_, copy)| copy);
            for (call, result) in item.messages[0].tool_calls.iter().zip(&item.messages[1..]) {
                assert_eq!(result.tool_call_id.as_deref(), Some(call.id.as_str()));
                all.push(call.id.clone());
            }
        }
        assert_eq!(
            all,
            vec!["call_0", "call_1", "call_0_3", "call_0_2", "call_0_4"]
        );
        assert_eq!(renamed.len(), 2);
    }

    #[test]
    fn unique_ids_need_no_renaming() {
        let first = calls(&["a", "b"]);
        let second = calls(&["c"]);
        assert!(!has_repeated_call_ids(&[&first, &second]));
        assert!(renamed_call_ids(&[&first, &second]).is_empty());
    }
}
