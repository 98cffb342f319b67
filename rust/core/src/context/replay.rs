//! Reasoning sent back within the tool loop that produced it, and the signatures
//! of its calls (Gemini's thought signatures kept apart from their ids).
//!
//! A provider that signs its reasoning (Anthropic's `thinking` blocks) refuses a
//! tool loop whose last assistant turn comes back without its block, and ignores
//! the blocks of turns before the newest user message, which would only cost
//! tokens. So an assistant message after the view's newest user message (the
//! instruction) is sent with the reasoning blocks the session's provider produced
//! (`render::render_replay`); every other message renders as always, and a block
//! never goes to a provider other than the one that made it.
//!
//! The view counts a message without its reasoning. What the loop's blocks add is a
//! surcharge on their messages, counted when the replay is rendered (once per
//! rendering, kept in the cached view) and charged by the selection only when the
//! message is sent, so a request counts exactly what it renders.

use std::sync::Arc;

use crate::context::provider::provider_of;
use crate::context::selection::{instruction, Surcharge};
use crate::error::Result;
use crate::model::{ItemKind, RenderedItem};
use crate::parts::{replay_tokens, Part, Role};
use crate::render;
use crate::store::Store;
use crate::tokens::TokenCounter;

/// An assistant message as the current tool loop sends it: with its reasoning.
#[derive(Debug)]
pub(crate) struct Replay {
    pub(crate) item: Arc<RenderedItem>,
    /// What the reasoning adds to the message's count in the view.
    pub(crate) tokens: i64,
}

impl Store {
    /// What the current tool loop's reasoning adds to a request of `session_id`,
    /// each replay of the loop rendered and kept in the (freshened) cached view.
    /// The loop's messages are rendered with their parts loaded once: their plain
    /// rendering is kept too, as a request sends nearly all of them anyway.
    pub(crate) fn replay_surcharge(
        &mut self,
        session_id: &str,
        counter: &TokenCounter,
    ) -> Result<Surcharge> {
        let provider = provider_of(&self.session(session_id)?.model).to_string();
        let view = self.fresh_view(session_id)?;
        let from = instruction(&view.items).map_or(0, |at| at + 1);
        view.replays.retain(|&index, _| index >= from);
        let missing: Vec<(usize, String)> = (from..view.items.len())
            .filter(|&index| {
                let item = &view.items[index];
                item.kind == ItemKind::Message
                    && item.role == Some(Role::Assistant)
                    && !view.replays.contains_key(&index)
            })
            .map(|index| (index, view.items[index].id.clone()))
            .collect();
        for (index, id) in missing {
            let parts = self.load_parts(&id)?;
            let replay = render::render_replay("assistant", &parts, &provider).map(|messages| {
                let signed: usize = parts
                    .iter()
                    .filter_map(|stored| match &stored.part {
                        Part::Reasoning(reasoning) => reasoning.signature_for(&provider),
                        _ => None,
                    })
                    .map(|signature| signature.tokens(counter))
                    .sum();
                let tokens = (signed
                    + messages
                        .iter()
                        .map(|message| replay_tokens(&message.reasoning, counter))
                        .sum::<usize>()) as i64;
                Replay {
                    item: Arc::new(RenderedItem::new(id.clone(), messages)),
                    tokens,
                }
            });
            let plain =
                RenderedItem::new(id, render::render_message("assistant", &parts, &provider));
            let view = self.cached(session_id);
            view.keep_rendered(index, plain);
            view.replays.insert(index, replay);
        }
        let view = self.cached(session_id);
        let tokens = (from..view.items.len())
            .map(|index| {
                view.replays
                    .get(&index)
                    .and_then(Option::as_ref)
                    .map_or(0, |replay| replay.tokens)
            })
            .collect();
        let floor = self.stand_in_floor(session_id, &provider)?;
        Ok(Surcharge {
            from,
            tokens,
            floor,
        })
    }

    /// `items` (the renderings of the view items at `chosen`) with the current tool
    /// loop's replays in place of their plain renderings.
    pub(crate) fn with_replays(
        &mut self,
        session_id: &str,
        chosen: &[usize],
        items: &mut [Arc<RenderedItem>],
    ) {
        let view = self.cached(session_id);
        for (item, index) in items.iter_mut().zip(chosen) {
            if let Some(Some(replay)) = view.replays.get(index) {
                *item = Arc::clone(&replay.item);
            }
        }
    }
}
