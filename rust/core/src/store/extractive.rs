//! The store side of the built-in extractive summariser: reading what it scans of
//! a span's parts and gathering from them, the older and the newer half of a large
//! span at once, each on its own connection and thread.

use rusqlite::{params, Connection};

use super::compaction::{IdList, Members, TextResult};
use super::messages::split_ids;
use super::Store;
use crate::error::{Error, Result};
use crate::extractive::{Collection, SourceFileRef, SourceMessage, SourceTool};
use crate::fileids::merge_file_id_footer;
use crate::threads::beside;

/// Characters of each part the extractive summariser reads (it scans no more):
/// of a text, of a tool input, of an error, and of the output of a failed call
/// that has no error text. Other tool outputs are not read at all.
const TEXT_CHARS: usize = 2048;
const INPUT_CHARS: usize = 4096;
const ERROR_CHARS: usize = 1024;

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

impl Store {
    /// The built-in extractive summary (no model) of view messages, within `max_tokens`.
    pub fn extractive_summary(
        &mut self,
        message_ids: &[String],
        max_tokens: i64,
    ) -> Result<TextResult> {
        let Some(first) = message_ids.first() else {
            return Err(Error::invalid(
                "message_ids",
                "must name at least one message",
            ));
        };
        let session_id = self.session_of_message(first)?;
        let members = self.span_members(&session_id, message_ids)?;
        let counter = self.counter(&session_id)?;
        let (mut older_text, mut newer_text) = (SpanText::default(), SpanText::default());
        let (mut older_messages, mut newer_messages) = (Vec::new(), Vec::new());
        let gathered = if members.len() >= PARALLEL_MIN_MESSAGES && self.open_reader() {
            let [older, newer] = members.halves();
            let (conn, reader) = (&self.conn, self.reader.as_mut().expect("opened above"));
            let (session, members) = (session_id.as_str(), &members);
            let (text, messages) = (&mut newer_text, &mut newer_messages);
            let (older, newer) = beside(
                || {
                    gather(
                        conn,
                        session,
                        members,
                        older,
                        &mut older_text,
                        &mut older_messages,
                    )
                },
                move || gather(reader, session, members, newer, text, messages),
            );
            let (older, newer) = (older?, newer?);
            let mut file_ids = IdList::default();
            file_ids.extend(older.file_ids);
            file_ids.extend(newer.file_ids);
            Gathered {
                collection: older.collection.merge(newer.collection),
                file_ids: file_ids.ids,
            }
        } else {
            let whole = (members.low, members.high);
            gather(
                &self.conn,
                &session_id,
                &members,
                whole,
                &mut older_text,
                &mut older_messages,
            )?
        };
        let limit = max_tokens.max(0) as usize;
        let body = gathered
            .collection
            .summary(limit, &|text| counter.count(text));
        let text = merge_file_id_footer(&body, &gathered.file_ids);
        Ok(TextResult {
            token_count: counter.count(&text) as i64,
            text,
            message_ids: message_ids.to_vec(),
            file_ids: gathered.file_ids,
        })
    }

    /// Opens the second connection a large span is read with, once; false when
    /// the database is not a file another connection can open.
    fn open_reader(&mut self) -> bool {
        if self.reader.is_none() && !self.reader_failed {
            self.reader = super::open_reader(&self.path);
            self.reader_failed = self.reader.is_none();
        }
        self.reader.is_some()
    }
}

/// Reads the member messages with `msg_seq` in `range` into `text` and
/// `messages`, and gathers from them.
fn gather<'a>(
    conn: &Connection,
    session_id: &str,
    members: &Members,
    range: (i64, i64),
    text: &'a mut SpanText,
    messages: &'a mut Vec<SourceMessage<'a>>,
) -> Result<Gathered<'a>> {
    read_parts(conn, session_id, members, range, text)?;
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

/// Reads what the summariser scans of the parts of the member messages with
/// `msg_seq` in `range`, in message and part order.
fn read_parts(
    conn: &Connection,
    session_id: &str,
    members: &Members,
    range: (i64, i64),
    text: &mut SpanText,
) -> Result<()> {
    // Only what the summariser scans is loaded: loading every tool output would
    // dominate the cost of a large span. Texts are read in place and cut here:
    // an SQL expression over them would copy each one first.
    let columns = format!(
        "msg_seq, ord, kind, body, tool_name, tool_status, tool_error,
         CASE WHEN tool_status = 'error' AND tool_error IS NULL
              THEN (SELECT substr(output, 1, {ERROR_CHARS})
                    FROM tool_outputs WHERE part_pk = parts.pk) END,
         file_ids"
    );
    scan_in_rowid_order(conn, session_id, range, &columns, |row| {
        let seq: i64 = row.get(0)?;
        if members.slot(seq).is_some() {
            let part = part_row(row, seq, text)?;
            text.rows.push(part);
        }
        Ok(())
    })?;
    // Rows come in storage order, which is message order unless a streamed
    // message was finished after a later one was stored.
    if !text.rows.is_sorted_by_key(|row| (row.seq, row.ord)) {
        text.rows.sort_by_key(|row| (row.seq, row.ord));
    }
    Ok(())
}

/// One row of [`read_parts`], its strings cut and copied into `text`.
fn part_row(row: &rusqlite::Row<'_>, seq: i64, text: &mut SpanText) -> Result<PartRow> {
    let kind = match row.get_ref(2)?.as_str()? {
        "text" => PartKind::Text,
        "tool" => PartKind::Tool,
        _ => PartKind::FileRef,
    };
    let body = row.get_ref(3)?.as_str()?;
    let body = match kind {
        PartKind::Text => prefix_chars(body, TEXT_CHARS),
        PartKind::Tool => prefix_chars(body, INPUT_CHARS),
        PartKind::FileRef => body,
    };
    let file_ref = (kind == PartKind::FileRef)
        .then(|| serde_json::from_str::<serde_json::Value>(body).ok())
        .flatten()
        .map(|value| {
            let id = text.push(value["file_id"].as_str().unwrap_or_default());
            let path = text.push(value["path"].as_str().unwrap_or_default());
            (id, path)
        });
    let optional = |text: &mut SpanText, index: usize| -> Result<Option<TextSpan>> {
        Ok(row
            .get_ref(index)?
            .as_str_or_null()?
            .map(|value| text.push(prefix_chars(value, ERROR_CHARS))))
    };
    Ok(PartRow {
        seq,
        ord: row.get(1)?,
        kind,
        body: text.push(body),
        name: text.push(row.get_ref(4)?.as_str_or_null()?.unwrap_or_default()),
        status: text.push(row.get_ref(5)?.as_str_or_null()?.unwrap_or_default()),
        error: optional(text, 6)?,
        output: optional(text, 7)?,
        file_ids: row.get_ref(8)?.as_str_or_null()?.map(|ids| text.push(ids)),
        file_ref,
    })
}

/// Calls `each` with the given columns of every part of the session with
/// `msg_seq` in `low..=high`, in storage (rowid) order: a walk along the table
/// instead of one index lookup per part, for scans that read most columns.
fn scan_in_rowid_order(
    conn: &Connection,
    session_id: &str,
    (low, high): (i64, i64),
    columns: &str,
    mut each: impl FnMut(&rusqlite::Row<'_>) -> Result<()>,
) -> Result<()> {
    let (first, last): (Option<i64>, Option<i64>) = conn
        .prepare_cached(
            "SELECT min(rowid), max(rowid) FROM parts
             WHERE session_id = ?1 AND msg_seq BETWEEN ?2 AND ?3",
        )?
        .query_row(params![session_id, low, high], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })?;
    let (Some(first), Some(last)) = (first, last) else {
        return Ok(());
    };
    let mut stmt = conn.prepare_cached(&format!(
        // The unary + keeps SQLite on the rowid range rather than an index.
        "SELECT {columns} FROM parts WHERE rowid BETWEEN ?1 AND ?2
           AND +session_id = ?3 AND +msg_seq BETWEEN ?4 AND ?5"
    ))?;
    let mut rows = stmt.query(params![first, last, session_id, low, high])?;
    while let Some(row) = rows.next()? {
        each(row)?;
    }
    Ok(())
}

/// The first `limit` characters of `text` (all of it when shorter).
fn prefix_chars(text: &str, limit: usize) -> &str {
    if text.len() <= limit {
        return text;
    }
    match text.char_indices().nth(limit) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}
