//! The store side of compaction: pruning tool outputs, choosing the span to
//! summarise, deterministic summaries, and the atomic commit of a summary.
//!
//! Everything here is written for spans of tens of thousands of messages: parts
//! are read with one statement per call (never one per message), membership is
//! checked against the cached view by sequence number, and a commit writes its
//! edges and removes its sources with one statement each.

use std::collections::{HashMap, HashSet};

use super::backend::{args, Row};

use super::gate::transact;
use super::id_list::{split_ids, IdList};
use super::messages::row_to_part;
use super::view::{ItemKind, ViewItem};
use super::Store;
use crate::error::{Error, Result};
use crate::fileids::{merge_file_id_footer, FOOTER_PREFIX};
use crate::ids::now_ms;
use crate::parts::Role;
use crate::plan::{self, Tail};
use crate::render::{self, transcript_entry, StoredPart};

/// Characters of one message a deterministic truncation keeps at most, so a single
/// huge tool output cannot crowd out every other recent message.
const TRUNCATION_ENTRY_CHARS: usize = 4000;

/// What a prune pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PruneResult {
    /// Tool outputs outside the protected tail and the protect window: what a
    /// prune would tombstone.
    pub candidates: i64,
    /// Tool outputs tombstoned by this call (0 when it saved too little to write).
    pub pruned_parts: i64,
    /// Tokens the view shrank by.
    pub tokens_saved: i64,
}

/// The oldest unprotected run of messages in a view: what the next summary covers.
#[derive(Clone, Debug, Default)]
pub struct SpanInfo {
    pub session_id: String,
    /// The messages, in view order.
    pub message_ids: Vec<String>,
    /// The view tokens and sequence numbers of the messages, in the same order.
    pub message_tokens: Vec<i64>,
    pub message_seqs: Vec<i64>,
    /// View tokens of all the messages.
    pub tokens: i64,
    pub first_seq: i64,
    pub last_seq: i64,
    /// The version and size of the view the span was read from.
    pub view_version: i64,
    pub view_tokens: i64,
    /// The summaries in that view, and their view tokens.
    pub summary_ids: Vec<String>,
    pub summary_tokens: i64,
}

impl SpanInfo {
    /// The runs of the span that leaf summaries of at most `max_tokens` of source
    /// each cover (see [`plan::leaf_chunks`]), oldest first.
    #[must_use]
    pub fn chunks(&self, max_tokens: i64) -> Vec<SpanInfo> {
        plan::leaf_chunks(&self.message_tokens, max_tokens)
            .into_iter()
            .map(|range| self.run(range))
            .collect()
    }

    /// The messages of the span at `range` (view order).
    fn run(&self, range: std::ops::Range<usize>) -> SpanInfo {
        self.pick(&range.collect::<Vec<_>>())
    }

    /// The span's messages at `indices` (ascending), as a span of the same view.
    fn pick(&self, indices: &[usize]) -> SpanInfo {
        let seqs: Vec<i64> = indices
            .iter()
            .map(|&index| self.message_seqs[index])
            .collect();
        let tokens: Vec<i64> = indices
            .iter()
            .map(|&index| self.message_tokens[index])
            .collect();
        SpanInfo {
            session_id: self.session_id.clone(),
            message_ids: indices
                .iter()
                .map(|&index| self.message_ids[index].clone())
                .collect(),
            tokens: tokens.iter().sum(),
            message_tokens: tokens,
            first_seq: seqs.iter().copied().min().unwrap_or_default(),
            last_seq: seqs.iter().copied().max().unwrap_or_default(),
            message_seqs: seqs,
            view_version: self.view_version,
            view_tokens: self.view_tokens,
            summary_ids: self.summary_ids.clone(),
            summary_tokens: self.summary_tokens,
        }
    }

    /// The `count` messages of the span with the lowest sequence numbers (all of
    /// them when it holds fewer), in view order: what a summary of a capped
    /// transcript covers, since a transcript runs in message order.
    #[must_use]
    pub fn head(&self, count: usize) -> SpanInfo {
        let count = count.min(self.message_ids.len());
        let keep: Vec<usize> = if self.message_seqs.is_sorted() {
            (0..count).collect()
        } else {
            let mut by_seq: Vec<usize> = (0..self.message_seqs.len()).collect();
            by_seq.sort_unstable_by_key(|&index| self.message_seqs[index]);
            by_seq.truncate(count);
            by_seq.sort_unstable();
            by_seq
        };
        self.pick(&keep)
    }
}

/// A rendered text with its token count and the messages it drew on.
#[derive(Clone, Debug, Default)]
pub struct TextResult {
    pub text: String,
    pub token_count: i64,
    pub message_ids: Vec<String>,
    pub file_ids: Vec<String>,
}

/// A stored summary.
#[derive(Clone, Debug)]
pub struct SummaryRow {
    pub id: String,
    pub session_id: String,
    pub kind: String,
    pub level: i64,
    pub text: String,
    pub token_count: i64,
    pub span_start_seq: i64,
    pub span_end_seq: i64,
    pub message_count: i64,
    pub depth: i64,
    pub file_ids: Vec<String>,
    pub created_at: i64,
    pub superseded_by: Option<String>,
}

const SUMMARY_COLUMNS: &str =
    "id, session_id, kind, level, text, token_count, span_start_seq, span_end_seq,
     message_count, depth, file_ids, created_at, superseded_by";

fn row_to_summary(row: &Row<'_>) -> Result<SummaryRow> {
    let file_ids: Option<String> = row.get(10)?;
    Ok(SummaryRow {
        id: row.get(0)?,
        session_id: row.get(1)?,
        kind: row.get(2)?,
        level: row.get(3)?,
        text: row.get(4)?,
        token_count: row.get(5)?,
        span_start_seq: row.get(6)?,
        span_end_seq: row.get(7)?,
        message_count: row.get(8)?,
        depth: row.get(9)?,
        file_ids: split_ids(file_ids.as_deref()),
        created_at: row.get(11)?,
        superseded_by: row.get(12)?,
    })
}

/// Marks a sequence number that is not a member of a [`Members`] set.
const NOT_MEMBER: u32 = u32::MAX;

/// View messages a caller named: their sequence range and, for every sequence
/// number in it, whether it is one of them (and which, and said by whom). Looking
/// a part's message up is then an array index, not a string comparison.
pub(super) struct Members {
    pub(super) low: i64,
    pub(super) high: i64,
    /// Index into the caller's list for each seq in `low..=high`, or [`NOT_MEMBER`].
    slots: Vec<u32>,
    roles: Vec<Role>,
    count: usize,
}

impl Members {
    pub(super) fn new(items: &[ViewItem], found: &[usize]) -> Self {
        let low = found
            .iter()
            .map(|&index| items[index].seq)
            .min()
            .unwrap_or(0);
        let high = found
            .iter()
            .map(|&index| items[index].seq)
            .max()
            .unwrap_or(-1);
        let size = usize::try_from(high - low + 1).unwrap_or(0);
        let mut members = Members {
            low,
            high,
            slots: vec![NOT_MEMBER; size],
            roles: vec![Role::User; size],
            count: found.len(),
        };
        for (slot, &index) in found.iter().enumerate() {
            let offset = (items[index].seq - low) as usize;
            members.slots[offset] = slot as u32;
            members.roles[offset] = items[index].role.unwrap_or(Role::User);
        }
        members
    }

    /// The caller's index of the message with `seq`, if it is a member.
    pub(super) fn slot(&self, seq: i64) -> Option<usize> {
        if seq < self.low || seq > self.high {
            return None;
        }
        let slot = self.slots[(seq - self.low) as usize];
        (slot != NOT_MEMBER).then_some(slot as usize)
    }

    pub(super) fn role(&self, seq: i64) -> Role {
        self.roles[(seq - self.low) as usize]
    }

    /// How many messages are members.
    pub(super) fn len(&self) -> usize {
        self.count
    }

    /// How many members have a sequence number in `low..=high`.
    pub(super) fn count_within(&self, (low, high): (i64, i64)) -> usize {
        (low.max(self.low)..=high.min(self.high))
            .filter(|&seq| self.slot(seq).is_some())
            .count()
    }

    /// The sequence ranges of the oldest `older_count` members and of the rest.
    pub(super) fn split(&self, older_count: usize) -> [(i64, i64); 2] {
        let mut seen = 0;
        for (offset, &slot) in self.slots.iter().enumerate() {
            if slot != NOT_MEMBER {
                if seen == older_count {
                    let middle = self.low + offset as i64;
                    return [(self.low, middle - 1), (middle, self.high)];
                }
                seen += 1;
            }
        }
        [(self.low, self.high), (self.high + 1, self.high)]
    }
}

/// Indices in `items` of the items of `kind` named by `ids`, in the order of `ids`.
/// Fails if one is not in the view or is named twice.
pub(super) fn locate(
    items: &[ViewItem],
    kind: ItemKind,
    ids: &[String],
    field: &str,
    session_id: &str,
) -> Result<Vec<usize>> {
    if ids.is_empty() {
        return Err(Error::invalid(field, "must name at least one item"));
    }
    // The usual caller names a run of the view in view order: one pass, no hashing.
    let mut found = Vec::with_capacity(ids.len());
    for (index, item) in items.iter().enumerate() {
        if found.len() == ids.len() {
            break;
        }
        if item.kind == kind && item.id == ids[found.len()] {
            found.push(index);
        }
    }
    if found.len() == ids.len() {
        return Ok(found);
    }
    let index: HashMap<&str, usize> = items
        .iter()
        .enumerate()
        .filter(|(_, item)| item.kind == kind)
        .map(|(at, item)| (item.id.as_str(), at))
        .collect();
    let mut seen = HashSet::with_capacity(ids.len());
    found.clear();
    for id in ids {
        let &at = index.get(id.as_str()).ok_or_else(|| {
            Error::invalid(
                field,
                format!(
                    "{id} is not a {} in the context view of {session_id}",
                    kind.as_str()
                ),
            )
        })?;
        if !seen.insert(at) {
            return Err(Error::invalid(field, format!("{id} is named twice")));
        }
        found.push(at);
    }
    Ok(found)
}

/// One tool output the prune scan found outside the protected tail.
struct PruneCandidate {
    view_index: usize,
    ord: i64,
    part_id: String,
    name: String,
    output_tokens: i64,
    file_ids: Option<String>,
}

impl Store {
    /// Tombstones completed tool outputs outside the protected tail and outside a
    /// rolling window of the newest `protect_tokens` output tokens, in one
    /// transaction, unless fewer than `minimum_tokens` would be saved. Outputs of
    /// `protected_tools` and calls that are not completed are never touched.
    ///
    /// Only messages still in the view are scanned, so outputs that stayed in the
    /// view after an earlier summary remain prunable, and the cost follows the view,
    /// not the session's history.
    pub fn prune(
        &mut self,
        session_id: &str,
        protect_tokens: i64,
        minimum_tokens: i64,
        protected_tools: &[String],
        tail: Tail,
    ) -> Result<PruneResult> {
        let counter = self.counter(session_id)?;
        let (version, found) = self.prune_scan(session_id, protected_tools, tail)?;
        let beyond = outside_window(found, protect_tokens);
        let mut result = PruneResult {
            candidates: beyond.len() as i64,
            ..PruneResult::default()
        };
        // Every marker costs at least one token: if even that bound saves too little,
        // skip counting the markers.
        let upper_bound: i64 = beyond
            .iter()
            .map(|candidate| candidate.output_tokens - 1)
            .sum();
        if beyond.is_empty() || upper_bound < minimum_tokens.max(1) {
            return Ok(result);
        }
        let mut tombstones = Vec::with_capacity(beyond.len());
        let mut saved = 0;
        for candidate in beyond {
            let file_ids = split_ids(candidate.file_ids.as_deref());
            let marker = render::tombstone_marker(&candidate.name, &candidate.part_id, &file_ids);
            let marker_tokens = counter.count(&marker) as i64;
            if marker_tokens < candidate.output_tokens {
                saved += candidate.output_tokens - marker_tokens;
                tombstones.push((candidate, marker_tokens));
            }
        }
        result.candidates = tombstones.len() as i64;
        if tombstones.is_empty() || saved < minimum_tokens {
            return Ok(result);
        }
        result.pruned_parts = self.write_tombstones(session_id, version, &tombstones)?;
        result.tokens_saved = saved;
        Ok(result)
    }

    /// The completed, unprotected tool outputs of view messages before the protected
    /// tail, with the view version they were read at.
    fn prune_scan(
        &mut self,
        session_id: &str,
        protected_tools: &[String],
        tail: Tail,
    ) -> Result<(i64, Vec<PruneCandidate>)> {
        let (version, low, high, index_of) = {
            let view = self.fresh_view(session_id)?;
            let boundary = tail.start(&view.items);
            let open: Vec<usize> = (0..boundary)
                .filter(|&i| view.items[i].kind == ItemKind::Message)
                .collect();
            if open.is_empty() {
                return Ok((view.version, Vec::new()));
            }
            let members = Members::new(&view.items, &open);
            // Members' slots index `open`; map them to view indices.
            let index_of: Vec<u32> = members
                .slots
                .iter()
                .map(|&slot| {
                    if slot == NOT_MEMBER {
                        NOT_MEMBER
                    } else {
                        open[slot as usize] as u32
                    }
                })
                .collect();
            (view.version, members.low, members.high, index_of)
        };
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, msg_seq, ord, tool_name, output_tokens, file_ids FROM parts
             WHERE session_id = ?1 AND kind = 'tool' AND compacted_at IS NULL AND tool_status = 'completed'
               AND msg_seq BETWEEN ?2 AND ?3",
        )?;
        let mut rows = stmt.query(args![session_id, low, high])?;
        let mut found = Vec::new();
        while let Some(ref row) = rows.next()? {
            let seq: i64 = row.get(1)?;
            let view_index = index_of[(seq - low) as usize];
            let name = row.get::<&str>(3)?;
            if view_index == NOT_MEMBER || protected_tools.iter().any(|tool| tool == name) {
                continue;
            }
            found.push(PruneCandidate {
                view_index: view_index as usize,
                ord: row.get(2)?,
                part_id: row.get(0)?,
                name: name.to_string(),
                output_tokens: row.get(4)?,
                file_ids: row.get(5)?,
            });
        }
        Ok((version, found))
    }

    /// Writes the tombstones and shrinks their messages' view items, in one
    /// transaction, if the view is still at `version`. Returns the parts marked.
    fn write_tombstones(
        &mut self,
        session_id: &str,
        version: i64,
        tombstones: &[(PruneCandidate, i64)],
    ) -> Result<i64> {
        let changed =
            || Error::Conflict(format!("the view of {session_id} changed during the prune"));
        let mut deltas: HashMap<usize, i64> = HashMap::new();
        for (candidate, marker_tokens) in tombstones {
            *deltas.entry(candidate.view_index).or_default() +=
                marker_tokens - candidate.output_tokens;
        }
        // Where the touched messages sit in the view, looked up while it is current.
        let positions: Vec<(i64, i64)> = {
            let view = self.fresh_view(session_id)?;
            if view.version != version {
                return Err(changed());
            }
            deltas
                .iter()
                .map(|(&index, &delta)| (view.items[index].position, delta))
                .collect()
        };
        transact(&self.conn, &self.writer, Some(session_id), |tx| {
            let now: i64 = tx.query_row(
                "SELECT view_version FROM sessions WHERE id = ?1",
                args![session_id],
                |row| row.get(0),
            )?;
            if now != version {
                return Err(changed());
            }
            {
                let mut mark = tx.prepare_cached(
                    "UPDATE parts SET compacted_at = ?2, compacted_tokens = ?3 WHERE id = ?1 AND compacted_at IS NULL",
                )?;
                let stamp = now_ms();
                for (candidate, marker_tokens) in tombstones {
                    if mark.execute(args![candidate.part_id, stamp, marker_tokens])? != 1 {
                        return Err(changed());
                    }
                }
                let mut shrink = tx.prepare_cached(
                    "UPDATE context_items SET token_count = token_count + ?3 WHERE session_id = ?1 AND position = ?2",
                )?;
                for (position, delta) in &positions {
                    if shrink.execute(args![session_id, position, delta])? != 1 {
                        return Err(changed());
                    }
                }
            }
            // A tombstoned output leaves the view: recall reads it from the index.
            super::search::move_backlog(tx)?;
            tx.execute(
                "UPDATE sessions SET view_version = view_version + 1 WHERE id = ?1",
                args![session_id],
            )?;
            Ok(())
        })?;
        self.views.forget(session_id);
        Ok(tombstones.len() as i64)
    }

    /// Sequence numbers of the session's messages that hold a tool call still
    /// pending or running.
    pub(super) fn unfinished_seqs(&self, session_id: &str) -> Result<HashSet<i64>> {
        let mut stmt = self.conn.prepare_cached(
            // No DISTINCT: it would make SQLite walk parts_by_seq over the whole
            // session instead of the tiny partial index (the set dedupes).
            "SELECT msg_seq FROM parts
             WHERE session_id = ?1 AND kind = 'tool' AND tool_status IN ('pending', 'running')",
        )?;
        let seqs = stmt.query_map(args![session_id], |row| row.get(0))?;
        Ok(seqs.into_iter().collect::<_>())
    }

    /// The messages the next summary should cover (see [`plan::span_indices`]):
    /// those before the protected tail, except the newest user message and messages
    /// holding a tool call that has not finished (its result, and the file ids in
    /// it, arrive later: a summary written now could not carry them).
    pub fn compaction_span(&mut self, session_id: &str, tail: Tail) -> Result<SpanInfo> {
        let unfinished = self.unfinished_seqs(session_id)?;
        let view = self.fresh_view(session_id)?;
        let chosen = plan::span_indices(&view.items, tail, |item| unfinished.contains(&item.seq));
        let mut span = SpanInfo {
            session_id: session_id.to_string(),
            view_version: view.version,
            view_tokens: view.tokens,
            summary_tokens: view.summary_tokens,
            ..SpanInfo::default()
        };
        span.summary_ids.extend(
            view.items
                .iter()
                .filter(|item| item.kind == ItemKind::Summary)
                .map(|item| item.id.clone()),
        );
        for index in chosen {
            let item = &view.items[index];
            if span.message_ids.is_empty() {
                span.first_seq = item.seq;
            }
            span.last_seq = item.seq;
            span.tokens += item.tokens;
            span.message_ids.push(item.id.clone());
            span.message_tokens.push(item.tokens);
            span.message_seqs.push(item.seq);
        }
        Ok(span)
    }

    /// The session of the view messages named by `message_ids` (at least one), and
    /// the messages, checked to be in its view once each.
    pub(super) fn named_messages(&mut self, message_ids: &[String]) -> Result<(String, Members)> {
        let Some(first) = message_ids.first() else {
            return Err(Error::invalid(
                "message_ids",
                "must name at least one message",
            ));
        };
        let session_id = self.session_of_message(first)?;
        let view = self.fresh_view(&session_id)?;
        let found = locate(
            &view.items,
            ItemKind::Message,
            message_ids,
            "message_ids",
            &session_id,
        )?;
        let members = Members::new(&view.items, &found);
        Ok((session_id, members))
    }

    /// Calls `each` with the given columns of every part of the session with
    /// `msg_seq` in `low..=high` (and matching `filter`), in message and part order:
    /// one statement for the whole range.
    fn scan_parts(
        &self,
        session_id: &str,
        (low, high): (i64, i64),
        columns: &str,
        filter: &str,
        mut each: impl FnMut(&Row<'_>) -> Result<()>,
    ) -> Result<()> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {columns} FROM parts WHERE session_id = ?1 AND msg_seq BETWEEN ?2 AND ?3{filter} ORDER BY msg_seq, ord"
        ))?;
        let mut rows = stmt.query(args![session_id, low, high])?;
        while let Some(ref row) = rows.next()? {
            each(row)?;
        }
        Ok(())
    }

    /// File ids of every part of the member messages, from the ids stored at write
    /// time, in message and part order.
    pub(super) fn members_file_ids(
        &self,
        session_id: &str,
        members: &Members,
    ) -> Result<Vec<String>> {
        let mut ids = IdList::default();
        self.scan_parts(
            session_id,
            (members.low, members.high),
            "msg_seq, file_ids",
            " AND file_ids IS NOT NULL",
            |row| {
                if members.slot(row.get(0)?).is_some() {
                    ids.extend(split_ids(row.get::<Option<&str>>(1)?));
                }
                Ok(())
            },
        )?;
        Ok(ids.ids)
    }

    /// Calls `each(seq, parts, file_ids)` for every member message, oldest or newest
    /// first, with its parts in order, until `each` returns `false`. Reads parts only
    /// as far as the walk goes.
    fn walk_messages(
        &self,
        session_id: &str,
        members: &Members,
        newest_first: bool,
        mut each: impl FnMut(i64, &[StoredPart], Vec<String>) -> Result<bool>,
    ) -> Result<()> {
        let sql = if newest_first {
            "SELECT p.id, p.kind, p.body, p.tool_name, p.call_id, p.tool_status, o.output, p.tool_error,
                    p.compacted_at, p.file_ids, p.msg_seq
             FROM parts p LEFT JOIN tool_outputs o ON o.part_pk = p.pk
             WHERE p.session_id = ?1 AND p.msg_seq BETWEEN ?2 AND ?3 ORDER BY p.msg_seq DESC, p.ord DESC"
        } else {
            "SELECT p.id, p.kind, p.body, p.tool_name, p.call_id, p.tool_status, o.output, p.tool_error,
                    p.compacted_at, p.file_ids, p.msg_seq
             FROM parts p LEFT JOIN tool_outputs o ON o.part_pk = p.pk
             WHERE p.session_id = ?1 AND p.msg_seq BETWEEN ?2 AND ?3 ORDER BY p.msg_seq, p.ord"
        };
        let mut stmt = self.conn.prepare_cached(sql)?;
        let mut rows = stmt.query(args![session_id, members.low, members.high])?;
        let mut current: Option<i64> = None;
        let mut parts: Vec<StoredPart> = Vec::new();
        let mut file_ids: Vec<String> = Vec::new();
        let mut flush =
            |seq: i64, parts: &mut Vec<StoredPart>, file_ids: &mut Vec<String>| -> Result<bool> {
                if newest_first {
                    parts.reverse();
                }
                let keep_going = each(seq, parts, std::mem::take(file_ids))?;
                parts.clear();
                Ok(keep_going)
            };
        while let Some(ref row) = rows.next()? {
            let seq: i64 = row.get(10)?;
            if members.slot(seq).is_none() {
                continue;
            }
            if current != Some(seq) {
                if let Some(done) = current {
                    if !flush(done, &mut parts, &mut file_ids)? {
                        return Ok(());
                    }
                }
                current = Some(seq);
            }
            parts.push(row_to_part(row)??);
            file_ids.extend(split_ids(row.get::<Option<&str>>(9)?));
        }
        if let Some(done) = current {
            flush(done, &mut parts, &mut file_ids)?;
        }
        Ok(())
    }

    fn session_of_message(&self, message_id: &str) -> Result<String> {
        self.conn
            .prepare_cached("SELECT session_id FROM messages WHERE id = ?1")?
            .query_opt(args![message_id], |row| row.get(0))?
            .ok_or_else(|| Error::NotFound {
                kind: "message",
                id: message_id.to_string(),
            })
    }

    /// A transcript of view messages, oldest first, for an LLM summariser. With
    /// `max_tokens`, messages are taken from the oldest until the next would not
    /// fit (at least three, when there are three).
    pub fn transcript(
        &mut self,
        message_ids: &[String],
        max_chars_per_message: Option<usize>,
        max_tokens: Option<i64>,
    ) -> Result<TextResult> {
        let (session_id, members) = self.named_messages(message_ids)?;
        let counter = self.counter(&session_id)?;
        let at_least = 3.min(message_ids.len());
        let mut result = TextResult::default();
        let mut file_ids = IdList::default();
        self.walk_messages(&session_id, &members, false, |seq, parts, ids| {
            let entry = transcript_entry(
                seq,
                members.role(seq).as_str(),
                parts,
                max_chars_per_message,
            );
            let tokens = counter.count(&entry) as i64 + 1;
            if let Some(limit) = max_tokens {
                if result.message_ids.len() >= at_least && result.token_count + tokens > limit {
                    return Ok(false);
                }
            }
            if !result.text.is_empty() {
                result.text.push('\n');
            }
            result.text.push_str(&entry);
            result.token_count += tokens;
            result
                .message_ids
                .push(message_ids[members.slot(seq).expect("walked members only")].clone());
            file_ids.extend(ids);
            Ok(true)
        })?;
        result.file_ids = file_ids.ids;
        Ok(result)
    }

    /// Level-3 summary: a truncation notice, then the newest messages that fit
    /// `target_tokens`, then a footer with the file ids of every input message (kept
    /// even when that footer alone exceeds the target).
    pub fn truncate_summary(
        &mut self,
        message_ids: &[String],
        target_tokens: i64,
    ) -> Result<TextResult> {
        let (session_id, members) = self.named_messages(message_ids)?;
        let file_ids = self.members_file_ids(&session_id, &members)?;
        let counter = self.counter(&session_id)?;
        let total = message_ids.len();
        // Short, since in a small window it is most of the summary: the header the
        // summary renders with already says it can be expanded.
        let notice_for = |cut: usize| {
            format!(
                "[deterministic truncation: the {cut} oldest of {total} messages were cut; all stay stored]"
            )
        };
        let footer = merge_file_id_footer("", &file_ids);
        let reserve = counter.count(&notice_for(total)) as i64 + counter.count(&footer) as i64 + 2;
        // Newest first, until the next would not fit.
        let mut kept: Vec<String> = Vec::new();
        let mut used = reserve;
        self.walk_messages(&session_id, &members, true, |seq, parts, _| {
            let entry = transcript_entry(
                seq,
                members.role(seq).as_str(),
                parts,
                Some(TRUNCATION_ENTRY_CHARS),
            );
            let tokens = counter.count(&entry) as i64 + 1;
            if used + tokens > target_tokens {
                return Ok(false);
            }
            used += tokens;
            kept.push(entry);
            Ok(true)
        })?;
        loop {
            let mut body = notice_for(total - kept.len());
            for entry in kept.iter().rev() {
                body.push('\n');
                body.push_str(entry);
            }
            let text = merge_file_id_footer(&body, &file_ids);
            let token_count = counter.count(&text) as i64;
            // Counts of joined pieces can differ from their sum by a token or two:
            // drop the oldest kept message until the whole fits.
            if token_count <= target_tokens || kept.is_empty() {
                return Ok(TextResult {
                    token_count,
                    text,
                    message_ids: message_ids.to_vec(),
                    file_ids,
                });
            }
            kept.pop();
        }
    }

    /// The summaries currently in a session's view, in view order.
    pub fn live_summaries(&mut self, session_id: &str) -> Result<Vec<SummaryRow>> {
        let ids: Vec<String> = self
            .fresh_view(session_id)?
            .items
            .iter()
            .filter(|item| item.kind == ItemKind::Summary)
            .map(|item| item.id.clone())
            .collect();
        ids.iter().map(|id| self.summary(id)).collect()
    }

    /// One summary by id.
    pub fn summary(&self, summary_id: &str) -> Result<SummaryRow> {
        self.conn
            .prepare_cached(&format!(
                "SELECT {SUMMARY_COLUMNS} FROM summaries WHERE id = ?1"
            ))?
            .query_opt(args![summary_id], row_to_summary)?
            .ok_or_else(|| Error::NotFound {
                kind: "summary",
                id: summary_id.to_string(),
            })
    }

    /// Level-3 condensation: the summaries' texts (without their footers) joined
    /// and cut so the result holds at most `max_tokens`, with a footer that keeps
    /// every file id of every one of them (kept even when it alone is larger).
    pub fn condense_truncate(
        &mut self,
        summary_ids: &[String],
        max_tokens: i64,
    ) -> Result<TextResult> {
        let Some(first) = summary_ids.first() else {
            return Err(Error::invalid(
                "summary_ids",
                "must name at least one summary",
            ));
        };
        let session_id = self.summary(first)?.session_id;
        let counter = self.counter(&session_id)?;
        let mut file_ids = IdList::default();
        let mut joined = String::new();
        let separator = format!("\n\n{FOOTER_PREFIX}");
        for id in summary_ids {
            let row = self.summary(id)?;
            if row.session_id != session_id {
                return Err(Error::invalid(
                    "summary_ids",
                    format!("{id} belongs to another session"),
                ));
            }
            file_ids.extend(row.file_ids);
            let body = match row.text.rfind(&separator) {
                Some(at) => &row.text[..at],
                None => row.text.as_str(),
            };
            if !joined.is_empty() {
                joined.push_str("\n\n");
            }
            joined.push_str(body);
        }
        let file_ids = file_ids.ids;
        let footer_tokens = counter.count(&merge_file_id_footer("", &file_ids)) as i64;
        let mut room = (max_tokens - footer_tokens - 2).max(0) as usize;
        loop {
            let mut body = cut_to_tokens(&joined, room, &|text| counter.count(text));
            if body.len() < joined.len() {
                // Never end on a fragment of a word: a cut file id would read as another id.
                let end = body.rfind(char::is_whitespace).unwrap_or(0);
                body.truncate(end);
                body.push_str(" [...]");
            }
            let text = merge_file_id_footer(&body, &file_ids);
            let token_count = counter.count(&text) as i64;
            if token_count <= max_tokens || room == 0 {
                return Ok(TextResult {
                    token_count,
                    text,
                    message_ids: Vec::new(),
                    file_ids,
                });
            }
            room = room.saturating_sub((token_count - max_tokens) as usize + 1);
        }
    }

    /// Every file id that ever entered the session: in parts or summaries.
    pub fn session_file_ids(&mut self, session_id: &str) -> Result<Vec<String>> {
        self.session(session_id)?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT file_ids FROM parts WHERE session_id = ?1 AND file_ids IS NOT NULL
             UNION ALL SELECT file_ids FROM summaries WHERE session_id = ?1 AND file_ids IS NOT NULL",
        )?;
        let mut rows = stmt.query(args![session_id])?;
        let mut ids = IdList::default();
        while let Some(ref row) = rows.next()? {
            ids.extend(split_ids(row.get::<Option<&str>>(0)?));
        }
        Ok(ids.ids)
    }
}

/// The prune candidates outside the rolling window: newest first, outputs are kept
/// while their running total stays within `protect_tokens`; the one that crosses it
/// and every older one are returned.
fn outside_window(mut found: Vec<PruneCandidate>, protect_tokens: i64) -> Vec<PruneCandidate> {
    found.sort_unstable_by(|a, b| b.view_index.cmp(&a.view_index).then(b.ord.cmp(&a.ord)));
    let mut window = 0;
    found
        .into_iter()
        .filter(|candidate| {
            window += candidate.output_tokens;
            window > protect_tokens
        })
        .collect()
}

/// The longest prefix of `text` (on a character boundary) within `limit` tokens.
fn cut_to_tokens(text: &str, limit: usize, count: &dyn Fn(&str) -> usize) -> String {
    if count(text) <= limit {
        return text.to_string();
    }
    // Binary search over character offsets: O(log n) counts instead of one per line.
    let bounds: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain([text.len()])
        .collect();
    let (mut low, mut high) = (0, bounds.len() - 1);
    while low < high {
        let mid = (low + high).div_ceil(2);
        if count(&text[..bounds[mid]]) <= limit {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    text[..bounds[low]].to_string()
}
