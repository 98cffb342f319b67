//! The context view and its assembly into chat messages.
//!
//! Each store keeps a decoded copy of the views it assembled. A copy is trusted
//! only while the session's `view_version` in the database equals the version the
//! copy was built at: writes by other connections or processes bump that version,
//! so a stale copy is reloaded, never served.

use std::collections::HashMap;
use std::sync::Arc;

use crate::db::backend::args;

use crate::arena::memory_recall::NewestRecall;
use crate::compaction::left_out::LeftOutIds;
use crate::context::replay::Replay;
use crate::context::selection::{select_with_marker, Selection, Surcharge};
use crate::error::{Error, Result};
pub use crate::model::{ItemKind, RenderedItem, ViewItem, ViewStats};
use crate::parts::Role;
use crate::prefix::Unit;
use crate::render::{self, ChatMessage};
use crate::request;
use crate::store::Store;
use crate::tokens::TokenCounter;

/// Sessions whose views a store keeps decoded at once.
const CACHED_SESSIONS: usize = 32;

/// What an assembly sends, before it is rendered.
struct Chosen {
    selected: Selection,
    marker: Option<usize>,
    /// The file ids of what was left out, which the marker names.
    file_ids: Vec<String>,
    surcharge: Surcharge,
}

/// The assembled context: rendered items in view order, and what it holds.
#[derive(Clone, Debug, Default)]
pub struct Assembled {
    pub items: Vec<Arc<RenderedItem>>,
    /// What each of `items` costs, in order.
    pub item_tokens: Vec<i64>,
    pub tokens: i64,
    /// View items left out because the budget ran out.
    pub omitted: usize,
    /// The position in `items` of the lead marker, which is no view item (see
    /// [`crate::request`]).
    pub marker: Option<usize>,
}

impl Assembled {
    /// The ids of the included view items, in view order.
    pub fn item_ids(&self) -> impl Iterator<Item = &str> {
        self.items
            .iter()
            .enumerate()
            .filter(|(position, _)| Some(*position) != self.marker)
            .map(|(_, item)| item.id.as_str())
    }

    /// Each item as a unit of a request's print (see [`crate::prefix`]).
    pub fn units(&self) -> impl Iterator<Item = Unit> + '_ {
        self.items
            .iter()
            .zip(&self.item_tokens)
            .map(|(item, &tokens)| Unit {
                hash: item.fingerprint,
                tokens,
            })
    }

    /// Every chat message of the context, in order.
    pub fn messages(&self) -> impl Iterator<Item = &ChatMessage> {
        self.items.iter().flat_map(|item| item.messages.iter())
    }
}

#[derive(Default)]
pub(crate) struct CachedView {
    pub(crate) version: i64,
    pub(crate) items: Vec<ViewItem>,
    pub(crate) tokens: i64,
    pub(crate) summary_tokens: i64,
    /// Indices of the summary items, so assembly never scans the whole view for them.
    pub(crate) summaries: Vec<usize>,
    /// The rendering of each item (by index), once an assembly needed it.
    rendered: Vec<Option<Arc<RenderedItem>>>,
    /// Items in `rendered` that hold a rendering.
    rendered_count: usize,
    /// The last lead marker, kept so an unchanged one is the same `Arc`.
    marker: Option<Arc<RenderedItem>>,
    /// File ids of the first items, gathered for markers as assemblies left them out.
    pub(crate) left_out: LeftOutIds,
    /// The newest user message's recall, kept while nothing leaves the view: an
    /// append or a tool's result adds to the view and keeps it, a summary or a prune
    /// (and any foreign write) reloads the view without it.
    pub(crate) recalled: Option<Arc<NewestRecall>>,
    /// The messages (by index) a request sends with more than their plain
    /// rendering: the current tool loop's reasoning, the newest attachments.
    pub(crate) replays: HashMap<usize, Replay>,
}

impl CachedView {
    /// The lead marker for `omitted` left-out items, the same `Arc` while unchanged.
    fn marker_for(&mut self, omitted: usize, file_ids: &[String]) -> Arc<RenderedItem> {
        let text = request::marker_text(omitted, file_ids);
        match &self.marker {
            Some(marker) if marker.messages[0].content.as_deref() == Some(text.as_str()) => {
                Arc::clone(marker)
            }
            _ => {
                let marker = Arc::new(request::marker_item(text));
                self.marker = Some(Arc::clone(&marker));
                marker
            }
        }
    }

    /// Keeps `rendered` as the rendering of the item at `index`, unless one is kept.
    pub(crate) fn keep_rendered(&mut self, index: usize, rendered: RenderedItem) {
        if self.rendered[index].is_none() {
            self.rendered[index] = Some(Arc::new(rendered));
            self.rendered_count += 1;
        }
    }

    fn push(&mut self, item: ViewItem) {
        self.tokens += item.tokens;
        if item.kind == ItemKind::Summary {
            self.summary_tokens += item.tokens;
            self.summaries.push(self.items.len());
        }
        self.items.push(item);
        self.rendered.push(None);
    }

    /// Drops the renderings of every item but those at `kept`, once they outnumber
    /// what the next assembly will take again.
    fn trim_rendered(&mut self, kept: &[usize]) {
        if self.rendered_count <= kept.len() * 2 + 16 {
            return;
        }
        let mut keep = vec![false; self.rendered.len()];
        for &index in kept {
            keep[index] = true;
        }
        for (slot, keep) in self.rendered.iter_mut().zip(keep) {
            if !keep {
                *slot = None;
            }
        }
        self.rendered_count = kept.len();
    }
}

#[derive(Default)]
pub(crate) struct ViewCache {
    views: HashMap<String, CachedView>,
}

impl ViewCache {
    /// Records an append this store committed at `version`; a copy that missed a
    /// version in between is dropped rather than patched.
    pub(crate) fn appended(&mut self, session_id: &str, version: i64, item: ViewItem) {
        let Some(view) = self.views.get_mut(session_id) else {
            return;
        };
        if view.version + 1 != version {
            self.views.remove(session_id);
            return;
        }
        view.version = version;
        view.push(item);
    }

    /// Records a token change of one message item committed at `version`.
    pub(crate) fn item_changed(&mut self, session_id: &str, version: i64, id: &str, delta: i64) {
        let Some(view) = self.views.get_mut(session_id) else {
            return;
        };
        if view.version + 1 != version {
            self.views.remove(session_id);
            return;
        }
        view.version = version;
        if let Some(index) = view.items.iter().rposition(|item| item.id == id) {
            view.items[index].tokens += delta;
            view.tokens += delta;
            if view.rendered[index].take().is_some() {
                view.rendered_count -= 1;
            }
            view.replays.remove(&index);
            // A tool's result can bring file ids the gathered ones lack.
            if index < view.left_out.through {
                view.left_out = LeftOutIds::default();
            }
        }
    }

    /// Drops the kept recall of `session_id`'s view (see [`CachedView::recalled`]).
    pub(crate) fn forget_recall(&mut self, session_id: &str) {
        if let Some(view) = self.views.get_mut(session_id) {
            view.recalled = None;
        }
    }

    /// Every cached view.
    pub(crate) fn all_mut(&mut self) -> impl Iterator<Item = &mut CachedView> {
        self.views.values_mut()
    }

    pub(crate) fn forget(&mut self, session_id: &str) {
        self.views.remove(session_id);
    }
}

impl Store {
    fn view_version(&self, session_id: &str) -> Result<i64> {
        self.conn
            .prepare_cached("SELECT view_version FROM sessions WHERE id = ?1")?
            .query_opt(args![session_id], |row| row.get(0))?
            .ok_or_else(|| Error::SessionNotFound(session_id.to_string()))
    }

    /// Makes sure the cached view of `session_id` is current, loading it if not.
    pub(crate) fn fresh_view(&mut self, session_id: &str) -> Result<&mut CachedView> {
        let version = self.view_version(session_id)?;
        let current = self
            .views
            .views
            .get(session_id)
            .is_some_and(|view| view.version == version);
        if !current {
            let view = self.load_view(session_id, version)?;
            if self.views.views.len() >= CACHED_SESSIONS {
                self.views.views.clear();
            }
            self.views.views.insert(session_id.to_string(), view);
        }
        Ok(self
            .views
            .views
            .get_mut(session_id)
            .expect("view was just ensured"))
    }

    fn load_view(&self, session_id: &str, version: i64) -> Result<CachedView> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT c.position, c.kind, c.item_id, c.token_count, m.role, m.seq
             FROM context_items c LEFT JOIN messages m ON c.kind = 'message' AND m.id = c.item_id
             WHERE c.session_id = ?1 ORDER BY c.position",
        )?;
        let mut view = CachedView {
            version,
            ..CachedView::default()
        };
        let mut rows = stmt.query(args![session_id])?;
        while let Some(ref row) = rows.next()? {
            let kind = if row.get::<&str>(1)? == "summary" {
                ItemKind::Summary
            } else {
                ItemKind::Message
            };
            let role: Option<String> = row.get(4)?;
            let item = ViewItem {
                position: row.get(0)?,
                kind,
                id: row.get(2)?,
                tokens: row.get(3)?,
                role: role.as_deref().map(Role::parse).transpose()?,
                seq: row.get::<Option<i64>>(5)?.unwrap_or(0),
            };
            view.push(item);
        }
        Ok(view)
    }

    /// Sizes of the session's current view.
    pub fn view_stats(&mut self, session_id: &str) -> Result<ViewStats> {
        let view = self.fresh_view(session_id)?;
        let summary_items = view.summaries.len() as i64;
        let instruction_tokens = view
            .items
            .iter()
            .rfind(|item| item.kind == ItemKind::Message && item.role == Some(Role::User))
            .map_or(0, |item| item.tokens);
        Ok(ViewStats {
            instruction_tokens,
            items: view.items.len() as i64,
            message_items: view.items.len() as i64 - summary_items,
            summary_items,
            tokens: view.tokens,
            summary_tokens: view.summary_tokens,
            version: view.version,
        })
    }

    /// The session's view items, in order.
    pub fn view_items(&mut self, session_id: &str) -> Result<Vec<ViewItem>> {
        Ok(self.fresh_view(session_id)?.items.clone())
    }

    /// Assembles the context that fits `budget` tokens: the newest user message,
    /// every summary (the newest that fit if not all do), then the history from the
    /// newest back, cut in steps when it does not fit (see
    /// [`super::selection`]). A lead marker stands where messages were left out, or
    /// opens the messages when the first is not a user message, and repeated
    /// tool-call ids are renamed (see [`crate::request`]). Cost grows with the view's
    /// items, not the session length.
    pub fn assemble(&mut self, session_id: &str, budget: i64) -> Result<Assembled> {
        let counter = self.counter(session_id)?;
        let Chosen {
            selected,
            marker,
            file_ids,
            surcharge,
        } = self.choose(session_id, budget, &counter)?;
        let mut items = self.rendered_items(session_id, &selected.chosen)?;
        self.with_replays(session_id, &selected.chosen, &mut items);
        unique_call_ids(&mut items);
        let view = self.cached(session_id);
        let omitted = view.items.len() - selected.chosen.len();
        let mut tokens = selected.tokens;
        let mut item_tokens: Vec<i64> = selected
            .chosen
            .iter()
            .map(|&index| view.items[index].tokens + surcharge.at(index))
            .collect();
        if let Some(position) = marker {
            items.insert(position, view.marker_for(omitted, &file_ids));
            let marker_tokens = request::marker_tokens(&counter, &file_ids);
            item_tokens.insert(position, marker_tokens);
            tokens += marker_tokens;
        }
        Ok(Assembled {
            items,
            item_tokens,
            tokens,
            omitted,
            marker,
        })
    }

    /// The view items a request of `budget` sends, where its lead marker goes and
    /// the file ids the marker names.
    fn choose(&mut self, session_id: &str, budget: i64, counter: &TokenCounter) -> Result<Chosen> {
        let mut reserve = request::MARKER_TOKENS;
        loop {
            let (selected, marker, surcharge) =
                self.select(session_id, budget, reserve, counter)?;
            let view = self.cached(session_id);
            let file_ids = match marker {
                Some(_) if selected.chosen.len() < view.items.len() => {
                    self.left_out_file_ids(session_id, &selected.chosen, selected.tail_start)?
                }
                _ => Vec::new(),
            };
            // A marker that names file ids can outgrow its reservation: select
            // again with room for it (leaving more out can only add ids, so this
            // ends within a few passes).
            let needed = request::marker_tokens(counter, &file_ids);
            if marker.is_none() || needed <= reserve {
                return Ok(Chosen {
                    selected,
                    marker,
                    file_ids,
                    surcharge,
                });
            }
            if needed >= budget {
                // The ids alone would not fit: the budget holds, with a plain marker.
                let (selected, marker, surcharge) =
                    self.select(session_id, budget, request::MARKER_TOKENS, counter)?;
                return Ok(Chosen {
                    selected,
                    marker,
                    file_ids: Vec::new(),
                    surcharge,
                });
            }
            reserve = needed;
        }
    }

    /// One selection from the fresh view, with `reserve` tokens for a marker; the
    /// current tool loop's reasoning is charged to the messages that send it.
    fn select(
        &mut self,
        session_id: &str,
        budget: i64,
        reserve: i64,
        counter: &TokenCounter,
    ) -> Result<(Selection, Option<usize>, Surcharge)> {
        // Freshens the view, so the surcharge is of the items selected from.
        let surcharge = self.request_surcharge(session_id, counter, budget)?;
        let view = self.cached(session_id);
        let (selected, marker) = select_with_marker(
            &view.items,
            &view.summaries,
            (view.tokens, view.summary_tokens),
            budget,
            reserve,
            &surcharge,
        );
        Ok((selected, marker, surcharge))
    }

    pub(crate) fn cached(&mut self, session_id: &str) -> &mut CachedView {
        self.views
            .views
            .get_mut(session_id)
            .expect("view was just ensured")
    }

    /// The renderings of the view items at `chosen`, rendering those not cached.
    fn rendered_items(
        &mut self,
        session_id: &str,
        chosen: &[usize],
    ) -> Result<Vec<Arc<RenderedItem>>> {
        let view = self.cached(session_id);
        let missing: Vec<(usize, ItemKind, String)> = chosen
            .iter()
            .filter(|&&index| view.rendered[index].is_none())
            .map(|&index| (index, view.items[index].kind, view.items[index].id.clone()))
            .collect();
        let mut loaded = Vec::with_capacity(missing.len());
        // A message renders for the provider its session's model is routed to.
        let provider = if missing.is_empty() {
            String::new()
        } else {
            crate::context::provider::provider_of(&self.session(session_id)?.model).to_string()
        };
        for (index, kind, id) in missing {
            let messages = match kind {
                ItemKind::Message => self.render_stored_message(&id, &provider)?,
                ItemKind::Summary => self.render_summary(&id)?,
            };
            loaded.push((index, Arc::new(RenderedItem::new(id, messages))));
        }
        let view = self.cached(session_id);
        view.rendered_count += loaded.len();
        for (index, rendered) in loaded {
            view.rendered[index] = Some(rendered);
        }
        let items = chosen
            .iter()
            .map(|&index| Arc::clone(view.rendered[index].as_ref().expect("rendered above")))
            .collect();
        view.trim_rendered(chosen);
        Ok(items)
    }

    fn render_stored_message(&self, message_id: &str, provider: &str) -> Result<Vec<ChatMessage>> {
        let role: String = self
            .conn
            .prepare_cached("SELECT role FROM messages WHERE id = ?1")?
            .query_row(args![message_id], |row| row.get(0))?;
        let role = Role::parse(&role)?.as_str();
        Ok(render::render_message(
            role,
            &self.load_parts(message_id)?,
            provider,
        ))
    }

    fn render_summary(&self, summary_id: &str) -> Result<Vec<ChatMessage>> {
        let (text, covered): (String, i64) = self
            .conn
            .prepare_cached("SELECT text, message_count FROM summaries WHERE id = ?1")?
            .query_row(args![summary_id], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok(vec![render::summary_message(summary_id, covered, &text)])
    }
}

/// Renames repeated tool-call ids in `items`. The renamed renderings are not
/// cached: which id is renamed depends on what else the assembly holds, and the
/// same view must give the same request in every process.
fn unique_call_ids(items: &mut [Arc<RenderedItem>]) {
    let borrowed: Vec<&RenderedItem> = items.iter().map(AsRef::as_ref).collect();
    if !request::has_repeated_call_ids(&borrowed) {
        return;
    }
    for (position, renamed) in request::renamed_call_ids(&borrowed) {
        items[position] = Arc::new(renamed);
    }
}
