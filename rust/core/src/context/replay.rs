//! Reasoning sent back within the tool loop that produced it, the signatures of
//! its calls (Gemini's thought signatures kept apart from their ids), and the
//! newest images and documents sent inline.
//!
//! A provider that signs its reasoning (Anthropic's `thinking` blocks) refuses a
//! tool loop whose last assistant turn comes back without its block, and ignores
//! the blocks of turns before the newest user message, which would only cost
//! tokens. So an assistant message after the view's newest user message (the
//! instruction) is sent with the reasoning blocks the session's provider produced
//! (`render::render_message_with`), its calls with their signatures; every other
//! message renders as always, and a block
//! never goes to a provider other than the one that made it.
//!
//! The view counts a message without its reasoning. What the loop's blocks add is a
//! surcharge on their messages, counted when the replay is rendered (once per
//! rendering, kept in the cached view) and charged by the selection only when the
//! message is sent, so a request counts exactly what it renders.
//!
//! Images and documents work the same way. Every media part renders as a one-line
//! reference, always, and that is what the view counts. A request sends the view's
//! newest attachments (at most `MediaPolicy::max_inline`, within its tokens) inline
//! beside their reference lines, charging each what its provider counts for it
//! (`parts::attachment_tokens`). When a newer one arrives, the oldest inline one
//! ages into its reference alone: its message's text stays as it was, and only the
//! attachment leaves, so a prompt cache breaks at that message once, not on every
//! turn.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use base64::Engine as _;

use crate::context::provider::provider_of;
use crate::context::selection::{instruction, Surcharge};
use crate::error::Result;
use crate::model::chat::AttachmentSource;
use crate::model::{ItemKind, RenderedItem};
use crate::parts::{attachment_tokens, replay_tokens, ImageRule, Media, Part, Role};
use crate::render::{self, Extras};
use crate::store::Store;
use crate::tokens::TokenCounter;

/// What a request adds to one message's plain rendering: its reasoning (an
/// assistant message of the current tool loop) and the attachments it sends inline.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ReplayKey {
    reasoning: bool,
    inline: Vec<String>,
}

/// A message as a request sends it: with its reasoning and inline attachments.
#[derive(Debug)]
pub(crate) struct Replay {
    /// What it was rendered with: a request that wants other extras renders anew.
    key: ReplayKey,
    /// The rendering and what it adds to the message's count in the view; `None`
    /// when it adds nothing.
    rendered: Option<(Arc<RenderedItem>, i64)>,
}

/// Framing of one inline attachment: its content part, and its share of the user
/// message that carries a tool result's images where a format needs one.
const ATTACHMENT_FRAMING: i64 = 16;

/// The attachments a request sends inline, by view index: each media part with
/// its cost to the provider.
type Inline = BTreeMap<usize, Vec<(Media, i64)>>;

impl Store {
    /// What the current tool loop's reasoning and the view's newest attachments add
    /// to a request of `session_id` with `budget` tokens, each such message
    /// rendered and kept in the (freshened) cached view. The messages are rendered
    /// with their parts loaded once: their plain rendering is kept too, as a
    /// request sends nearly all of them anyway.
    pub(crate) fn request_surcharge(
        &mut self,
        session_id: &str,
        counter: &TokenCounter,
        budget: i64,
    ) -> Result<Surcharge> {
        let model = self.session(session_id)?.model.clone();
        let provider = provider_of(&model).to_string();
        let inline = self.inline_media(session_id, ImageRule::of(&provider, &model), budget)?;
        let view = self.fresh_view(session_id)?;
        let loop_from = instruction(&view.items).map_or(0, |at| at + 1);
        let from = inline
            .keys()
            .next()
            .map_or(loop_from, |&first| first.min(loop_from));
        let wanted: HashMap<usize, ReplayKey> = (from..view.items.len())
            .filter_map(|index| {
                let item = &view.items[index];
                let reasoning = index >= loop_from
                    && item.kind == ItemKind::Message
                    && item.role == Some(Role::Assistant);
                let ids: Vec<String> = inline.get(&index).map_or_else(Vec::new, |media| {
                    media
                        .iter()
                        .map(|(media, _)| media.media_id.clone())
                        .collect()
                });
                (reasoning || !ids.is_empty()).then_some((
                    index,
                    ReplayKey {
                        reasoning,
                        inline: ids,
                    },
                ))
            })
            .collect();
        view.replays
            .retain(|index, replay| wanted.get(index) == Some(&replay.key));
        let missing: Vec<(usize, String, Option<Role>)> = wanted
            .keys()
            .filter(|index| !view.replays.contains_key(index))
            .map(|&index| (index, view.items[index].id.clone(), view.items[index].role))
            .collect();
        for (index, id, role) in missing {
            let key = wanted[&index].clone();
            let media = inline.get(&index).map_or(&[][..], Vec::as_slice);
            let (plain, replay) = self.render_replay(&id, role, key, media, &provider, counter)?;
            let view = self.cached(session_id);
            view.keep_rendered(index, plain);
            view.replays.insert(index, replay);
        }
        let view = self.cached(session_id);
        let tokens = (from..view.items.len())
            .map(|index| {
                view.replays
                    .get(&index)
                    .and_then(|replay| replay.rendered.as_ref())
                    .map_or(0, |(_, tokens)| *tokens)
            })
            .collect();
        let floor = self.stand_in_floor(session_id, &provider)?;
        Ok(Surcharge {
            from,
            tokens,
            floor,
        })
    }

    /// The message `id` rendered plain and with the extras `key` names.
    fn render_replay(
        &self,
        id: &str,
        role: Option<Role>,
        key: ReplayKey,
        media: &[(Media, i64)],
        provider: &str,
        counter: &TokenCounter,
    ) -> Result<(RenderedItem, Replay)> {
        let role = role.unwrap_or(Role::User).as_str();
        let parts = self.load_parts(id)?;
        let mut sources = HashMap::with_capacity(media.len());
        for (item, _) in media {
            if let Some(source) = self.attachment_source(item)? {
                sources.insert(item.media_id.clone(), source);
            }
        }
        let extras = Extras {
            reasoning: key.reasoning,
            inline: Some(&sources),
        };
        let messages = render::render_message_with(role, &parts, provider, extras);
        let plain = render::render_message(role, &parts, provider);
        let signed: usize = if key.reasoning {
            parts
                .iter()
                .filter_map(|stored| match &stored.part {
                    Part::Reasoning(reasoning) => reasoning.signature_for(provider),
                    _ => None,
                })
                .map(|signature| signature.tokens(counter))
                .sum()
        } else {
            0
        };
        let reasoning: usize = signed
            + messages
                .iter()
                .map(|message| replay_tokens(&message.reasoning, counter))
                .sum::<usize>();
        let sent = |media_id: &str| sources.contains_key(media_id);
        let attachments: i64 = media
            .iter()
            .filter(|(item, _)| sent(&item.media_id))
            .map(|(_, tokens)| tokens)
            .sum();
        // Reasoning, signed calls or attachments: whatever the request adds.
        let adds = messages != plain;
        let rendered = adds.then(|| {
            (
                Arc::new(RenderedItem::new(id.to_string(), messages)),
                reasoning as i64 + attachments,
            )
        });
        let plain = RenderedItem::new(id.to_string(), plain);
        Ok((plain, Replay { key, rendered }))
    }

    /// Where an inline attachment's bytes come from: its URL, or its stored bytes
    /// as base64. `None` when its bytes are missing (never for a part this store
    /// wrote): it then goes as its reference alone.
    fn attachment_source(&self, media: &Media) -> Result<Option<AttachmentSource>> {
        if let Some(url) = &media.url {
            return Ok(Some(AttachmentSource::Url(url.clone())));
        }
        Ok(self.read_media(&media.media_id)?.map(|(_, bytes)| {
            let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
            AttachmentSource::Base64(Arc::from(encoded))
        }))
    }

    /// The view's newest attachments that a request of `budget` tokens sends
    /// inline: at most the policy's number, within its tokens (and half the
    /// budget), newest first and stopping at the first that does not fit, so an
    /// older one never goes inline where a newer one does not.
    fn inline_media(&mut self, session_id: &str, rule: ImageRule, budget: i64) -> Result<Inline> {
        let policy = self.media_policy;
        let mut inline = Inline::new();
        if policy.max_inline == 0 {
            return Ok(inline);
        }
        // Parts of messages no longer in the view (summarised) are skipped: a few
        // more than the policy's number are read for them.
        let newest = self.newest_media(session_id, policy.max_inline + 16)?;
        let view = self.fresh_view(session_id)?;
        let cap = policy.max_inline_tokens.min(budget / 2);
        let (mut count, mut used) = (0, 0);
        for (message_id, media) in newest {
            let at = view
                .items
                .iter()
                .rposition(|item| item.kind == ItemKind::Message && item.id == message_id);
            let Some(index) = at else { continue };
            let tokens = attachment_tokens(&media, rule) as i64 + ATTACHMENT_FRAMING;
            if count == policy.max_inline || used + tokens > cap {
                break;
            }
            count += 1;
            used += tokens;
            inline.entry(index).or_default().push((media, tokens));
        }
        Ok(inline)
    }

    /// `items` (the renderings of the view items at `chosen`) with this request's
    /// replays in place of their plain renderings.
    pub(crate) fn with_replays(
        &mut self,
        session_id: &str,
        chosen: &[usize],
        items: &mut [Arc<RenderedItem>],
    ) {
        let view = self.cached(session_id);
        for (item, index) in items.iter_mut().zip(chosen) {
            if let Some((rendered, _)) = view.replays.get(index).and_then(|r| r.rendered.as_ref()) {
                *item = Arc::clone(rendered);
            }
        }
    }
}
