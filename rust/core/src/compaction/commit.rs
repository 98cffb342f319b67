//! Committing a summary: its row, its DAG edges and the swap of its sources for
//! it in the context view, in one transaction.

use std::collections::HashSet;

use crate::db::backend::{args, Conn};

use crate::compaction::span::{locate, Members};
use crate::compaction::summaries::SummaryRow;
use crate::context::view::ItemKind;
use crate::db::gate::transact;
use crate::db::id_list::{join_ids, IdList};
use crate::error::{Error, Result};
use crate::fileids::extract_file_ids;
use crate::ids::{new_id, now_ms};
use crate::parts::check_content;
use crate::recall::index::{move_backlog, queue_summary};
use crate::render;
use crate::store::Store;
use crate::tokens::TokenCounter;

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

impl Store {
    /// Commits a summary in one transaction: the summary row with a file-id footer
    /// covering all its sources, its DAG edges (one per source, in order),
    /// superseded marks on condensed parents, and the swap of its sources for it in
    /// the context view. Fails, changing nothing, if a source is not in the view
    /// (invalid input) or left it meanwhile (conflict), if a source message holds a
    /// tool call that has not finished, or, when `expected_version` is given, if
    /// the view changed at all (conflict).
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
            return Err(Error::invalid(
                "level",
                format!("expected 1, 2 or 3, got {level}"),
            ));
        }
        let counter = self.counter(session_id)?;
        let plan = self.plan_commit(session_id, source_message_ids, source_summary_ids)?;
        let mut file_ids = IdList::default();
        if let Some(members) = &plan.members {
            file_ids.extend(self.members_file_ids(session_id, members)?);
        }
        for parent in &plan.parents {
            file_ids.extend(parent.file_ids.iter().cloned());
        }
        let text = crate::parts::merge_reference_footer(text, &file_ids.ids);
        let summary = NewSummary::new(&counter, new_id("sum"), &plan, text, level);
        transact(&self.conn, &self.writer, Some(session_id), |tx| {
            write_sources(tx, session_id, &plan, &summary.id, expected_version)?;
            write_summary(tx, session_id, &plan, &summary)
        })?;
        self.views.forget(session_id);
        Ok(plan.result(summary))
    }

    /// Checks the sources of a summary and works out what it covers and where it goes.
    pub(crate) fn plan_commit<'s>(
        &mut self,
        session_id: &str,
        message_ids: &'s [String],
        summary_ids: &'s [String],
    ) -> Result<CommitPlan<'s>> {
        let (kind, ids) = match (message_ids.is_empty(), summary_ids.is_empty()) {
            (false, true) => (ItemKind::Message, message_ids),
            (true, false) => (ItemKind::Summary, summary_ids),
            _ => {
                return Err(Error::invalid(
                    "sources",
                    "a summary covers either messages (leaf) or summaries (condensed), and at least one",
                ))
            }
        };
        let parents: Vec<SummaryRow> = summary_ids
            .iter()
            .map(|id| self.summary(id))
            .collect::<Result<_>>()?;
        let unfinished = if kind == ItemKind::Message {
            self.unfinished_seqs(session_id)?
        } else {
            HashSet::new()
        };
        let view = self.fresh_view(session_id)?;
        let found = locate(&view.items, kind, ids, "sources", session_id)?;
        // (view index, index in `ids`), in view order.
        let mut order: Vec<(usize, usize)> = found.iter().copied().zip(0..).collect();
        order.sort_unstable();
        let mut plan = CommitPlan {
            kind,
            sources: ids,
            positions: Vec::with_capacity(order.len()),
            contiguous: order.windows(2).all(|pair| pair[1].0 == pair[0].0 + 1),
            view_version: view.version,
            source_tokens: 0,
            view_tokens: view.tokens,
            span: (i64::MAX, i64::MIN),
            messages_covered: message_ids.len() as i64,
            depth: 0,
            parents: Vec::new(),
            members: None,
        };
        for &(index, source) in &order {
            let item = &view.items[index];
            if unfinished.contains(&item.seq) && kind == ItemKind::Message {
                return Err(Error::invalid(
                    "source_message_ids",
                    format!(
                        "{} holds a tool call that has not finished: a summary could not carry its result",
                        item.id
                    ),
                ));
            }
            plan.positions.push((item.position, source));
            plan.source_tokens += item.tokens;
            if item.kind == ItemKind::Message {
                plan.span = (plan.span.0.min(item.seq), plan.span.1.max(item.seq));
            }
        }
        if kind == ItemKind::Message {
            plan.members = Some(Members::new(&view.items, &found));
        }
        for parent in &parents {
            plan.messages_covered += parent.message_count;
            plan.span = (
                plan.span.0.min(parent.span_start_seq),
                plan.span.1.max(parent.span_end_seq),
            );
            plan.depth = plan.depth.max(parent.depth + 1);
        }
        plan.parents = parents;
        Ok(plan)
    }
}

/// What a commit plans to change, worked out before its transaction.
pub(crate) struct CommitPlan<'s> {
    kind: ItemKind,
    /// The sources as the caller named them: the order of the DAG edges.
    sources: &'s [String],
    /// View positions of the sources, each with its index in `sources`, in view order.
    positions: Vec<(i64, usize)>,
    /// The sources are one unbroken run of view items.
    contiguous: bool,
    view_version: i64,
    /// View tokens of the sources, and of the whole view.
    pub(crate) source_tokens: i64,
    view_tokens: i64,
    span: (i64, i64),
    messages_covered: i64,
    depth: i64,
    parents: Vec<SummaryRow>,
    /// The source messages of a leaf summary.
    pub(crate) members: Option<Members>,
}

impl CommitPlan<'_> {
    /// What committing `summary` under this plan changed.
    pub(crate) fn result(&self, summary: NewSummary) -> CommitResult {
        CommitResult {
            token_count: summary.tokens,
            tokens_before: self.view_tokens,
            tokens_after: self.view_tokens - self.source_tokens + summary.tokens,
            messages_covered: self.messages_covered,
            summary_id: summary.id,
            file_ids: summary.file_ids,
        }
    }
}

/// A summary ready to insert.
pub(crate) struct NewSummary {
    pub(crate) id: String,
    level: i64,
    text: String,
    /// What the summary costs in the view, its header included.
    pub(crate) tokens: i64,
    file_ids: Vec<String>,
}

impl NewSummary {
    /// The summary `id` of `text` (its file-id footer merged in) under `plan`.
    pub(crate) fn new(
        counter: &TokenCounter,
        id: String,
        plan: &CommitPlan<'_>,
        text: String,
        level: i64,
    ) -> Self {
        NewSummary {
            tokens: render::summary_tokens(counter, &id, plan.messages_covered, &text) as i64,
            file_ids: extract_file_ids(&text),
            id,
            level,
            text,
        }
    }
}

/// The writes of a commit that do not depend on the summary's text, inside `tx`:
/// the DAG edges to the sources, superseded marks on condensed parents, and the
/// removal of the sources from the view.
pub(crate) fn write_sources(
    tx: &Conn,
    session_id: &str,
    plan: &CommitPlan<'_>,
    summary_id: &str,
    expected_version: Option<i64>,
) -> Result<()> {
    let version: i64 = tx.query_row(
        "SELECT view_version FROM sessions WHERE id = ?1",
        args![session_id],
        |row| row.get(0),
    )?;
    if expected_version.is_some_and(|expected| expected != version) {
        return Err(Error::Conflict(format!(
            "the view of {session_id} changed (now version {version})"
        )));
    }
    let source_kind = match plan.kind {
        ItemKind::Message => "message",
        ItemKind::Summary => "summary",
    };
    // One statement for every edge: a span can hold tens of thousands of messages.
    let sources = serde_json::to_string(&plan.sources)
        .map_err(|err| Error::invalid("sources", err.to_string()))?;
    let edges = tx
        .prepare_cached(tx.dialect(
            "INSERT INTO summary_sources (summary_id, ord, source_kind, source_id)
             SELECT ?1, key, ?2, value FROM json_each(?3)",
            "INSERT INTO summary_sources (summary_id, ord, source_kind, source_id)
             SELECT ?1, e.ord - 1, ?2, e.value
             FROM jsonb_array_elements_text(CAST(?3 AS jsonb)) WITH ORDINALITY AS e(value, ord)",
        ))?
        .execute(args![summary_id, source_kind, sources])?;
    if edges != plan.sources.len() {
        return Err(Error::Sqlite(format!(
            "wrote {edges} of {} summary sources",
            plan.sources.len()
        )));
    }
    let mut supersede = tx.prepare_cached(
        "UPDATE summaries SET superseded_by = ?2 WHERE id = ?1 AND superseded_by IS NULL",
    )?;
    for parent in &plan.parents {
        if supersede.execute(args![parent.id, summary_id])? != 1 {
            return Err(Error::Conflict(format!(
                "summary {} was already condensed",
                parent.id
            )));
        }
    }
    remove_sources(tx, session_id, plan, version)
}

/// The summary's own writes, inside `tx` after [`write_sources`]: its row, its
/// place in the search backlog, and its item in the view where its sources were.
pub(crate) fn write_summary(
    tx: &Conn,
    session_id: &str,
    plan: &CommitPlan<'_>,
    summary: &NewSummary,
) -> Result<()> {
    let kind = match plan.kind {
        ItemKind::Message => "leaf",
        ItemKind::Summary => "condensed",
    };
    let summary_pk: i64 = tx.prepare_cached(
        "INSERT INTO summaries (id, session_id, kind, level, text, token_count, span_start_seq, span_end_seq,
                                message_count, depth, file_ids, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) RETURNING pk",
    )?
    .query_row(args![
        summary.id,
        session_id,
        kind,
        summary.level,
        summary.text,
        summary.tokens,
        plan.span.0,
        plan.span.1,
        plan.messages_covered,
        plan.depth,
        join_ids(&summary.file_ids),
        now_ms(),
    ], |row| row.get(0))?;
    queue_summary(tx, summary_pk)?;
    // What leaves the view is indexed in the transaction that takes it out, so
    // recall (which never indexes at query time) finds every message a summary covers.
    move_backlog(tx)?;
    tx.prepare_cached(
        "INSERT INTO context_items (session_id, position, kind, item_id, token_count) VALUES (?1, ?2, 'summary', ?3, ?4)",
    )?
    .execute(args![session_id, plan.positions[0].0, summary.id, summary.tokens])?;
    tx.execute(
        "UPDATE sessions SET view_version = view_version + 1 WHERE id = ?1",
        args![session_id],
    )?;
    Ok(())
}

/// Takes a commit's sources out of the view; the view is at `version` now.
fn remove_sources(tx: &Conn, session_id: &str, plan: &CommitPlan<'_>, version: i64) -> Result<()> {
    let (first, last) = (
        plan.positions[0].0,
        plan.positions[plan.positions.len() - 1].0,
    );
    if version == plan.view_version && plan.contiguous {
        // The view is exactly the one planned on and the sources are one run of it.
        let removed = tx
            .prepare_cached(
                "DELETE FROM context_items WHERE session_id = ?1 AND position BETWEEN ?2 AND ?3",
            )?
            .execute(args![session_id, first, last])?;
        if removed != plan.positions.len() {
            return Err(Error::Conflict(format!(
                "the view of {session_id} changed during the commit"
            )));
        }
        return Ok(());
    }
    // Appends may land while a summary is being written; only the sources
    // themselves must still be in the view.
    let mut remove = tx.prepare_cached(
        "DELETE FROM context_items WHERE session_id = ?1 AND position = ?2 AND item_id = ?3",
    )?;
    for &(position, source) in &plan.positions {
        let item_id = &plan.sources[source];
        if remove.execute(args![session_id, position, item_id])? != 1 {
            return Err(Error::Conflict(format!(
                "{item_id} left the view of {session_id}"
            )));
        }
    }
    Ok(())
}
