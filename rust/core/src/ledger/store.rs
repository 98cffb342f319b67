//! The ledger's rows: reading the live items (through a fork's lineage), reading
//! the messages compaction took out of the view into it, the caller's edits, and
//! the rendered ledger kept as two arena entries, all in one transaction per write.

use std::collections::HashMap;

use super::{merge, render, Change, Item, Kind, Origin};
use crate::arena::entries::put_entry;
use crate::arena::Zone;
use crate::db::backend::{args, Conn, Row};
use crate::db::gate::transact;
use crate::error::{Error, Result};
use crate::extractive::{SourceMessage, SourceTool};
use crate::ids::{new_id, now_ms};
use crate::store::Store;
use crate::tokens::TokenCounter;

/// The key of the ledger's entry in the truth and the task-state zones.
pub const ARENA_KEY: &str = "ledger";
/// Bytes of a person's text read for items: instructions can be long.
const TEXT_BYTES: i64 = 8_192;
/// Bytes of a tool's input read for its file or command.
const INPUT_BYTES: i64 = 4_096;
/// Bytes read from each end of a tool's output, for an exit code or an error line.
const OUTPUT_END_BYTES: i64 = 400;
/// Bytes of a tool's error read for its first line.
const ERROR_BYTES: i64 = 1_024;
/// Longest text of an item given through the API, in bytes.
const MAX_ITEM_BYTES: usize = 2_000;
/// Longest subject, in bytes.
const MAX_SUBJECT_BYTES: usize = 300;

/// How many tokens each part of the rendered ledger may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LedgerCaps {
    pub stable: i64,
    pub volatile: i64,
}

impl LedgerCaps {
    /// The caps of the part in the system message and of the work in progress.
    #[must_use]
    pub const fn new(stable: i64, volatile: i64) -> Self {
        Self { stable, volatile }
    }
}

/// What a write to the ledger did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LedgerUpdate {
    /// Values stored: new subjects and new values of live ones.
    pub added: usize,
    /// Of those, the ones that replaced an earlier value.
    pub changed: usize,
    /// Subjects taken out.
    pub removed: usize,
    /// The request's ledger text changed (its arena entries were written).
    pub rendered: bool,
    /// Tokens of the two parts as rendered now.
    pub stable_tokens: i64,
    pub volatile_tokens: i64,
    /// Items left out of the rendered ledger for room, per kind.
    pub left_out: Vec<(String, usize)>,
    /// Messages up to this position have been read into the ledger.
    pub absorbed_seq: i64,
}

/// One stored value of a subject (or its removal).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerRow {
    pub id: String,
    pub session_id: String,
    pub ord: i64,
    pub kind: Kind,
    pub subject: String,
    pub text: String,
    pub removed: bool,
    pub changed: bool,
    pub origin: Origin,
    pub msg_seq: i64,
    pub message_ids: Vec<String>,
    pub created_at: i64,
}

/// A caller's change to the ledger.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LedgerEdit {
    /// Sets the value of `subject` (adds it when it is new).
    Set {
        kind: Kind,
        subject: String,
        text: String,
    },
    /// Takes `subject` out (its values stay stored).
    Remove { subject: String },
}

const ROW_COLUMNS: &str = "id, session_id, ord, kind, subject, text, removed, changed, origin,
                           msg_seq, message_ids, created_at";

impl Store {
    /// The live items of a session's ledger: the newest value of each subject not
    /// taken out, a fork's inherited ones included, in the order they were written.
    pub fn ledger_items(&mut self, session_id: &str) -> Result<Vec<Item>> {
        self.session(session_id)?;
        let rows = self.lineage_rows(&self.conn, session_id, None)?;
        Ok(fold(&rows))
    }

    /// Every stored value of a session's ledger (of `subject` alone, when given),
    /// oldest first, removals included.
    pub fn ledger_history(
        &mut self,
        session_id: &str,
        subject: Option<&str>,
    ) -> Result<Vec<LedgerRow>> {
        self.session(session_id)?;
        self.lineage_rows(&self.conn, session_id, subject)
    }

    /// Applies the caller's `edits` in order and renders the ledger again, in one
    /// transaction. Bad input (an empty text or subject, one too long) fails before
    /// anything is written.
    /// `origin` is the caller's, or a summarisation model's (its items are
    /// checked by the caller first).
    pub fn ledger_edit(
        &mut self,
        session_id: &str,
        edits: &[LedgerEdit],
        caps: LedgerCaps,
        origin: Origin,
    ) -> Result<LedgerUpdate> {
        for (at, edit) in edits.iter().enumerate() {
            check_edit(at, edit)?;
        }
        let position = self.session_position(session_id)?;
        let counter = self.counter(session_id)?;
        let lineage_rows = |tx: &Conn| self.lineage_rows(tx, session_id, None);
        transact(&self.conn, &self.writer, Some(session_id), |tx| {
            let mut live = fold(&lineage_rows(tx)?);
            let mut writer = RowWriter::new(tx, session_id)?;
            let mut update = LedgerUpdate::default();
            for edit in edits {
                match edit {
                    LedgerEdit::Set {
                        kind,
                        subject,
                        text,
                    } => {
                        let before = live.iter().find(|item| &item.subject == subject);
                        if before.is_some_and(|item| &item.text == text && item.kind == *kind) {
                            continue;
                        }
                        let change = Change {
                            kind: *kind,
                            subject: subject.clone(),
                            text: text.clone(),
                            seq: position,
                            changed: before.is_some(),
                        };
                        let item = writer.write(&change, origin, &[])?;
                        update.added += 1;
                        update.changed += usize::from(change.changed);
                        replace(&mut live, item);
                    }
                    LedgerEdit::Remove { subject } => {
                        let Some(at) = live.iter().position(|item| &item.subject == subject) else {
                            continue;
                        };
                        let gone = live.remove(at);
                        writer.remove(&gone, position)?;
                        update.removed += 1;
                    }
                }
            }
            set_mark(tx, session_id, None, caps)?;
            rerender(tx, session_id, &live, caps, &counter, &mut update)?;
            Ok(update)
        })
    }

    /// Reads the messages compaction has taken out of the view since the last call
    /// into the ledger, and renders it again when it changed, in one transaction.
    /// A call that finds nothing new writes nothing; a round cut short is taken up
    /// by the next call, which starts where the stored mark says.
    pub fn absorb_ledger(&mut self, session_id: &str, caps: LedgerCaps) -> Result<LedgerUpdate> {
        self.session(session_id)?;
        let absorbed = absorbed_seq(&self.conn, session_id)?;
        let covered = covered_seq(&self.conn, session_id)?;
        if covered <= absorbed {
            return Ok(LedgerUpdate {
                absorbed_seq: absorbed,
                ..LedgerUpdate::default()
            });
        }
        let rows = self.read_sources(session_id, absorbed + 1, covered)?;
        let messages = source_messages(&rows);
        let found = super::extract(&messages);
        let ids: HashMap<i64, &str> = rows
            .iter()
            .map(|row| (row.seq, row.message_id.as_str()))
            .collect();
        let counter = self.counter(session_id)?;
        let lineage_rows = |tx: &Conn| self.lineage_rows(tx, session_id, None);
        transact(&self.conn, &self.writer, Some(session_id), |tx| {
            let mut update = LedgerUpdate {
                absorbed_seq: covered,
                ..LedgerUpdate::default()
            };
            // Another process read these messages in meanwhile.
            if absorbed_seq(tx, session_id)? != absorbed {
                update.absorbed_seq = absorbed_seq(tx, session_id)?;
                return Ok(update);
            }
            let mut live = fold(&lineage_rows(tx)?);
            let changes = merge(&live, &found);
            let mut writer = RowWriter::new(tx, session_id)?;
            for change in &changes {
                let sources: Vec<&str> = ids.get(&change.seq).copied().into_iter().collect();
                let item = writer.write(change, Origin::Extracted, &sources)?;
                update.added += 1;
                update.changed += usize::from(change.changed);
                replace(&mut live, item);
            }
            set_mark(tx, session_id, Some(covered), caps)?;
            rerender(tx, session_id, &live, caps, &counter, &mut update)?;
            Ok(update)
        })
    }

    /// The ledger rendered as the request carries it, with its counts (nothing is
    /// written).
    pub fn ledger_render(
        &mut self,
        session_id: &str,
        caps: LedgerCaps,
    ) -> Result<(render::Rendered, LedgerUpdate)> {
        let live = self.ledger_items(session_id)?;
        let counter = self.counter(session_id)?;
        let rendered = render(&live, usize_caps(caps), &|text| counter.count(text));
        let update = LedgerUpdate {
            stable_tokens: counter.count(&rendered.stable) as i64,
            volatile_tokens: counter.count(&rendered.volatile) as i64,
            left_out: named_left_out(&rendered.left_out),
            absorbed_seq: absorbed_seq(&self.conn, session_id)?,
            ..LedgerUpdate::default()
        };
        Ok((rendered, update))
    }

    /// Every row of the session's lineage (of `subject` alone, when given), oldest
    /// first: a fork's ancestors' rows up to the fork, then its own.
    fn lineage_rows(
        &self,
        conn: &Conn,
        session_id: &str,
        subject: Option<&str>,
    ) -> Result<Vec<LedgerRow>> {
        let lineage = self.lineage(session_id)?;
        // PostgreSQL cannot tell the type of a parameter only compared with NULL.
        let subject_filter = conn.dialect(
            "(?3 IS NULL OR subject = ?3)",
            "(?3::text IS NULL OR subject = ?3::text)",
        );
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {ROW_COLUMNS} FROM ledger_items
             WHERE session_id = ?1 AND msg_seq <= ?2 AND {subject_filter}
             ORDER BY ord"
        ))?;
        let mut rows = Vec::new();
        for segment in &lineage.segments {
            let mut found = stmt.query(args![segment.session_id, segment.last_seq, subject])?;
            while let Some(ref row) = found.next()? {
                rows.push(ledger_row(row)?);
            }
        }
        Ok(rows)
    }

    /// The session's newest message position (0 when it has none).
    fn session_position(&mut self, session_id: &str) -> Result<i64> {
        self.session(session_id)?;
        self.conn
            .prepare_cached("SELECT COALESCE(max(seq), 0) FROM messages WHERE session_id = ?1")?
            .query_row(args![session_id], |row| row.get(0))
    }

    /// The parts the ledger reads of the messages at `low..=high`, in order.
    fn read_sources(&self, session_id: &str, low: i64, high: i64) -> Result<Vec<SourceRow>> {
        let lineage = self.lineage(session_id)?;
        // Parameters are cast: PostgreSQL cannot tell their types in these positions.
        let tail = self.conn.dialect(
            "substr(o.output, -CAST(?4 AS INTEGER))",
            "right(o.output, CAST(?4 AS INTEGER))",
        );
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT p.msg_seq, m.id, m.role, p.kind,
                    substr(p.body, 1, CASE WHEN p.kind = 'text' THEN CAST(?5 AS INTEGER)
                                           ELSE CAST(?6 AS INTEGER) END),
                    p.tool_name, p.tool_status, substr(p.tool_error, 1, CAST(?7 AS INTEGER)),
                    (SELECT CASE WHEN length(o.output) <= 2 * CAST(?4 AS INTEGER) THEN o.output
                                 ELSE substr(o.output, 1, CAST(?4 AS INTEGER)) || ' ... ' || {tail}
                            END
                     FROM tool_outputs o WHERE o.part_pk = p.pk)
             FROM parts p JOIN messages m ON m.session_id = p.session_id AND m.seq = p.msg_seq
             WHERE p.session_id = ?1 AND p.msg_seq BETWEEN ?2 AND ?3 AND p.kind IN ('text', 'tool')
             ORDER BY p.msg_seq, p.ord"
        ))?;
        let mut rows = Vec::new();
        for (holder, from, to) in lineage.clip(low, high) {
            let mut found = stmt.query(args![
                holder,
                from,
                to,
                OUTPUT_END_BYTES,
                TEXT_BYTES,
                INPUT_BYTES,
                ERROR_BYTES
            ])?;
            while let Some(ref row) = found.next()? {
                rows.push(SourceRow {
                    seq: row.get(0)?,
                    message_id: row.get(1)?,
                    role: row.get(2)?,
                    tool: row.get::<String>(3)? == "tool",
                    body: row.get::<Option<String>>(4)?.unwrap_or_default(),
                    name: row.get::<Option<String>>(5)?.unwrap_or_default(),
                    status: row.get::<Option<String>>(6)?.unwrap_or_default(),
                    error: row.get(7)?,
                    output: row.get(8)?,
                });
            }
        }
        Ok(rows)
    }
}

/// One part as the ledger reads it.
struct SourceRow {
    seq: i64,
    message_id: String,
    role: String,
    tool: bool,
    body: String,
    name: String,
    status: String,
    error: Option<String>,
    output: Option<String>,
}

/// The parts as the messages the extraction takes.
fn source_messages(rows: &[SourceRow]) -> Vec<SourceMessage<'_>> {
    let mut messages: Vec<SourceMessage<'_>> = Vec::new();
    for row in rows {
        if messages.last().is_none_or(|message| message.seq != row.seq) {
            messages.push(SourceMessage {
                role: row.role.as_str(),
                seq: row.seq,
                ..SourceMessage::default()
            });
        }
        let message = messages.last_mut().expect("pushed above");
        if row.tool {
            message.tools.push(SourceTool {
                name: &row.name,
                input: &row.body,
                status: &row.status,
                output: row.output.as_deref(),
                error: row.error.as_deref(),
            });
        } else {
            message.texts.push(&row.body);
        }
    }
    messages
}

/// Writes new rows of one session's ledger, numbering them after the newest.
struct RowWriter<'t> {
    tx: &'t Conn,
    session_id: &'t str,
    ord: i64,
}

impl<'t> RowWriter<'t> {
    fn new(tx: &'t Conn, session_id: &'t str) -> Result<Self> {
        let ord = tx
            .prepare_cached("SELECT COALESCE(max(ord), 0) FROM ledger_items WHERE session_id = ?1")?
            .query_row(args![session_id], |row| row.get(0))?;
        Ok(RowWriter {
            tx,
            session_id,
            ord,
        })
    }

    /// Stores `change`; returns it as the live item it now is.
    fn write(&mut self, change: &Change, origin: Origin, sources: &[&str]) -> Result<Item> {
        self.ord += 1;
        let id = new_id("led");
        let joined = (!sources.is_empty()).then(|| sources.join(","));
        self.insert(&id, change, origin, false, joined.as_deref())?;
        Ok(Item {
            id,
            kind: change.kind,
            subject: change.subject.clone(),
            text: change.text.clone(),
            origin,
            first_seq: change.seq,
            seq: change.seq,
            ord: self.ord,
            changed: change.changed,
            message_ids: sources.iter().map(|id| (*id).to_string()).collect(),
        })
    }

    /// Stores the removal of `item`'s subject.
    fn remove(&mut self, item: &Item, position: i64) -> Result<()> {
        self.ord += 1;
        let change = Change {
            kind: item.kind,
            subject: item.subject.clone(),
            text: String::new(),
            seq: position,
            changed: false,
        };
        self.insert(&new_id("led"), &change, Origin::Caller, true, None)
    }

    fn insert(
        &self,
        id: &str,
        change: &Change,
        origin: Origin,
        removed: bool,
        sources: Option<&str>,
    ) -> Result<()> {
        self.tx
            .prepare_cached(
                "INSERT INTO ledger_items (session_id, ord, id, kind, subject, text, removed,
                                           changed, origin, msg_seq, message_ids, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            )?
            .execute(args![
                self.session_id,
                self.ord,
                id,
                change.kind.as_str(),
                change.subject,
                change.text,
                removed,
                change.changed,
                origin.as_str(),
                change.seq,
                sources,
                now_ms(),
            ])?;
        Ok(())
    }
}

/// Puts `item` in place of the live value of its subject (keeping where the
/// subject was first seen), or adds it.
fn replace(live: &mut Vec<Item>, mut item: Item) {
    match live.iter().position(|old| old.subject == item.subject) {
        Some(at) => {
            item.first_seq = live[at].first_seq;
            live.remove(at);
            live.push(item);
        }
        None => live.push(item),
    }
}

/// The live items of `rows` (oldest first): the newest value of each subject, in
/// the order of their newest values. Linear in the rows: a subject's slot is found
/// by its name, and emptied when a newer value or a removal comes.
fn fold(rows: &[LedgerRow]) -> Vec<Item> {
    let mut slots: Vec<Option<Item>> = Vec::with_capacity(rows.len());
    // Per subject: where it was first seen, and its live slot.
    let mut subjects: HashMap<&str, (i64, Option<usize>)> = HashMap::new();
    for row in rows {
        let (first, slot) = subjects
            .entry(row.subject.as_str())
            .or_insert((row.msg_seq, None));
        if let Some(at) = slot.take() {
            slots[at] = None;
        }
        if row.removed {
            subjects.remove(row.subject.as_str());
            continue;
        }
        *slot = Some(slots.len());
        slots.push(Some(Item {
            id: row.id.clone(),
            kind: row.kind,
            subject: row.subject.clone(),
            text: row.text.clone(),
            origin: row.origin,
            first_seq: *first,
            seq: row.msg_seq,
            ord: row.ord,
            changed: row.changed,
            message_ids: row.message_ids.clone(),
        }));
    }
    slots.into_iter().flatten().collect()
}

/// Renders `live` and writes the two arena entries that differ from it.
fn rerender(
    tx: &Conn,
    session_id: &str,
    live: &[Item],
    caps: LedgerCaps,
    counter: &TokenCounter,
    update: &mut LedgerUpdate,
) -> Result<()> {
    let rendered = render(live, usize_caps(caps), &|text| counter.count(text));
    let tokens = |text: &str| {
        if text.is_empty() {
            0
        } else {
            counter.count(text) as i64
        }
    };
    update.stable_tokens = tokens(&rendered.stable);
    update.volatile_tokens = tokens(&rendered.volatile);
    update.left_out = named_left_out(&rendered.left_out);
    for (zone, text, tokens) in [
        (Zone::Truth, &rendered.stable, update.stable_tokens),
        (Zone::TaskState, &rendered.volatile, update.volatile_tokens),
    ] {
        let text = (!text.is_empty()).then_some((text.as_str(), tokens));
        update.rendered |= put_entry(tx, session_id, (zone, ARENA_KEY, "ledger"), text)?;
    }
    Ok(())
}

fn usize_caps(caps: LedgerCaps) -> (usize, usize) {
    (
        usize::try_from(caps.stable).unwrap_or(0),
        usize::try_from(caps.volatile).unwrap_or(0),
    )
}

fn named_left_out(left_out: &[(Kind, usize)]) -> Vec<(String, usize)> {
    left_out
        .iter()
        .map(|(kind, n)| (kind.as_str().to_string(), *n))
        .collect()
}

/// How far the session's messages have been read into the ledger.
fn absorbed_seq(conn: &Conn, session_id: &str) -> Result<i64> {
    Ok(conn
        .prepare_cached("SELECT absorbed_seq FROM ledger_marks WHERE session_id = ?1")?
        .query_opt(args![session_id], |row| row.get::<i64>(0))?
        .unwrap_or(0))
}

/// Stores how far the messages were read (`None`: as stored) and the caps the
/// ledger was last rendered with, which an erasure renders it again with.
fn set_mark(tx: &Conn, session_id: &str, seq: Option<i64>, caps: LedgerCaps) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO ledger_marks (session_id, absorbed_seq, stable_cap, volatile_cap, updated_at)
         VALUES (?1, COALESCE(?2, 0), ?3, ?4, ?5)
         ON CONFLICT (session_id) DO UPDATE SET
             absorbed_seq = COALESCE(?2, ledger_marks.absorbed_seq),
             stable_cap = excluded.stable_cap, volatile_cap = excluded.volatile_cap,
             updated_at = excluded.updated_at",
    )?
    .execute(args![session_id, seq, caps.stable, caps.volatile, now_ms()])?;
    Ok(())
}

/// Takes out of `reader`'s ledger what was read from the erased messages
/// `low..=high` of `session`, and every rendered text of its ledger (the next
/// render writes what still holds). Returns the arena rows deleted.
pub(crate) fn forget_erased(
    tx: &Conn,
    reader: &str,
    (_, low, high): (&str, i64, i64),
) -> Result<i64> {
    tx.execute(
        "DELETE FROM ledger_items WHERE session_id = ?1 AND origin <> 'caller'
           AND msg_seq BETWEEN ?2 AND ?3",
        args![reader, low, high],
    )?;
    let removed = tx.execute(
        "DELETE FROM arena_entries WHERE session_id = ?1 AND key = ?2 AND source = 'ledger'",
        args![reader, ARENA_KEY],
    )?;
    Ok(removed as i64)
}

impl Store {
    /// Renders a session's ledger again with the caps it was last rendered with
    /// (nothing when it never was).
    pub fn refresh_ledger(&mut self, session_id: &str) -> Result<()> {
        let caps: Option<(i64, i64)> = self
            .conn
            .prepare_cached(
                "SELECT stable_cap, volatile_cap FROM ledger_marks WHERE session_id = ?1",
            )?
            .query_opt(args![session_id], |row| Ok((row.get(0)?, row.get(1)?)))?;
        let Some((stable, volatile)) = caps else {
            return Ok(());
        };
        let caps = LedgerCaps::new(stable, volatile);
        let counter = self.counter(session_id)?;
        let lineage_rows = |tx: &Conn| self.lineage_rows(tx, session_id, None);
        transact(&self.conn, &self.writer, Some(session_id), |tx| {
            let live = fold(&lineage_rows(tx)?);
            let mut update = LedgerUpdate::default();
            rerender(tx, session_id, &live, caps, &counter, &mut update)
        })
    }
}

/// The newest message position a summary of the session covers: the messages up
/// to it have left the view.
fn covered_seq(conn: &Conn, session_id: &str) -> Result<i64> {
    conn.prepare_cached(
        "SELECT COALESCE(max(span_end_seq), 0) FROM summaries WHERE session_id = ?1",
    )?
    .query_row(args![session_id], |row| row.get(0))
}

fn ledger_row(row: &Row<'_>) -> Result<LedgerRow> {
    let ids: Option<String> = row.get(10)?;
    Ok(LedgerRow {
        id: row.get(0)?,
        session_id: row.get(1)?,
        ord: row.get(2)?,
        kind: Kind::parse(&row.get::<String>(3)?)?,
        subject: row.get(4)?,
        text: row.get(5)?,
        removed: row.get(6)?,
        changed: row.get(7)?,
        origin: Origin::parse(&row.get::<String>(8)?)?,
        msg_seq: row.get(9)?,
        message_ids: ids
            .map(|ids| ids.split(',').map(str::to_string).collect())
            .unwrap_or_default(),
        created_at: row.get(11)?,
    })
}

fn check_edit(at: usize, edit: &LedgerEdit) -> Result<()> {
    let field = |name: &str| format!("edits[{at}].{name}");
    let subject = match edit {
        LedgerEdit::Set { subject, text, .. } => {
            if text.trim().is_empty() {
                return Err(Error::invalid(field("text"), "must not be empty"));
            }
            if text.len() > MAX_ITEM_BYTES {
                return Err(Error::invalid(
                    field("text"),
                    format!(
                        "{} bytes; an item holds at most {MAX_ITEM_BYTES}",
                        text.len()
                    ),
                ));
            }
            subject
        }
        LedgerEdit::Remove { subject } => subject,
    };
    if subject.trim().is_empty() || subject.len() > MAX_SUBJECT_BYTES {
        return Err(Error::invalid(
            field("subject"),
            format!("must hold 1 to {MAX_SUBJECT_BYTES} bytes"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod fold_tests {
    use super::*;
    use proptest::prelude::*;

    fn row(ord: i64, subject: u8, removed: bool) -> LedgerRow {
        LedgerRow {
            id: format!("led_{ord}"),
            session_id: "ses".into(),
            ord,
            kind: Kind::Fact,
            subject: format!("subject {subject}"),
            text: format!("value {ord}"),
            removed,
            changed: false,
            origin: Origin::Extracted,
            msg_seq: ord * 2,
            message_ids: Vec::new(),
            created_at: 0,
        }
    }

    /// The plain reading of the rule: drop the subject's live item, then add the new
    /// value at the end unless it removes the subject.
    fn reference(rows: &[LedgerRow]) -> Vec<(String, i64, i64)> {
        let mut live: Vec<(String, i64, i64)> = Vec::new();
        let mut first_seen: HashMap<&str, i64> = HashMap::new();
        for row in rows {
            let first = *first_seen
                .entry(row.subject.as_str())
                .or_insert(row.msg_seq);
            live.retain(|(subject, _, _)| *subject != row.subject);
            if row.removed {
                first_seen.remove(row.subject.as_str());
            } else {
                live.push((row.subject.clone(), row.ord, first));
            }
        }
        live
    }

    proptest! {
        #[test]
        fn fold_keeps_the_newest_value_of_each_subject_in_order(
            steps in proptest::collection::vec((0u8..12, proptest::bool::weighted(0.2)), 0..200)
        ) {
            let rows: Vec<LedgerRow> = steps
                .iter()
                .enumerate()
                .map(|(ord, (subject, removed))| row(ord as i64, *subject, *removed))
                .collect();
            let folded: Vec<(String, i64, i64)> = fold(&rows)
                .into_iter()
                .map(|item| (item.subject, item.ord, item.first_seq))
                .collect();
            prop_assert_eq!(folded, reference(&rows));
        }
    }
}
