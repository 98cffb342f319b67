//! Choosing what a summary covers: the span of a round, messages a caller named,
//! and reading their parts with one statement per call (never one per message).
//! Membership is checked against the cached view by sequence number.

use std::collections::{HashMap, HashSet};

use crate::db::backend::{args, Row};

use crate::context::view::{ItemKind, ViewItem};
use crate::db::id_list::{split_ids, IdList};
use crate::error::{Error, Result};
use crate::history::load::row_to_part;
use crate::parts::Role;
use crate::plan::{self, Tail};
use crate::render::StoredPart;
use crate::store::Store;

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

/// Marks a sequence number that is not a member of a [`Members`] set.
pub(crate) const NOT_MEMBER: u32 = u32::MAX;

/// View messages a caller named: their sequence range and, for every sequence
/// number in it, whether it is one of them (and which, and said by whom). Looking
/// a part's message up is then an array index, not a string comparison.
pub(crate) struct Members {
    pub(crate) low: i64,
    pub(crate) high: i64,
    /// Index into the caller's list for each seq in `low..=high`, or [`NOT_MEMBER`].
    pub(crate) slots: Vec<u32>,
    roles: Vec<Role>,
    count: usize,
}

impl Members {
    pub(crate) fn new(items: &[ViewItem], found: &[usize]) -> Self {
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
    pub(crate) fn slot(&self, seq: i64) -> Option<usize> {
        if seq < self.low || seq > self.high {
            return None;
        }
        let slot = self.slots[(seq - self.low) as usize];
        (slot != NOT_MEMBER).then_some(slot as usize)
    }

    pub(crate) fn role(&self, seq: i64) -> Role {
        self.roles[(seq - self.low) as usize]
    }

    /// How many messages are members.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// How many members have a sequence number in `low..=high`.
    pub(crate) fn count_within(&self, (low, high): (i64, i64)) -> usize {
        (low.max(self.low)..=high.min(self.high))
            .filter(|&seq| self.slot(seq).is_some())
            .count()
    }

    /// The sequence ranges of the oldest `older_count` members and of the rest.
    pub(crate) fn split(&self, older_count: usize) -> [(i64, i64); 2] {
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
pub(crate) fn locate(
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

impl Store {
    /// Sequence numbers of the session's messages that hold a tool call still
    /// pending or running.
    pub(crate) fn unfinished_seqs(&self, session_id: &str) -> Result<HashSet<i64>> {
        let mut stmt = self.conn.prepare_cached(
            // No DISTINCT: it would make SQLite walk parts_by_seq over the whole
            // session instead of the tiny partial index (the set dedupes).
            "SELECT msg_seq FROM parts
             WHERE session_id = ?1 AND kind = 'tool' AND tool_status IN ('pending', 'running')",
        )?;
        let lineage = self.lineage(session_id)?;
        let mut seqs = HashSet::new();
        for segment in &lineage.segments {
            let found: Vec<i64> = stmt.query_map(args![segment.session_id], |row| row.get(0))?;
            seqs.extend(
                found
                    .into_iter()
                    .filter(|seq| (segment.first_seq..=segment.last_seq).contains(seq)),
            );
        }
        Ok(seqs)
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
    pub(crate) fn named_messages(&mut self, message_ids: &[String]) -> Result<(String, Members)> {
        let Some(first) = message_ids.first() else {
            return Err(Error::invalid(
                "message_ids",
                "must name at least one message",
            ));
        };
        let session_id = self.view_holding(first)?;
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
        for (holder, low, high) in self.lineage(session_id)?.clip(low, high) {
            let mut rows = stmt.query(args![holder, low, high])?;
            while let Some(ref row) = rows.next()? {
                each(row)?;
            }
        }
        Ok(())
    }

    /// File ids of every part of the member messages, from the ids stored at write
    /// time, in message and part order.
    pub(crate) fn members_file_ids(
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
    pub(crate) fn walk_messages(
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
        let lineage = self.lineage(session_id)?;
        let mut segments: Vec<_> = lineage.clip(members.low, members.high).collect();
        if newest_first {
            segments.reverse();
        }
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
        for (holder, low, high) in segments {
            let mut rows = stmt.query(args![holder, low, high])?;
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

    /// A session whose view holds `message_id`: the one that stored it, else one
    /// of its forks (theirs share it). Any that holds it reads the same messages.
    fn view_holding(&self, message_id: &str) -> Result<String> {
        let holder = self.session_of_message(message_id)?;
        let mut pending = vec![holder.clone()];
        while let Some(session_id) = pending.pop() {
            let held = self
                .conn
                .prepare_cached(
                    "SELECT 1 FROM context_items WHERE session_id = ?1 AND item_id = ?2 LIMIT 1",
                )?
                .query_opt(args![session_id, message_id], |_| Ok(()))?
                .is_some();
            if held {
                return Ok(session_id);
            }
            pending.extend(
                self.forks_of(&session_id)?
                    .into_iter()
                    .map(|f| f.session_id),
            );
        }
        // In no view: the locate step says so, naming the message.
        Ok(holder)
    }
}
