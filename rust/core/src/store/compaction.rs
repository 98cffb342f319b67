//! The store side of compaction: pruning tool outputs, choosing the span to
//! summarise, deterministic summaries, and the atomic commit of a summary.

use std::collections::{HashMap, HashSet};

use rusqlite::{params, OptionalExtension, TransactionBehavior};

use super::messages::{join_ids, split_ids};
use super::view::ItemKind;
use super::Store;
use crate::error::{Error, Result};
use crate::extractive::{extractive_summary, SourceFileRef, SourceMessage, SourceTool};
use crate::fileids::{extract_file_ids, merge_file_id_footer, FOOTER_PREFIX};
use crate::ids::{new_id, now_ms};
use crate::parts::{check_content, Role};
use crate::render::{self, transcript_entry};

/// Characters of one message a deterministic truncation keeps at most, so a single
/// huge tool output cannot crowd out every other recent message.
const TRUNCATION_ENTRY_CHARS: usize = 4000;

/// What a prune pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PruneResult {
    pub candidates: i64,
    pub pruned_parts: i64,
    pub tokens_saved: i64,
}

/// The oldest unprotected run of messages in a view: what the next summary covers.
#[derive(Clone, Debug, Default)]
pub struct SpanInfo {
    pub message_ids: Vec<String>,
    pub tokens: i64,
    pub first_seq: i64,
    pub last_seq: i64,
    pub view_version: i64,
    pub view_tokens: i64,
    pub summary_ids: Vec<String>,
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

/// What a summary commit changed.
#[derive(Clone, Debug)]
pub struct CommitResult {
    pub summary_id: String,
    pub token_count: i64,
    pub tokens_before: i64,
    pub tokens_after: i64,
    pub messages_covered: i64,
    pub file_ids: Vec<String>,
}

const SUMMARY_COLUMNS: &str = "id, session_id, kind, level, text, token_count, span_start_seq, span_end_seq,
     message_count, depth, file_ids, created_at, superseded_by";

fn row_to_summary(row: &rusqlite::Row<'_>) -> rusqlite::Result<SummaryRow> {
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

impl Store {
    /// Index of the first protected view item: the `protect_user_turns`-th user
    /// message from the end. Everything from there on is never pruned or summarised.
    fn protected_from(&mut self, session_id: &str, protect_user_turns: usize) -> Result<usize> {
        let view = self.fresh_view(session_id)?;
        if protect_user_turns == 0 {
            return Ok(view.items.len());
        }
        let mut seen = 0;
        for (index, item) in view.items.iter().enumerate().rev() {
            if item.role == Some(Role::User) {
                seen += 1;
                if seen == protect_user_turns {
                    return Ok(index);
                }
            }
        }
        Ok(0)
    }

    /// Tombstones completed tool outputs outside the protected tail and outside a
    /// rolling window of the newest `protect_tokens` output tokens, in one
    /// transaction, unless fewer than `minimum_tokens` would be saved.
    pub fn prune(
        &mut self,
        session_id: &str,
        protect_tokens: i64,
        minimum_tokens: i64,
        protected_tools: &[String],
        protect_user_turns: usize,
    ) -> Result<PruneResult> {
        let boundary = self.protected_from(session_id, protect_user_turns)?;
        let counter = self.counter(session_id)?;
        let view = self.fresh_view(session_id)?;
        let version = view.version;
        let order: HashMap<String, usize> = view.items[..boundary]
            .iter()
            .enumerate()
            .filter(|(_, item)| item.kind == ItemKind::Message)
            .map(|(index, item)| (item.id.clone(), index))
            .collect();
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, message_id, tool_name, output_tokens, file_ids FROM parts
             WHERE session_id = ?1 AND kind = 'tool' AND compacted_at IS NULL AND tool_status = 'completed'",
        )?;
        let mut found = Vec::new();
        let mut rows = stmt.query([session_id])?;
        while let Some(row) = rows.next()? {
            let message_id: String = row.get(1)?;
            let Some(&index) = order.get(&message_id) else { continue };
            let name: String = row.get(2)?;
            if protected_tools.contains(&name) {
                continue;
            }
            let file_ids: Option<String> = row.get(4)?;
            found.push((index, row.get::<_, String>(0)?, message_id, name, row.get::<_, i64>(3)?, file_ids));
        }
        drop(rows);
        drop(stmt);
        found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.cmp(&a.1)));
        let mut window = 0;
        let mut tombstones = Vec::new();
        let mut saved = 0;
        for (_, part_id, message_id, name, output_tokens, file_ids) in found {
            window += output_tokens;
            if window <= protect_tokens {
                continue;
            }
            let marker = render::tombstone_marker(&name, &part_id, &split_ids(file_ids.as_deref()));
            let marker_tokens = counter.count(&marker) as i64;
            if marker_tokens >= output_tokens {
                continue;
            }
            saved += output_tokens - marker_tokens;
            tombstones.push((part_id, message_id, marker_tokens, output_tokens));
        }
        let mut result = PruneResult {
            candidates: tombstones.len() as i64,
            ..PruneResult::default()
        };
        if tombstones.is_empty() || saved < minimum_tokens {
            return Ok(result);
        }
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let now: i64 = tx.query_row("SELECT view_version FROM sessions WHERE id = ?1", [session_id], |row| row.get(0))?;
        if now != version {
            return Err(Error::Conflict(format!("the view of {session_id} changed during the prune scan")));
        }
        let mut deltas: HashMap<String, i64> = HashMap::new();
        {
            let mut mark = tx.prepare_cached(
                "UPDATE parts SET compacted_at = ?2, compacted_tokens = ?3 WHERE id = ?1 AND compacted_at IS NULL",
            )?;
            let stamp = now_ms();
            for (part_id, message_id, marker_tokens, output_tokens) in &tombstones {
                if mark.execute(params![part_id, stamp, marker_tokens])? == 1 {
                    *deltas.entry(message_id.clone()).or_default() += marker_tokens - output_tokens;
                    result.pruned_parts += 1;
                    result.tokens_saved += output_tokens - marker_tokens;
                }
            }
            let mut shrink = tx.prepare_cached(
                "UPDATE context_items SET token_count = token_count + ?3 WHERE session_id = ?1 AND item_id = ?2",
            )?;
            for (message_id, delta) in &deltas {
                shrink.execute(params![session_id, message_id, delta])?;
            }
        }
        tx.execute("UPDATE sessions SET view_version = view_version + 1 WHERE id = ?1", [session_id])?;
        tx.commit()?;
        self.views.forget(session_id);
        Ok(result)
    }

    /// The messages the next summary should cover: every message item of the
    /// view before the protected tail.
    pub fn compaction_span(&mut self, session_id: &str, protect_user_turns: usize) -> Result<SpanInfo> {
        let boundary = self.protected_from(session_id, protect_user_turns)?;
        let view = self.fresh_view(session_id)?;
        let mut span = SpanInfo {
            view_version: view.version,
            view_tokens: view.tokens,
            ..SpanInfo::default()
        };
        for (index, item) in view.items.iter().enumerate() {
            match item.kind {
                ItemKind::Summary => span.summary_ids.push(item.id.clone()),
                ItemKind::Message if index < boundary => {
                    if span.message_ids.is_empty() {
                        span.first_seq = item.seq;
                    }
                    span.last_seq = item.seq;
                    span.tokens += item.tokens;
                    span.message_ids.push(item.id.clone());
                }
                ItemKind::Message => {}
            }
        }
        Ok(span)
    }

    /// Session, seq range and membership of view messages, checking each is in the view.
    fn span_of(&mut self, session_id: &str, message_ids: &[String]) -> Result<(i64, i64, HashSet<String>)> {
        if message_ids.is_empty() {
            return Err(Error::invalid("message_ids", "must name at least one message"));
        }
        let view = self.fresh_view(session_id)?;
        let seqs: HashMap<&str, i64> = view
            .items
            .iter()
            .filter(|item| item.kind == ItemKind::Message)
            .map(|item| (item.id.as_str(), item.seq))
            .collect();
        let (mut low, mut high) = (i64::MAX, i64::MIN);
        for id in message_ids {
            let seq = *seqs.get(id.as_str()).ok_or_else(|| {
                Error::invalid("message_ids", format!("{id} is not a message in the context view of {session_id}"))
            })?;
            low = low.min(seq);
            high = high.max(seq);
        }
        Ok((low, high, message_ids.iter().cloned().collect()))
    }

    /// File ids of every part of the given view messages, from the ids stored at write time.
    fn span_file_ids(&mut self, session_id: &str, message_ids: &[String]) -> Result<Vec<String>> {
        let (low, high, members) = self.span_of(session_id, message_ids)?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT message_id, file_ids FROM parts WHERE session_id = ?1 AND msg_seq BETWEEN ?2 AND ?3
             AND file_ids IS NOT NULL ORDER BY msg_seq, ord",
        )?;
        let mut rows = stmt.query(params![session_id, low, high])?;
        let mut seen = HashSet::new();
        let mut ids = Vec::new();
        while let Some(row) = rows.next()? {
            if !members.contains(row.get_ref(0)?.as_str()?) {
                continue;
            }
            for id in split_ids(row.get_ref(1)?.as_str_or_null()?) {
                if seen.insert(id.clone()) {
                    ids.push(id);
                }
            }
        }
        Ok(ids)
    }

    fn session_of_message(&self, message_id: &str) -> Result<String> {
        self.conn
            .prepare_cached("SELECT session_id FROM messages WHERE id = ?1")?
            .query_row([message_id], |row| row.get(0))
            .optional()?
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
        let Some(first) = message_ids.first() else {
            return Err(Error::invalid("message_ids", "must name at least one message"));
        };
        let session_id = self.session_of_message(first)?;
        self.span_of(&session_id, message_ids)?;
        let counter = self.counter(&session_id)?;
        let mut result = TextResult::default();
        for id in message_ids {
            let record = self.get_message(id)?;
            let entry = transcript_entry(record.seq, &record.role, &record.parts, max_chars_per_message);
            let tokens = counter.count(&entry) as i64 + 1;
            if let Some(limit) = max_tokens {
                if result.message_ids.len() >= 3.min(message_ids.len()) && result.token_count + tokens > limit {
                    break;
                }
            }
            if !result.text.is_empty() {
                result.text.push('\n');
            }
            result.text.push_str(&entry);
            result.token_count += tokens;
            result.message_ids.push(id.clone());
        }
        result.file_ids = self.span_file_ids(&session_id, &result.message_ids)?;
        Ok(result)
    }

    /// Level-3 summary: a truncation notice, then the newest messages that fit
    /// `target_tokens`, then a footer with the file ids of every input message.
    pub fn truncate_summary(&mut self, message_ids: &[String], target_tokens: i64) -> Result<TextResult> {
        let Some(first) = message_ids.first() else {
            return Err(Error::invalid("message_ids", "must name at least one message"));
        };
        let session_id = self.session_of_message(first)?;
        let file_ids = self.span_file_ids(&session_id, message_ids)?;
        let counter = self.counter(&session_id)?;
        let footer = merge_file_id_footer("", &file_ids);
        let notice_for = |cut: usize| {
            format!(
                "[deterministic truncation: the {cut} oldest of {} messages were cut from this summary; \
                 every original stays stored: grep or expand this summary to read them]",
                message_ids.len()
            )
        };
        let reserve = counter.count(&notice_for(message_ids.len())) as i64 + counter.count(&footer) as i64 + 2;
        let mut kept: Vec<String> = Vec::new();
        let mut used = reserve;
        for id in message_ids.iter().rev() {
            let record = self.get_message(id)?;
            let entry = transcript_entry(record.seq, &record.role, &record.parts, Some(TRUNCATION_ENTRY_CHARS));
            let tokens = counter.count(&entry) as i64 + 1;
            if used + tokens > target_tokens {
                break;
            }
            used += tokens;
            kept.push(entry);
        }
        kept.reverse();
        let cut = message_ids.len() - kept.len();
        let mut body = notice_for(cut);
        for entry in &kept {
            body.push('\n');
            body.push_str(entry);
        }
        let text = merge_file_id_footer(&body, &file_ids);
        Ok(TextResult {
            token_count: counter.count(&text) as i64,
            text,
            message_ids: message_ids.to_vec(),
            file_ids,
        })
    }

    /// The built-in extractive summary (no model) of view messages, within `max_tokens`.
    pub fn extractive_summary(&mut self, message_ids: &[String], max_tokens: i64) -> Result<TextResult> {
        let Some(first) = message_ids.first() else {
            return Err(Error::invalid("message_ids", "must name at least one message"));
        };
        let session_id = self.session_of_message(first)?;
        let (low, high, members) = self.span_of(&session_id, message_ids)?;
        let counter = self.counter(&session_id)?;
        let roles: HashMap<String, (String, i64)> = self.message_roles(&session_id, low, high)?;
        let rows = self.extractive_rows(&session_id, low, high, &members)?;
        let mut messages: Vec<SourceMessage<'_>> = Vec::new();
        for row in &rows {
            if messages.last().is_none_or(|m: &SourceMessage<'_>| m.seq != row.seq) {
                let role = roles.get(&row.message_id).map_or("user", |(role, _)| role.as_str());
                messages.push(SourceMessage {
                    role,
                    seq: row.seq,
                    texts: Vec::new(),
                    tools: Vec::new(),
                    file_refs: Vec::new(),
                });
            }
            let message = messages.last_mut().expect("pushed above");
            match row.kind.as_str() {
                "text" => message.texts.push(&row.body),
                "tool" => message.tools.push(SourceTool {
                    name: &row.name,
                    input: &row.body,
                    status: &row.status,
                    output: None,
                    error: row.error.as_deref(),
                }),
                _ => message.file_refs.extend(row.file_ref.as_ref().map(|(id, path)| SourceFileRef {
                    file_id: id,
                    path,
                })),
            }
        }
        let limit = max_tokens.max(0) as usize;
        let body = extractive_summary(&messages, limit, &|text| counter.count(text));
        let file_ids = self.span_file_ids(&session_id, message_ids)?;
        let text = merge_file_id_footer(&body, &file_ids);
        Ok(TextResult {
            token_count: counter.count(&text) as i64,
            text,
            message_ids: message_ids.to_vec(),
            file_ids,
        })
    }

    fn message_roles(&self, session_id: &str, low: i64, high: i64) -> Result<HashMap<String, (String, i64)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id, role, seq FROM messages WHERE session_id = ?1 AND seq BETWEEN ?2 AND ?3")?;
        let rows = stmt.query_map(params![session_id, low, high], |row| {
            Ok((row.get::<_, String>(0)?, (row.get::<_, String>(1)?, row.get::<_, i64>(2)?)))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn extractive_rows(
        &self,
        session_id: &str,
        low: i64,
        high: i64,
        members: &HashSet<String>,
    ) -> Result<Vec<ExtractiveRow>> {
        // Tool outputs are left out on purpose: the extractive summary reads requests,
        // inputs and errors, and loading megabytes of output would dominate its cost.
        let mut stmt = self.conn.prepare_cached(
            "SELECT message_id, msg_seq, kind, substr(body, 1, 4096), tool_name, tool_status, tool_error
             FROM parts WHERE session_id = ?1 AND msg_seq BETWEEN ?2 AND ?3 ORDER BY msg_seq, ord",
        )?;
        let mut rows = stmt.query(params![session_id, low, high])?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            let message_id: String = row.get(0)?;
            if !members.contains(&message_id) {
                continue;
            }
            let kind: String = row.get(2)?;
            let body: String = row.get(3)?;
            let file_ref = (kind == "file_ref")
                .then(|| serde_json::from_str::<serde_json::Value>(&body).ok())
                .flatten()
                .map(|value| {
                    let text = |key: &str| value[key].as_str().unwrap_or_default().to_string();
                    (text("file_id"), text("path"))
                });
            out.push(ExtractiveRow {
                message_id,
                seq: row.get(1)?,
                kind,
                body,
                name: row.get::<_, Option<String>>(4)?.unwrap_or_default(),
                status: row.get::<_, Option<String>>(5)?.unwrap_or_default(),
                error: row.get(6)?,
                file_ref,
            });
        }
        Ok(out)
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
            .prepare_cached(&format!("SELECT {SUMMARY_COLUMNS} FROM summaries WHERE id = ?1"))?
            .query_row([summary_id], row_to_summary)
            .optional()?
            .ok_or_else(|| Error::NotFound {
                kind: "summary",
                id: summary_id.to_string(),
            })
    }

    /// Level-3 condensation: the summaries' texts joined and cut to `max_tokens`,
    /// with a footer that keeps every file id of every one of them.
    pub fn condense_truncate(&mut self, summary_ids: &[String], max_tokens: i64) -> Result<TextResult> {
        let Some(first) = summary_ids.first() else {
            return Err(Error::invalid("summary_ids", "must name at least one summary"));
        };
        let session_id = self.summary(first)?.session_id;
        let counter = self.counter(&session_id)?;
        let mut file_ids: Vec<String> = Vec::new();
        let mut joined = String::new();
        for id in summary_ids {
            let row = self.summary(id)?;
            for file_id in row.file_ids {
                if !file_ids.contains(&file_id) {
                    file_ids.push(file_id);
                }
            }
            let body = row.text.split(&format!("\n\n{FOOTER_PREFIX}")).next().unwrap_or("");
            if !joined.is_empty() {
                joined.push_str("\n\n");
            }
            joined.push_str(body);
        }
        let footer_tokens = counter.count(&merge_file_id_footer("", &file_ids)) as i64;
        let room = (max_tokens - footer_tokens - 2).max(0) as usize;
        let body = cut_to_tokens(&joined, room, &|text| counter.count(text));
        let text = merge_file_id_footer(&body, &file_ids);
        Ok(TextResult {
            token_count: counter.count(&text) as i64,
            text,
            message_ids: Vec::new(),
            file_ids,
        })
    }

    /// Every file id that ever entered the session: in parts or summaries.
    pub fn session_file_ids(&mut self, session_id: &str) -> Result<Vec<String>> {
        self.session(session_id)?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT file_ids FROM parts WHERE session_id = ?1 AND file_ids IS NOT NULL
             UNION ALL SELECT file_ids FROM summaries WHERE session_id = ?1 AND file_ids IS NOT NULL",
        )?;
        let mut rows = stmt.query([session_id])?;
        let mut seen = HashSet::new();
        let mut ids = Vec::new();
        while let Some(row) = rows.next()? {
            for id in split_ids(row.get_ref(0)?.as_str_or_null()?) {
                if seen.insert(id.clone()) {
                    ids.push(id);
                }
            }
        }
        Ok(ids)
    }

    /// Takes the session's compaction lease for `holder` unless another holder has
    /// an unexpired one. Works across processes: the lease is a row in the database.
    pub fn acquire_compaction_lease(&mut self, session_id: &str, holder: &str, ttl_ms: i64) -> Result<bool> {
        self.session(session_id)?;
        let now = now_ms();
        let changed = self.conn.execute(
            "INSERT INTO compaction_leases (session_id, holder, expires_at) VALUES (?1, ?2, ?3)
             ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
             WHERE compaction_leases.expires_at < ?4 OR compaction_leases.holder = excluded.holder",
            params![session_id, holder, now + ttl_ms, now],
        )?;
        Ok(changed == 1)
    }

    /// Gives the lease back, if `holder` has it.
    pub fn release_compaction_lease(&mut self, session_id: &str, holder: &str) -> Result<()> {
        self.conn.execute(
            "DELETE FROM compaction_leases WHERE session_id = ?1 AND holder = ?2",
            params![session_id, holder],
        )?;
        Ok(())
    }

    /// Commits a summary in one transaction: the summary row with a file-id footer
    /// covering all its sources, its DAG edges, superseded marks on condensed
    /// parents, and the swap of its sources for it in the context view. Fails with
    /// a conflict, changing nothing, if a source left the view meanwhile, or, when
    /// `expected_version` is given, if the view changed at all.
    pub fn commit_summary(
        &mut self,
        session_id: &str,
        text: &str,
        level: i64,
        source_message_ids: &[String],
        source_summary_ids: &[String],
        expected_version: Option<i64>,
    ) -> Result<CommitResult> {
        check_content("text", text)?;
        if !(1..=3).contains(&level) {
            return Err(Error::invalid("level", format!("expected 1, 2 or 3, got {level}")));
        }
        let condensed = match (source_message_ids.is_empty(), source_summary_ids.is_empty()) {
            (false, true) => false,
            (true, false) => true,
            _ => {
                return Err(Error::invalid(
                    "sources",
                    "a summary covers either messages (leaf) or summaries (condensed), and at least one",
                ))
            }
        };
        let counter = self.counter(session_id)?;
        let plan = self.plan_commit(session_id, source_message_ids, source_summary_ids)?;
        let mut file_ids = if condensed {
            Vec::new()
        } else {
            self.span_file_ids(session_id, source_message_ids)?
        };
        for parent in &plan.parents {
            for id in &parent.file_ids {
                if !file_ids.contains(id) {
                    file_ids.push(id.clone());
                }
            }
        }
        let text = merge_file_id_footer(text, &file_ids);
        let file_ids = extract_file_ids(&text);
        let id = new_id("sum");
        let tokens = render::summary_tokens(&counter, &id, plan.messages_covered, &text) as i64;
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let version: i64 = tx.query_row("SELECT view_version FROM sessions WHERE id = ?1", [session_id], |row| row.get(0))?;
        if expected_version.is_some_and(|expected| expected != version) {
            return Err(Error::Conflict(format!("the view of {session_id} changed (now version {version})")));
        }
        tx.prepare_cached(
            "INSERT INTO summaries (id, session_id, kind, level, text, token_count, span_start_seq, span_end_seq,
                                    message_count, depth, file_ids, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        )?
        .execute(params![
            id,
            session_id,
            if condensed { "condensed" } else { "leaf" },
            level,
            text,
            tokens,
            plan.span.0,
            plan.span.1,
            plan.messages_covered,
            plan.depth,
            join_ids(&file_ids),
            now_ms(),
        ])?;
        {
            let mut edge = tx.prepare_cached(
                "INSERT INTO summary_sources (summary_id, ord, source_kind, source_id) VALUES (?1, ?2, ?3, ?4)",
            )?;
            let kind = if condensed { "summary" } else { "message" };
            let sources = if condensed { source_summary_ids } else { source_message_ids };
            for (ord, source) in sources.iter().enumerate() {
                edge.execute(params![id, ord as i64, kind, source])?;
            }
            let mut supersede = tx.prepare_cached(
                "UPDATE summaries SET superseded_by = ?2 WHERE id = ?1 AND superseded_by IS NULL",
            )?;
            for parent in source_summary_ids {
                if supersede.execute(params![parent, id])? != 1 {
                    return Err(Error::Conflict(format!("summary {parent} was already condensed")));
                }
            }
            // Appends may land while a summary is being written; only the sources
            // themselves must still be in the view.
            let mut remove = tx.prepare_cached(
                "DELETE FROM context_items WHERE session_id = ?1 AND position = ?2 AND item_id = ?3",
            )?;
            for (position, item_id) in &plan.positions {
                if remove.execute(params![session_id, position, item_id])? != 1 {
                    return Err(Error::Conflict(format!("{item_id} left the view of {session_id}")));
                }
            }
        }
        tx.prepare_cached(
            "INSERT INTO context_items (session_id, position, kind, item_id, token_count) VALUES (?1, ?2, 'summary', ?3, ?4)",
        )?
        .execute(params![session_id, plan.positions[0].0, id, tokens])?;
        tx.prepare_cached("INSERT INTO fts (body, session_id, owner_id, part_id) VALUES (?1, ?2, ?3, '')")?
            .execute(params![text, session_id, id])?;
        tx.execute("UPDATE sessions SET view_version = view_version + 1 WHERE id = ?1", [session_id])?;
        tx.commit()?;
        self.views.forget(session_id);
        Ok(CommitResult {
            summary_id: id,
            token_count: tokens,
            tokens_before: plan.view_tokens,
            tokens_after: plan.view_tokens - plan.source_tokens + tokens,
            messages_covered: plan.messages_covered,
            file_ids,
        })
    }

    fn plan_commit(
        &mut self,
        session_id: &str,
        message_ids: &[String],
        summary_ids: &[String],
    ) -> Result<CommitPlan> {
        let parents: Vec<SummaryRow> = summary_ids.iter().map(|id| self.summary(id)).collect::<Result<_>>()?;
        let view = self.fresh_view(session_id)?;
        let wanted: HashSet<&str> = message_ids.iter().chain(summary_ids).map(String::as_str).collect();
        if wanted.len() != message_ids.len() + summary_ids.len() {
            return Err(Error::invalid("sources", "a source is named twice"));
        }
        let mut plan = CommitPlan {
            view_tokens: view.tokens,
            span: (i64::MAX, i64::MIN),
            ..CommitPlan::default()
        };
        for item in &view.items {
            if wanted.contains(item.id.as_str()) {
                plan.positions.push((item.position, item.id.clone()));
                plan.source_tokens += item.tokens;
                if item.kind == ItemKind::Message {
                    plan.span = (plan.span.0.min(item.seq), plan.span.1.max(item.seq));
                }
            }
        }
        if plan.positions.len() != wanted.len() {
            return Err(Error::invalid("sources", "every source must be an item of the session's context view"));
        }
        plan.messages_covered = message_ids.len() as i64;
        for parent in &parents {
            plan.messages_covered += parent.message_count;
            plan.span = (plan.span.0.min(parent.span_start_seq), plan.span.1.max(parent.span_end_seq));
            plan.depth = plan.depth.max(parent.depth + 1);
        }
        plan.parents = parents;
        Ok(plan)
    }
}

#[derive(Default)]
struct CommitPlan {
    positions: Vec<(i64, String)>,
    source_tokens: i64,
    view_tokens: i64,
    span: (i64, i64),
    messages_covered: i64,
    depth: i64,
    parents: Vec<SummaryRow>,
}

struct ExtractiveRow {
    message_id: String,
    seq: i64,
    kind: String,
    body: String,
    name: String,
    status: String,
    error: Option<String>,
    file_ref: Option<(String, String)>,
}

/// The longest prefix of `text` (on a line or character boundary) within `limit` tokens.
fn cut_to_tokens(text: &str, limit: usize, count: &dyn Fn(&str) -> usize) -> String {
    if count(text) <= limit {
        return text.to_string();
    }
    // Binary search over character offsets: O(log n) counts instead of one per line.
    let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).chain([text.len()]).collect();
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
