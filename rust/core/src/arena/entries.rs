//! The arena's rows: every entry ever written to a session's arena (append-only; the
//! newest row of a key in a zone is its live value, a removal row takes it out), and the
//! controller's state per session. Planning is in `crate::arena`.

use std::collections::HashMap;
use std::sync::Arc;

use crate::db::backend::{args, Conn};

use super::stored_turn::{PlanKey, PlannedTurn};
use crate::arena::{ceiling, cut_head_tail, CeilingPolicy, Entry, Priority, Zone};
use crate::db::gate::transact;
use crate::error::{Error, Result};
use crate::history::events::WriteEvent;
use crate::history::redaction::redact_text;
use crate::ids::now_ms;
use crate::store::Store;

/// Longest key of an entry, in bytes.
const MAX_KEY_BYTES: usize = 512;

/// One write to a session's arena: an entry, or the removal of a key.
#[derive(Clone, Debug)]
pub struct ArenaWrite {
    pub zone: Zone,
    pub key: String,
    pub source: String,
    pub priority: Priority,
    /// `None` removes the key.
    pub text: Option<String>,
    pub once: bool,
    pub external: bool,
    /// The zone's cap, or a smaller limit of this entry: longer text is cut to it.
    pub cap_tokens: i64,
    /// `cap_tokens` is the zone's cap (not a limit of the entry's own): a cut to it
    /// counts as the zone truncated, which the controller answers with more cap.
    pub zone_cap: bool,
}

/// What became of one write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteOutcome {
    pub key: String,
    /// The entry's sequence number when it was written (0 otherwise).
    pub seq: i64,
    /// Written (for a removal: the key was live).
    pub accepted: bool,
    pub tokens: i64,
    /// The text was cut to the zone's cap.
    pub cut_from: Option<i64>,
    /// Keys the ceiling took out to make room.
    pub evicted: Vec<String>,
    /// The ceiling's policy ran.
    pub enforced: bool,
    /// The policy asks for a compaction (`force_compact`).
    pub compact: bool,
}

/// How many live keys a session may hold, and what gives way at that number.
#[derive(Clone, Copy, Debug)]
pub struct Ceiling {
    pub max_entries: usize,
    pub policy: CeilingPolicy,
}

/// A session's live entries as last read, and the newest row they reflect.
#[derive(Debug, Default)]
pub(crate) struct ArenaCache {
    /// Per session, its newest arena row (removals included) and the live entries
    /// read at it: the rows change only by appending, so an equal newest row means
    /// equal entries.
    sessions: HashMap<String, (i64, Arc<Vec<Entry>>)>,
    /// Per session, the last plan made and what it was made from (see
    /// `stored_turn::PlanKey`).
    pub(crate) plans: HashMap<String, (PlanKey, Arc<PlannedTurn>)>,
}

impl ArenaCache {
    /// The newest arena row of `session_id` the kept entries were read at.
    pub(crate) fn newest_row(&self, session_id: &str) -> i64 {
        self.sessions.get(session_id).map_or(0, |(seq, _)| *seq)
    }

    /// Drops what is kept of `session_id`: its rows changed other than by an
    /// append (an erasure), which the newest row cannot tell.
    pub(crate) fn forget(&mut self, session_id: &str) {
        self.sessions.remove(session_id);
        self.plans.remove(session_id);
    }
}

const ENTRY_COLUMNS: &str = "seq, zone, key, source, priority, text, token_count, once, external,
                             COALESCE(full_tokens, token_count)";

impl Store {
    /// The live entries of a session's arena (the newest row of each key that was
    /// not removed), oldest first. Read once per store and kept; rows written by
    /// other connections are noticed by the session's newest sequence number.
    pub fn arena_entries(&mut self, session_id: &str) -> Result<Arc<Vec<Entry>>> {
        self.session(session_id)?;
        let newest = newest_seq(&self.conn, session_id)?;
        if let Some((seq, entries)) = self.arena.sessions.get(session_id) {
            if *seq == newest {
                return Ok(Arc::clone(entries));
            }
        }
        let entries = Arc::new(read_live(&self.conn, session_id)?);
        self.arena
            .sessions
            .insert(session_id.to_string(), (newest, Arc::clone(&entries)));
        Ok(entries)
    }

    /// The session's tool calls still waiting for their result, as (call id, tool
    /// name): what a process that opened the session learns of calls made before, so
    /// a later failure of one of them still reaches the arena's `tool_failures`.
    pub fn open_tool_calls(&self, session_id: &str) -> Result<Vec<(String, String)>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT call_id, tool_name FROM parts
             WHERE session_id = ?1 AND kind = 'tool' AND tool_status IN ('pending', 'running')",
        )?;
        let calls = stmt.query_map(args![session_id], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok(calls.into_iter().collect::<_>())
    }

    /// Applies `writes` in order, in one transaction with `event` (if any), under the
    /// ceiling. Bad input (an empty text or key, a key too long) fails before anything
    /// is written.
    pub fn arena_write(
        &mut self,
        session_id: &str,
        writes: &[ArenaWrite],
        ceiling: Ceiling,
        event: Option<&WriteEvent>,
    ) -> Result<Vec<WriteOutcome>> {
        for (at, write) in writes.iter().enumerate() {
            check_write(at, write)?;
        }
        let counter = self.counter(session_id)?;
        let count = |text: &str| counter.count(text);
        let cached: Vec<Entry> = self.arena_entries(session_id)?.as_ref().clone();
        // A tool's error or a recalled text can hold a secret too.
        let redactor = self.redactor_for(session_id)?;
        let mut redacted = Vec::new();
        let (seq, live, outcomes) = transact(&self.conn, &self.writer, Some(session_id), |tx| {
            let mut live = cached.clone();
            let mut seq = newest_seq(tx, session_id)?;
            // Another connection may have written since the cache was read.
            if seq != self.arena.sessions.get(session_id).map_or(-1, |(s, _)| *s) {
                live = read_live(tx, session_id)?;
            }
            let mut outcomes = Vec::with_capacity(writes.len());
            for write in writes {
                let outcome = match &write.text {
                    None => remove(tx, session_id, &mut seq, &mut live, write.zone, &write.key)?,
                    Some(text) => {
                        let text = redact_text(text, redactor.as_deref(), &mut redacted);
                        // Text from tools and retrieval is fenced as written, so its
                        // count is what the request will carry.
                        let text = if write.zone.is_untrusted() {
                            std::borrow::Cow::Owned(super::render::fenced(&text).into_owned())
                        } else {
                            text
                        };
                        // Surrounding whitespace is not content: it would cost tokens
                        // and make two writes of one text differ.
                        let (text, tokens, cut_from) =
                            fit_to_cap(text.trim(), write.cap_tokens, &count);
                        let decision = ceiling::decide(
                            &live,
                            &write.key,
                            write.zone,
                            write.priority,
                            ceiling.max_entries,
                            ceiling.policy,
                        );
                        for (zone, key) in &decision.evicted {
                            remove(tx, session_id, &mut seq, &mut live, *zone, key)?;
                        }
                        if decision.accepted {
                            seq += 1;
                            let entry = Entry {
                                seq,
                                zone: write.zone,
                                key: write.key.clone(),
                                source: write.source.clone(),
                                priority: write.priority,
                                text,
                                tokens,
                                full_tokens: match cut_from {
                                    Some(full) if write.zone_cap => full,
                                    _ => tokens,
                                },
                                once: write.once,
                                external: write.external,
                            };
                            insert(tx, session_id, &entry, false)?;
                            live.retain(|old| !(old.zone == entry.zone && old.key == entry.key));
                            live.push(entry);
                        }
                        WriteOutcome {
                            key: write.key.clone(),
                            seq: if decision.accepted { seq } else { 0 },
                            accepted: decision.accepted,
                            tokens,
                            cut_from,
                            evicted: decision.evicted.into_iter().map(|(_, key)| key).collect(),
                            enforced: decision.enforced,
                            compact: decision.compact,
                        }
                    }
                };
                outcomes.push(outcome);
            }
            if let Some(event) = event {
                event.insert(tx, session_id, &[])?;
            }
            Ok((seq, live, outcomes))
        })?;
        self.arena
            .sessions
            .insert(session_id.to_string(), (seq, Arc::new(live)));
        Ok(outcomes)
    }

    /// The controller's stored state of a session (JSON), if any.
    pub fn arena_state(&mut self, session_id: &str) -> Result<Option<String>> {
        self.session(session_id)?;
        self.conn
            .prepare_cached("SELECT state FROM arena_state WHERE session_id = ?1")?
            .query_opt(args![session_id], |row| row.get(0))
    }

    /// Stores the controller's state of a session, with `event` (if any), in one
    /// transaction.
    pub fn set_arena_state(
        &mut self,
        session_id: &str,
        state: &str,
        event: Option<&WriteEvent>,
    ) -> Result<()> {
        self.session(session_id)?;
        transact(&self.conn, &self.writer, Some(session_id), |tx| {
            tx.prepare_cached(
                "INSERT INTO arena_state (session_id, state, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (session_id) DO UPDATE SET state = excluded.state,
                                                       updated_at = excluded.updated_at",
            )?
            .execute(args![session_id, state, now_ms()])?;
            if let Some(event) = event {
                event.insert(tx, session_id, &[])?;
            }
            Ok(())
        })
    }
}

fn check_write(at: usize, write: &ArenaWrite) -> Result<()> {
    let field = |name: &str| format!("writes[{at}].{name}");
    if write.key.trim().is_empty() {
        return Err(Error::invalid(field("key"), "must not be empty"));
    }
    if write.key.len() > MAX_KEY_BYTES {
        return Err(Error::invalid(
            field("key"),
            format!("longer than {MAX_KEY_BYTES} bytes"),
        ));
    }
    if write
        .text
        .as_deref()
        .is_some_and(|text| text.trim().is_empty())
    {
        return Err(Error::invalid(field("text"), "must not be empty"));
    }
    Ok(())
}

/// `text` within `cap` tokens (head and tail kept): (text, tokens, tokens before a cut).
fn fit_to_cap(text: &str, cap: i64, count: &dyn Fn(&str) -> usize) -> (String, i64, Option<i64>) {
    let tokens = count(text) as i64;
    if tokens <= cap || cap <= 0 {
        return (text.to_string(), tokens, None);
    }
    if let Some((cut, cut_tokens)) = cut_head_tail(text, cap as usize, count) {
        return (cut, cut_tokens as i64, Some(tokens));
    }
    // A cap too small for the marker: the head alone, by characters.
    let head: String = text.chars().take((cap as usize).max(1)).collect();
    let head_tokens = count(&head) as i64;
    (head, head_tokens, Some(tokens))
}

fn remove(
    tx: &Conn,
    session_id: &str,
    seq: &mut i64,
    live: &mut Vec<Entry>,
    zone: Zone,
    key: &str,
) -> Result<WriteOutcome> {
    let Some(at) = live
        .iter()
        .position(|entry| entry.zone == zone && entry.key == key)
    else {
        return Ok(WriteOutcome {
            key: key.to_string(),
            seq: 0,
            accepted: false,
            tokens: 0,
            cut_from: None,
            evicted: Vec::new(),
            enforced: false,
            compact: false,
        });
    };
    let mut gone = live.remove(at);
    *seq += 1;
    gone.seq = *seq;
    gone.text = String::new();
    gone.tokens = 0;
    gone.full_tokens = 0;
    insert(tx, session_id, &gone, true)?;
    Ok(WriteOutcome {
        key: key.to_string(),
        seq: *seq,
        accepted: true,
        tokens: 0,
        cut_from: None,
        evicted: Vec::new(),
        enforced: false,
        compact: false,
    })
}

fn insert(tx: &Conn, session_id: &str, entry: &Entry, removed: bool) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO arena_entries (session_id, seq, zone, key, source, priority, text,
                                    token_count, once, external, removed, created_at,
                                    full_tokens)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    )?
    .execute(args![
        session_id,
        entry.seq,
        entry.zone.as_str(),
        entry.key,
        entry.source,
        entry.priority.as_str(),
        entry.text,
        entry.tokens,
        entry.once,
        entry.external,
        removed,
        now_ms(),
        // Stored only for a text cut at write time; a whole one reads its own count.
        (entry.full_tokens > entry.tokens).then_some(entry.full_tokens),
    ])?;
    Ok(())
}

fn newest_seq(conn: &Conn, session_id: &str) -> Result<i64> {
    conn.prepare_cached("SELECT COALESCE(max(seq), 0) FROM arena_entries WHERE session_id = ?1")?
        .query_row(args![session_id], |row| row.get(0))
}

/// The newest row of each key in each zone, without the removed ones, oldest first.
fn read_live(conn: &Conn, session_id: &str) -> Result<Vec<Entry>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {ENTRY_COLUMNS}, removed FROM arena_entries
         WHERE session_id = ?1 AND seq IN (
             SELECT max(seq) FROM arena_entries WHERE session_id = ?1 GROUP BY zone, key)
         ORDER BY seq"
    ))?;
    let rows = stmt.query_map(args![session_id], |row| {
        Ok((
            row.get::<i64>(0)?,
            row.get::<String>(1)?,
            row.get::<String>(2)?,
            row.get::<String>(3)?,
            row.get::<String>(4)?,
            row.get::<String>(5)?,
            row.get::<i64>(6)?,
            row.get::<bool>(7)?,
            row.get::<bool>(8)?,
            row.get::<i64>(9)?,
            row.get::<bool>(10)?,
        ))
    })?;
    let mut entries = Vec::new();
    for row in rows {
        let (seq, zone, key, source, priority, text, tokens, once, external, full, removed) = row;
        if removed {
            continue;
        }
        entries.push(Entry {
            seq,
            zone: Zone::parse(&zone)?,
            key,
            source,
            priority: Priority::parse(&priority)?,
            text,
            tokens,
            full_tokens: full,
            once,
            external,
        });
    }
    Ok(entries)
}

/// Sets the entry of `key` in `zone` to `text` (or removes it, with `None`) inside
/// the caller's transaction, unless it already holds that: a block another part of
/// the store keeps (the ledger) rides on the arena's rows, caps and rendering.
/// Returns whether a row was written.
pub(crate) fn put_entry(
    tx: &Conn,
    session_id: &str,
    (zone, key, source): (Zone, &str, &str),
    text: Option<(&str, i64)>,
) -> Result<bool> {
    let live: Option<(String, bool)> = tx
        .prepare_cached(
            "SELECT text, removed FROM arena_entries
             WHERE session_id = ?1 AND zone = ?2 AND key = ?3 ORDER BY seq DESC LIMIT 1",
        )?
        .query_opt(args![session_id, zone.as_str(), key], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })?;
    let live = live.filter(|(_, removed)| !removed).map(|(text, _)| text);
    if live.as_deref() == text.map(|(text, _)| text) {
        return Ok(false);
    }
    let (text, tokens) = text.unwrap_or_default();
    let entry = Entry {
        seq: newest_seq(tx, session_id)? + 1,
        zone,
        key: key.to_string(),
        source: source.to_string(),
        priority: Priority::Critical,
        text: text.to_string(),
        tokens,
        full_tokens: tokens,
        once: false,
        external: false,
    };
    insert(tx, session_id, &entry, text.is_empty())?;
    Ok(true)
}
