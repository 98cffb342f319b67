//! Expanding a summary back into a window of its source messages.
//!
//! Every summary stores its seq span and how many messages it covers. So a
//! window is found without listing every source: read the summary's sources in a
//! range of seqs around the anchor (walking only into children whose span meets
//! it), read further only when the window reaches the edge of what is read, and
//! count what lies before the window from the stored counts of whole children.
//! The cost follows the DAG's depth, its fan-out and the window, not the number
//! of messages covered.

use std::fmt::Write as _;

use crate::db::backend::args;

use crate::error::{Error, Result};
use crate::history::load::row_to_part;
use crate::query;
use crate::recall::dag_walk::{Child, Side, Source};
use crate::render::{transcript_entry, StoredPart};
use crate::store::Store;
use crate::window::{grow, Growth, Window};

/// Where an expansion's window starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Focus {
    /// The oldest source message, growing newer.
    Oldest,
    /// Centred on this source message.
    Around(String),
    /// Centred on the source message that best matches these words.
    Query(String),
    /// The messages just older than this source message, newest shown last.
    Before(String),
    /// The messages just newer than this source message.
    After(String),
}

/// A summary expanded back into a window of its source messages.
#[derive(Clone, Debug, Default)]
pub struct Expansion {
    pub summary_id: String,
    pub session_id: String,
    pub messages: Vec<ExpandedMessage>,
    pub tokens: i64,
    pub total_messages: i64,
    pub omitted_messages: i64,
    /// Source messages older than the window.
    pub messages_before: i64,
    /// Source messages newer than the window.
    pub messages_after: i64,
    /// The message the window was centred on (`Around`, or the best `Query` match).
    pub focus_id: Option<String>,
    /// Pass as `Before` for the page of older messages; `None` when there are none.
    pub before_cursor: Option<String>,
    /// Pass as `After` for the page of newer messages; `None` when there are none.
    pub after_cursor: Option<String>,
    pub note: String,
}

/// One source message in an [`Expansion`].
#[derive(Clone, Debug)]
pub struct ExpandedMessage {
    pub id: String,
    pub seq: i64,
    pub role: String,
    pub text: String,
    pub tokens: i64,
}

/// The source messages loaded so far around the anchor: all of the root's with a
/// seq in `lo..=hi`.
struct Loaded {
    root: Child,
    run: Vec<Source>,
    anchor: usize,
    lo: i64,
    hi: i64,
}

/// Seqs read on each side of an anchor at first; each further read doubles the range.
const FIRST_READ: i64 = 48;

/// How many full-text matches a focus query looks through for one under the summary.
const QUERY_CANDIDATES: i64 = 64;

impl Store {
    /// A window of the source messages of a summary (through condensed summaries),
    /// as many as fit `max_tokens`, placed by `focus`, with what lies on each side.
    pub fn expand_window(
        &mut self,
        summary_id: &str,
        focus: &Focus,
        max_tokens: i64,
    ) -> Result<Expansion> {
        if max_tokens < 1 {
            return Err(Error::invalid("max_tokens", "must be at least 1"));
        }
        let root = self.summary(summary_id)?;
        let root_child = Child {
            id: root.id.clone(),
            leaf: root.kind == "leaf",
            start: root.span_start_seq,
            end: root.span_end_seq,
            count: root.message_count,
        };
        let (anchor_id, growth, focus_id, fallback) = self.anchor_of(&root_child, focus)?;
        let field = match focus {
            Focus::Before(_) => "before",
            Focus::After(_) => "after",
            _ => "around",
        };
        let mut loaded = match &anchor_id {
            Some(id) => self.load_at(&root_child, id, field)?,
            None => self.load_oldest(&root_child)?,
        };
        // A cursor names the last message shown: the page goes on past it.
        let moved = match focus {
            Focus::Before(_) => self.step(&mut loaded, Side::Older)?,
            Focus::After(_) => self.step(&mut loaded, Side::Newer)?,
            _ => true,
        };
        let (window, nothing_on) = if moved {
            (self.grow_loaded(&mut loaded, growth, max_tokens)?, None)
        } else {
            let side = if growth == Growth::Backward {
                Side::Older
            } else {
                Side::Newer
            };
            (empty_at(loaded.anchor), Some(side))
        };
        let mut expansion = self.window_expansion(&root, &loaded, window, nothing_on)?;
        expansion.focus_id = focus_id;
        expansion.note = match (nothing_on, &anchor_id) {
            (Some(side), Some(cursor)) => format!(
                "no source message {} than {cursor}; {} source messages in all",
                if side == Side::Older {
                    "older"
                } else {
                    "newer"
                },
                expansion.total_messages
            ),
            _ => note(&expansion, max_tokens, fallback),
        };
        Ok(expansion)
    }

    /// Where the window of `focus` starts (a message id, or the oldest source for
    /// `None`), which way it grows, the message it is centred on, and whether a
    /// query matched nothing.
    fn anchor_of(
        &mut self,
        root: &Child,
        focus: &Focus,
    ) -> Result<(Option<String>, Growth, Option<String>, bool)> {
        Ok(match focus {
            Focus::Oldest => (None, Growth::Forward, None, false),
            Focus::Around(id) => (Some(id.clone()), Growth::Centred, Some(id.clone()), false),
            Focus::Before(id) => (Some(id.clone()), Growth::Backward, None, false),
            Focus::After(id) => (Some(id.clone()), Growth::Forward, None, false),
            Focus::Query(words) => match self.best_match(root, words)? {
                Some(id) => (Some(id.clone()), Growth::Centred, Some(id), false),
                None => (None, Growth::Forward, None, true),
            },
        })
    }

    /// The source messages of a summary, oldest first, as many as fit `max_tokens`.
    pub fn expand(&mut self, summary_id: &str, max_tokens: i64) -> Result<Expansion> {
        self.expand_window(summary_id, &Focus::Oldest, max_tokens)
    }

    /// The window grown from the anchor, reading further while it reaches the edge
    /// of what is loaded.
    fn grow_loaded(&self, loaded: &mut Loaded, growth: Growth, budget: i64) -> Result<Window> {
        loop {
            let costs: Vec<i64> = loaded.run.iter().map(|source| source.tokens).collect();
            let window = grow(&costs, loaded.anchor, growth, budget);
            let older = window.open_before && self.load_next(loaded, Side::Older)?;
            let newer = window.open_after && self.load_next(loaded, Side::Newer)?;
            if !older && !newer {
                return Ok(window);
            }
        }
    }

    /// Moves the anchor one message to `side`, reading further when needed; false
    /// when there is no message there.
    fn step(&self, loaded: &mut Loaded, side: Side) -> Result<bool> {
        match side {
            Side::Older => {
                while loaded.anchor == 0 {
                    if !self.load_next(loaded, Side::Older)? {
                        return Ok(false);
                    }
                }
                loaded.anchor -= 1;
            }
            Side::Newer => {
                while loaded.anchor + 1 >= loaded.run.len() {
                    if !self.load_next(loaded, Side::Newer)? {
                        return Ok(false);
                    }
                }
                loaded.anchor += 1;
            }
        }
        Ok(true)
    }

    /// Reads the seqs beyond the loaded range on `side` (as many again as are
    /// loaded); false when the range already reaches the root's span there.
    fn load_next(&self, loaded: &mut Loaded, side: Side) -> Result<bool> {
        let width = (loaded.hi - loaded.lo + 1).max(FIRST_READ);
        match side {
            Side::Older => {
                if loaded.lo <= loaded.root.start {
                    return Ok(false);
                }
                let lo = (loaded.lo - width).max(loaded.root.start);
                let sources = self.sources_in(&loaded.root, lo, loaded.lo - 1)?;
                loaded.anchor += sources.len();
                loaded.run.splice(0..0, sources);
                loaded.lo = lo;
            }
            Side::Newer => {
                if loaded.hi >= loaded.root.end {
                    return Ok(false);
                }
                let hi = (loaded.hi + width).min(loaded.root.end);
                let sources = self.sources_in(&loaded.root, loaded.hi + 1, hi)?;
                loaded.run.extend(sources);
                loaded.hi = hi;
            }
        }
        Ok(true)
    }

    /// The oldest source messages of `root`, loaded, anchored on the oldest.
    fn load_oldest(&self, root: &Child) -> Result<Loaded> {
        let hi = root.end.min(root.start + 2 * FIRST_READ);
        Ok(Loaded {
            run: self.sources_in(root, root.start, hi)?,
            anchor: 0,
            lo: root.start,
            hi,
            root: root.clone(),
        })
    }

    /// The source messages of `root` around `message_id`, loaded, anchored on it;
    /// `field` names the argument in the error when it is not a source.
    fn load_at(&self, root: &Child, message_id: &str, field: &str) -> Result<Loaded> {
        let not_a_source = || {
            Error::invalid(
                field,
                format!("{message_id} is not a source message of {}", root.id),
            )
        };
        let seq = self
            .source_seq(root, message_id)?
            .ok_or_else(not_a_source)?;
        let (lo, hi) = (
            (seq - FIRST_READ).max(root.start),
            (seq + FIRST_READ).min(root.end),
        );
        let run = self.sources_in(root, lo, hi)?;
        let anchor = run
            .iter()
            .position(|source| source.id == message_id)
            .ok_or_else(not_a_source)?;
        Ok(Loaded {
            root: root.clone(),
            run,
            anchor,
            lo,
            hi,
        })
    }

    /// Whether `message_id` is a source message of `root`.
    fn is_source(&self, root: &Child, message_id: &str) -> Result<bool> {
        let Some(seq) = self.source_seq(root, message_id)? else {
            return Ok(false);
        };
        let sources = self.sources_in(root, seq, seq)?;
        Ok(sources.iter().any(|source| source.id == message_id))
    }

    /// The source message of `root` that best matches `words` (bm25 over the
    /// full-text index, any of the words, as `grep` reads a query), if one does.
    /// A fork's summary may cover messages its parent holds: each session of the
    /// span is searched for its own part of it.
    fn best_match(&mut self, root: &Child, words: &str) -> Result<Option<String>> {
        let session_id = self.summary(&root.id)?.session_id;
        let lineage = self.lineage(&session_id)?;
        let mut candidates = Vec::new();
        for (holder, start, end) in lineage.clip(root.start, root.end) {
            candidates.extend(self.held_matches(holder, (start, end), words)?);
        }
        candidates.sort_by(|a, b| a.1.total_cmp(&b.1));
        self.first_source(root, candidates)
    }

    /// The best matches of `words` among `session_id`'s own messages in `span`.
    fn held_matches(
        &mut self,
        session_id: &str,
        span: (i64, i64),
        words: &str,
    ) -> Result<Vec<(String, f64)>> {
        if self.conn.is_postgres() {
            self.index_backlog_before_search()?;
            return self.best_matches_postgres(words, session_id, span, QUERY_CANDIDATES);
        }
        if !self.read_only {
            // The index is fed from a backlog: move it in first, as grep does.
            self.flush_search_index()?;
        }
        let terms = self.search_terms()?;
        let parsed = query::parse(words, &terms)?;
        // As grep does: a word in most of the store is dropped while rarer ones are
        // left, and bm25 scores the newest matches in the span, not all of them.
        let (matches, rows) = self.word_matches(&parsed.optional, &terms)?;
        let lean = parsed.without_common(&matches, rows);
        let query = lean.to_fts(&terms);
        let (lo, hi) = self.span_rowids(session_id, span.0, span.1)?;
        let mut candidates: Vec<(String, f64)> = self
            .conn
            .prepare_cached(
                "SELECT m.id, bm25(fts) FROM fts JOIN messages m ON m.id = fts.owner_id
                 WHERE fts MATCH ?1 AND fts.session_id = ?2 AND m.seq BETWEEN ?3 AND ?4
                   AND fts.rowid BETWEEN max(?6, COALESCE((SELECT min(rowid) FROM (
                       SELECT rowid FROM fts WHERE fts MATCH ?1 AND rowid BETWEEN ?6 AND ?7
                       ORDER BY rowid DESC LIMIT ?8)), ?6)) AND ?7
                 ORDER BY bm25(fts) LIMIT ?5",
            )?
            .query_map(
                args![
                    query,
                    session_id,
                    span.0,
                    span.1,
                    QUERY_CANDIDATES,
                    lo,
                    hi,
                    query::candidates(&lean) as i64
                ],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )?
            .into_iter()
            .collect::<_>();
        if self.read_only {
            // A read-only store cannot move the backlog: it ranks the queued rows apart.
            let terms = self.stemmed_terms()?;
            let pending = query::parse(words, &terms)?.to_fts(&terms);
            candidates.extend(self.pending_matches(
                &pending,
                session_id,
                span,
                QUERY_CANDIDATES,
            )?);
        }
        Ok(candidates)
    }

    /// The first of `candidates` that is a source message of `root`.
    fn first_source(&self, root: &Child, candidates: Vec<(String, f64)>) -> Result<Option<String>> {
        for (id, _) in candidates {
            // A message inside the span may be outside the summary (a reply that
            // never finished is not in the view, so no summary covers it).
            if self.is_source(root, &id)? {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }

    /// The index rowids of the parts of the session's messages in `start..=end`
    /// (parts' rowids), lowest and highest; an empty range when there are none.
    fn span_rowids(&self, session_id: &str, start: i64, end: i64) -> Result<(i64, i64)> {
        let (lo, hi): (Option<i64>, Option<i64>) = self
            .conn
            .prepare_cached(
                "SELECT min(pk), max(pk) FROM parts
                 WHERE session_id = ?1 AND msg_seq BETWEEN ?2 AND ?3",
            )?
            .query_row(args![session_id, start, end], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })?;
        Ok((lo.unwrap_or(1), hi.unwrap_or(0)))
    }

    /// The expansion of `window` over the loaded run, its messages rendered. An
    /// empty window stands at the anchor, which alone was over the budget; with
    /// `nothing_on` a cursor was already at the oldest or newest source.
    fn window_expansion(
        &self,
        root: &crate::store::SummaryRow,
        loaded: &Loaded,
        window: Window,
        nothing_on: Option<Side>,
    ) -> Result<Expansion> {
        let shown = &loaded.run[window.start..window.end];
        let messages = self.render_sources(&root.session_id, shown)?;
        let total = root.message_count;
        let mut expansion = Expansion {
            summary_id: root.id.clone(),
            session_id: root.session_id.clone(),
            tokens: window.tokens,
            total_messages: total,
            omitted_messages: total - messages.len() as i64,
            messages,
            ..Expansion::default()
        };
        match nothing_on {
            Some(Side::Older) => expansion.messages_after = total,
            Some(Side::Newer) => expansion.messages_before = total,
            None if loaded.run.is_empty() => {}
            None => {
                // An empty window leaves out its anchor: it is on neither side.
                let end = window.end.max(window.start + 1);
                let first = &loaded.run[window.start];
                let last = &loaded.run[end - 1];
                expansion.messages_before = self.count_below(&loaded.root, first.seq)?;
                expansion.messages_after =
                    total - expansion.messages_before - (end - window.start) as i64;
                expansion.before_cursor = (expansion.messages_before > 0).then(|| first.id.clone());
                expansion.after_cursor = (expansion.messages_after > 0).then(|| last.id.clone());
            }
        }
        Ok(expansion)
    }

    /// The sources rendered as the transcript shows them, pruned outputs restored.
    fn render_sources(&self, session_id: &str, shown: &[Source]) -> Result<Vec<ExpandedMessage>> {
        let (Some(first), Some(last)) = (shown.first(), shown.last()) else {
            return Ok(Vec::new());
        };
        // Every part of the window in one walk, in message order.
        let mut stmt = self.conn.prepare_cached(
            "SELECT p.id, p.kind, p.body, p.tool_name, p.call_id, p.tool_status, o.output,
                    p.tool_error, p.compacted_at, p.file_ids, p.msg_seq
             FROM parts p LEFT JOIN tool_outputs o ON o.part_pk = p.pk
             WHERE p.session_id = ?1 AND p.msg_seq BETWEEN ?2 AND ?3 ORDER BY p.msg_seq, p.ord",
        )?;
        let mut parts: Vec<(i64, StoredPart)> = Vec::new();
        for (holder, low, high) in self.lineage(session_id)?.clip(first.seq, last.seq) {
            let mut rows = stmt.query(args![holder, low, high])?;
            while let Some(ref row) = rows.next()? {
                let seq: i64 = row.get(10)?;
                // Expanding restores what pruning took out of the view: originals,
                // not markers.
                let part = StoredPart {
                    tombstone: None,
                    ..row_to_part(row)??
                };
                parts.push((seq, part));
            }
        }
        let mut messages = Vec::with_capacity(shown.len());
        let mut next = 0;
        for source in shown {
            while parts.get(next).is_some_and(|(seq, _)| *seq < source.seq) {
                next += 1;
            }
            let from = next;
            while parts.get(next).is_some_and(|(seq, _)| *seq == source.seq) {
                next += 1;
            }
            let own: Vec<StoredPart> = parts[from..next].iter().map(|(_, p)| p.clone()).collect();
            messages.push(ExpandedMessage {
                id: source.id.clone(),
                seq: source.seq,
                role: source.role.clone(),
                text: transcript_entry(source.seq, &source.role, &own, None),
                tokens: source.tokens,
            });
        }
        Ok(messages)
    }
}

/// An empty window standing at `anchor`.
fn empty_at(anchor: usize) -> Window {
    Window {
        start: anchor,
        end: anchor,
        tokens: 0,
        open_before: false,
        open_after: false,
    }
}

/// What the window shows and how to page on from it.
fn note(expansion: &Expansion, max_tokens: i64, fallback: bool) -> String {
    let shown = expansion.messages.len();
    let total = expansion.total_messages;
    let mut note = if fallback {
        String::from("no source message matched the query; showing the oldest. ")
    } else {
        String::new()
    };
    if expansion.omitted_messages == 0 {
        let _ = write!(note, "all {total} source messages shown");
        return note;
    }
    let _ = write!(
        note,
        "{shown} of {total} source messages shown within {max_tokens} tokens; {} left out",
        expansion.omitted_messages
    );
    if let Some(cursor) = &expansion.before_cursor {
        let _ = write!(
            note,
            "; {} older: page back with before={cursor}",
            expansion.messages_before
        );
    }
    if let Some(cursor) = &expansion.after_cursor {
        let _ = write!(
            note,
            "; {} newer: page on with after={cursor}",
            expansion.messages_after
        );
    }
    if shown == 0 {
        // An empty window stands at a message that alone is over the budget.
        if let Some(at) = expansion
            .focus_id
            .as_ref()
            .or(expansion.before_cursor.as_ref())
            .or(expansion.after_cursor.as_ref())
        {
            let _ = write!(
                note,
                "; {at} alone is over the budget: read it page by page"
            );
        }
    }
    note
}
