//! The store side of the built-in extractive summariser: reading what it scans of
//! a span's parts and gathering from them, the older and the newer half of a large
//! span at once, each on its own connection and thread.

use crate::db::backend::{args, Conn, Row};

use crate::compaction::commit::{write_sources, write_summary, CommitResult, NewSummary};
use crate::compaction::span::{Members, SpanInfo};
use crate::compaction::summaries::TextResult;
use crate::db::gate::transact;
use crate::db::id_list::{split_ids, IdList};
use crate::error::{Error, Result};
use crate::extractive::{
    prefix, Collection, SourceFileRef, SourceMessage, SourceTool, ERROR_SCAN_BYTES,
    INPUT_SCAN_BYTES, TEXT_SCAN_BYTES,
};
use crate::ids::new_id;
use crate::lineage::Lineage;
use crate::store::Store;
use crate::threads::beside;
use crate::tokens::TokenCounter;

/// Spans of fewer messages are read on one connection: a second thread saves
/// less on them than it costs to start.
const PARALLEL_MIN_MESSAGES: usize = 1_000;

/// A byte range of [`SpanText::text`].
type TextSpan = (usize, usize);

/// What a part is, as the extractive summariser reads it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum PartKind {
    Text,
    Tool,
    FileRef,
}

/// One part as the extractive summariser reads it; its strings live in the arena.
struct PartRow {
    seq: i64,
    ord: i64,
    kind: PartKind,
    file_ids: Option<TextSpan>,
    /// The text, or the tool input.
    body: TextSpan,
    name: TextSpan,
    status: TextSpan,
    error: Option<TextSpan>,
    /// The start of the output of a failed call without an error text.
    output: Option<TextSpan>,
    /// File id and path of a file reference.
    file_ref: Option<(TextSpan, TextSpan)>,
}

/// The parts of a run of messages as the extractive summariser reads them: all
/// their text in one arena (one allocation rather than several per part).
#[derive(Default)]
struct SpanText {
    text: String,
    rows: Vec<PartRow>,
}

impl SpanText {
    fn push(&mut self, value: &str) -> TextSpan {
        let start = self.text.len();
        self.text.push_str(value);
        (start, self.text.len())
    }

    fn get(&self, (start, end): TextSpan) -> &str {
        &self.text[start..end]
    }

    /// The file ids of every part, in message and part order, without repeats.
    fn file_ids(&self) -> Vec<String> {
        let mut ids = IdList::default();
        for row in &self.rows {
            if let Some(joined) = row.file_ids {
                ids.extend(split_ids(Some(self.get(joined))));
            }
        }
        ids.ids
    }
}

/// What was gathered from one run of the span, with the file ids of its parts.
struct Gathered<'a> {
    collection: Collection<'a>,
    file_ids: Vec<String>,
}

/// A summary written from what was gathered.
struct Written {
    /// With the footer of every file id of the span's parts.
    text: String,
    token_count: i64,
    file_ids: Vec<String>,
    /// The summary has a body, not only a footer.
    says_something: bool,
}

impl Gathered<'_> {
    /// The summary within `max_tokens`, with its file-id footer.
    fn write(self, max_tokens: i64, counter: &TokenCounter) -> Written {
        let limit = max_tokens.max(0) as usize;
        let body = self.collection.summary(limit, &|text| counter.count(text));
        let text = crate::parts::merge_reference_footer(&body, &self.file_ids);
        Written {
            token_count: counter.count(&text) as i64,
            text,
            file_ids: self.file_ids,
            says_something: !body.trim().is_empty(),
        }
    }
}

/// What [`Store::commit_extractive_summary`] wrote, or would have.
#[derive(Clone, Debug)]
pub struct SpanCommit {
    /// The summary with its file-id footer, and its token count.
    pub text: String,
    pub token_count: i64,
    pub file_ids: Vec<String>,
    /// The commit, when the summary fit its budget and shrank the view.
    pub committed: Option<CommitResult>,
}

/// Where the messages of a span are read from.
struct SpanRead<'m> {
    lineage: &'m Lineage,
    members: &'m Members,
}

/// Buffers one run of a span is read into.
type RunBuffers<'a> = (&'a mut SpanText, &'a mut Vec<SourceMessage<'a>>);

impl Store {
    /// The built-in extractive summary (no model) of view messages, within `max_tokens`.
    pub fn extractive_summary(
        &mut self,
        message_ids: &[String],
        max_tokens: i64,
    ) -> Result<TextResult> {
        let (session_id, members) = self.named_messages(message_ids)?;
        let counter = self.counter(&session_id)?;
        let (mut older_text, mut newer_text) = (SpanText::default(), SpanText::default());
        let (mut older_messages, mut newer_messages) = (Vec::new(), Vec::new());
        let gathered = self.gather_span(
            &session_id,
            &members,
            (&mut older_text, &mut older_messages),
            (&mut newer_text, &mut newer_messages),
        )?;
        let written = gathered.write(max_tokens, &counter);
        Ok(TextResult {
            token_count: written.token_count,
            text: written.text,
            message_ids: message_ids.to_vec(),
            file_ids: written.file_ids,
        })
    }

    /// The built-in extractive summary of `span` within `max_tokens`, committed
    /// (level 1) in the same call when it says something, fits, and costs the view
    /// fewer tokens than the messages it replaces; otherwise nothing is written.
    ///
    /// The span is read and summarised before the commit's transaction begins, so
    /// the write lock is held only for the commit's own writes: a turn appended
    /// meanwhile never waits for the summariser. The span cannot change under the
    /// round (its messages are stored once, and only the round's holder prunes
    /// them); the commit checks its sources are still in the view all the same.
    pub fn commit_extractive_summary(
        &mut self,
        span: &SpanInfo,
        max_tokens: i64,
    ) -> Result<SpanCommit> {
        if span.message_ids.is_empty() {
            return Err(Error::invalid("span", "holds no messages"));
        }
        let session_id = span.session_id.as_str();
        let counter = self.counter(session_id)?;
        let plan = self.plan_commit(session_id, &span.message_ids, &[])?;
        let members = plan
            .members
            .as_ref()
            .expect("a plan over messages has members");
        let (mut older_text, mut newer_text) = (SpanText::default(), SpanText::default());
        let (mut older_messages, mut newer_messages) = (Vec::new(), Vec::new());
        let gathered = self.gather_span(
            session_id,
            members,
            (&mut older_text, &mut older_messages),
            (&mut newer_text, &mut newer_messages),
        )?;
        let written = gathered.write(max_tokens, &counter);
        let summary = NewSummary::new(&counter, new_id("sum"), &plan, written.text.clone(), 1);
        let fits = written.says_something && written.token_count <= max_tokens;
        let committed = if fits && summary.tokens < plan.source_tokens {
            transact(&self.conn, &self.writer, Some(session_id), |tx| {
                write_sources(tx, session_id, &plan, &summary.id, None)?;
                write_summary(tx, session_id, &plan, &summary)
            })?;
            self.views.forget(session_id);
            Some(plan.result(summary))
        } else {
            None
        };
        Ok(SpanCommit {
            text: written.text,
            token_count: written.token_count,
            file_ids: written.file_ids,
            committed,
        })
    }

    /// Reads and gathers a span's member messages in one read transaction: a large
    /// span in two halves at once, the newer on the second connection.
    fn gather_span<'a>(
        &mut self,
        session_id: &str,
        members: &Members,
        older: RunBuffers<'a>,
        newer: RunBuffers<'a>,
    ) -> Result<Gathered<'a>> {
        let split = members.len() >= PARALLEL_MIN_MESSAGES && self.open_reader();
        let older_count = if split {
            members.len() / 2
        } else {
            members.len()
        };
        let lineage = self.lineage(session_id)?;
        let read = SpanRead {
            lineage: &lineage,
            members,
        };
        let snapshot = self.conn.snapshot()?;
        let reader = if split { self.reader.as_mut() } else { None };
        gather_in_two(&snapshot, reader, &read, older_count, older, newer)
    }

    /// Opens the second connection a large span is read with, once; false when
    /// the database is not a file another connection can open.
    fn open_reader(&mut self) -> bool {
        if self.reader.is_none() && !self.reader_failed {
            self.reader = crate::store::open_reader(&self.path, self.key.as_ref());
            self.reader_failed = self.reader.is_none();
        }
        self.reader.is_some()
    }
}

/// Reads and gathers the member messages: the oldest `older_count` on `conn`, and
/// the rest at the same time on `reader`, or all of them on `conn` when there is
/// no reader.
fn gather_in_two<'a>(
    conn: &Conn,
    reader: Option<&mut Conn>,
    read: &SpanRead<'_>,
    older_count: usize,
    older: RunBuffers<'a>,
    newer: RunBuffers<'a>,
) -> Result<Gathered<'a>> {
    let members = read.members;
    let Some(reader) = reader.filter(|_| older_count < members.len()) else {
        let whole = (members.low, members.high);
        return gather(conn, read.lineage, members, whole, older.0, older.1);
    };
    let [older_range, newer_range] = members.split(older_count);
    let (older_run, newer_run) = beside(
        move || gather(conn, read.lineage, members, older_range, older.0, older.1),
        move || gather(reader, read.lineage, members, newer_range, newer.0, newer.1),
    );
    let (older_run, newer_run) = (older_run?, newer_run?);
    let mut file_ids = IdList::default();
    file_ids.extend(older_run.file_ids);
    file_ids.extend(newer_run.file_ids);
    Ok(Gathered {
        collection: older_run.collection.merge(newer_run.collection),
        file_ids: file_ids.ids,
    })
}

/// Reads the member messages with `msg_seq` in `range` into `text` and
/// `messages`, and gathers from them.
fn gather<'a>(
    conn: &Conn,
    lineage: &Lineage,
    members: &Members,
    range: (i64, i64),
    text: &'a mut SpanText,
    messages: &'a mut Vec<SourceMessage<'a>>,
) -> Result<Gathered<'a>> {
    for (holder, low, high) in lineage.clip(range.0, range.1) {
        read_parts(conn, holder, members, (low, high), text)?;
    }
    sort_rows(text);
    let text: &'a SpanText = text;
    *messages = source_messages(text, members);
    let messages: &'a [SourceMessage<'a>] = messages;
    Ok(Gathered {
        collection: Collection::of(messages),
        file_ids: text.file_ids(),
    })
}

/// The messages as the summariser takes them, borrowing their text from `text`.
fn source_messages<'a>(text: &'a SpanText, members: &Members) -> Vec<SourceMessage<'a>> {
    let mut messages: Vec<SourceMessage<'a>> = Vec::new();
    for row in &text.rows {
        if messages.last().is_none_or(|message| message.seq != row.seq) {
            messages.push(SourceMessage {
                role: members.role(row.seq).as_str(),
                seq: row.seq,
                texts: Vec::new(),
                tools: Vec::new(),
                file_refs: Vec::new(),
            });
        }
        let message = messages.last_mut().expect("pushed above");
        match row.kind {
            PartKind::Text => message.texts.push(text.get(row.body)),
            PartKind::Tool => message.tools.push(SourceTool {
                name: text.get(row.name),
                input: text.get(row.body),
                status: text.get(row.status),
                output: row.output.map(|span| text.get(span)),
                error: row.error.map(|span| text.get(span)),
            }),
            PartKind::FileRef => {
                if let Some((id, path)) = row.file_ref {
                    message.file_refs.push(SourceFileRef {
                        file_id: text.get(id),
                        path: text.get(path),
                    });
                }
            }
        }
    }
    messages
}

/// Adds what the summariser scans of the parts of the member messages with
/// `msg_seq` in `range` (all held by `session_id`) to `text`.
fn read_parts(
    conn: &Conn,
    session_id: &str,
    members: &Members,
    range: (i64, i64),
    text: &mut SpanText,
) -> Result<()> {
    let expected = members.count_within(range);
    let kept = text.rows.len();
    // Parts are stored in message order unless a streamed message was finished
    // after a later one: then the rows from the first message's first part to the
    // last message's last part miss some, and the exact bounds are looked up.
    if let Some(bounds) = probe_rowid_bounds(conn, session_id, range)? {
        if scan_parts(conn, session_id, members, range, bounds, text)? == expected {
            return Ok(());
        }
        text.rows.truncate(kept);
    }
    if let Some(bounds) = exact_rowid_bounds(conn, session_id, range)? {
        scan_parts(conn, session_id, members, range, bounds, text)?;
    }
    Ok(())
}

/// Rows in storage order are in message order unless a streamed message was
/// finished after a later one was stored.
fn sort_rows(text: &mut SpanText) {
    if !text.rows.is_sorted_by_key(|row| (row.seq, row.ord)) {
        text.rows.sort_by_key(|row| (row.seq, row.ord));
    }
}

/// Reads the parts with rowids in `first..=last` of the member messages with
/// `msg_seq` in `low..=high` into `text`, in storage order: a walk along the table
/// instead of one index lookup per part. Returns how many messages it met.
fn scan_parts(
    conn: &Conn,
    session_id: &str,
    members: &Members,
    (low, high): (i64, i64),
    (first, last): (i64, i64),
    text: &mut SpanText,
) -> Result<usize> {
    // Only what the summariser scans is loaded: loading every tool output would
    // dominate the cost of a large span. Texts are read in place and cut here:
    // an SQL expression over them would copy each one first.
    // The unary + keeps SQLite on the key range rather than an index; PostgreSQL
    // has no + on text, and plans the range on its own.
    let filter = conn.dialect(
        "+session_id = ?3 AND +msg_seq BETWEEN ?4 AND ?5",
        "session_id = ?3 AND msg_seq BETWEEN ?4 AND ?5",
    );
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT msg_seq, ord, kind, body, tool_name, tool_status, tool_error,
                CASE WHEN tool_status = 'error' AND tool_error IS NULL
                     THEN (SELECT substr(output, 1, {ERROR_SCAN_BYTES})
                           FROM tool_outputs WHERE part_pk = parts.pk) END,
                file_ids
         FROM parts WHERE pk BETWEEN ?1 AND ?2 AND {filter}"
    ))?;
    let mut met = vec![false; usize::try_from(high - low + 1).unwrap_or(0)];
    let mut messages = 0;
    let mut rows = stmt.query(args![first, last, session_id, low, high])?;
    while let Some(ref row) = rows.next()? {
        let seq: i64 = row.get(0)?;
        if members.slot(seq).is_some() {
            let part = part_row(row, seq, text)?;
            text.rows.push(part);
            let offset = (seq - low) as usize;
            messages += usize::from(!met[offset]);
            met[offset] = true;
        }
    }
    Ok(messages)
}

/// The rowids of the first part of the first message with `msg_seq` in `range`
/// and of the last part of the last one: two index probes.
fn probe_rowid_bounds(
    conn: &Conn,
    session_id: &str,
    range: (i64, i64),
) -> Result<Option<(i64, i64)>> {
    let bounds = rowid_pair(
        conn,
        "SELECT (SELECT pk FROM parts WHERE session_id = ?1 AND msg_seq >= ?2
                 ORDER BY msg_seq, ord LIMIT 1),
                (SELECT pk FROM parts WHERE session_id = ?1 AND msg_seq <= ?3
                 ORDER BY msg_seq DESC, ord DESC LIMIT 1)",
        session_id,
        range,
    )?;
    Ok(bounds.filter(|(first, last)| first <= last))
}

/// The lowest and highest rowid of the parts with `msg_seq` in `range`: a walk
/// over their index entries.
fn exact_rowid_bounds(
    conn: &Conn,
    session_id: &str,
    range: (i64, i64),
) -> Result<Option<(i64, i64)>> {
    rowid_pair(
        conn,
        "SELECT min(pk), max(pk) FROM parts
         WHERE session_id = ?1 AND msg_seq BETWEEN ?2 AND ?3",
        session_id,
        range,
    )
}

/// The two rowids `sql` selects for `session_id` and `(low, high)`, if both exist.
fn rowid_pair(
    conn: &Conn,
    sql: &str,
    session_id: &str,
    (low, high): (i64, i64),
) -> Result<Option<(i64, i64)>> {
    let (first, last): (Option<i64>, Option<i64>) = conn
        .prepare_cached(sql)?
        .query_row(args![session_id, low, high], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })?;
    Ok(first.zip(last))
}

/// How the summary lists an image or a document: its kind and caption (or file
/// name), `image: the login page`; without either, by its id alone (empty).
fn media_label(value: &serde_json::Value) -> String {
    let kind = value["kind"].as_str().unwrap_or("image");
    let label = value["caption"]
        .as_str()
        .or_else(|| value["filename"].as_str())
        .filter(|label| !label.trim().is_empty());
    match label {
        Some(label) => format!("{kind}: {}", prefix(label, 160)),
        None => String::new(),
    }
}

/// One row of [`read_parts`], its strings cut and copied into `text`.
fn part_row(row: &Row<'_>, seq: i64, text: &mut SpanText) -> Result<PartRow> {
    let stored_kind = row.get::<&str>(2)?;
    let kind = match stored_kind {
        "text" => PartKind::Text,
        "tool" => PartKind::Tool,
        _ => PartKind::FileRef,
    };
    let body = row.get::<&str>(3)?;
    // The summariser scans no more than these bytes of a part; a byte cut on a
    // character boundary is the same one it makes, without walking the characters.
    let body = match kind {
        PartKind::Text => prefix(body, TEXT_SCAN_BYTES),
        PartKind::Tool => prefix(body, INPUT_SCAN_BYTES),
        PartKind::FileRef => body,
    };
    let file_ref = (kind == PartKind::FileRef)
        .then(|| serde_json::from_str::<serde_json::Value>(body).ok())
        .flatten()
        .map(|value| {
            // An image or a document is named by its reference id and caption.
            if stored_kind == "media" {
                let id = text.push(value["media_id"].as_str().unwrap_or_default());
                let label = media_label(&value);
                let path = text.push(&label);
                return (id, path);
            }
            let id = text.push(value["file_id"].as_str().unwrap_or_default());
            let path = text.push(value["path"].as_str().unwrap_or_default());
            (id, path)
        });
    let optional = |text: &mut SpanText, index: usize| -> Result<Option<TextSpan>> {
        Ok(row
            .get::<Option<&str>>(index)?
            .map(|value| text.push(prefix(value, ERROR_SCAN_BYTES))))
    };
    Ok(PartRow {
        seq,
        ord: row.get(1)?,
        kind,
        body: text.push(body),
        name: text.push(row.get::<Option<&str>>(4)?.unwrap_or_default()),
        status: text.push(row.get::<Option<&str>>(5)?.unwrap_or_default()),
        error: optional(text, 6)?,
        output: optional(text, 7)?,
        file_ids: row.get::<Option<&str>>(8)?.map(|ids| text.push(ids)),
        file_ref,
    })
}
