//! Pruning: completed tool outputs outside the protected tail and a window of
//! the newest output tokens are replaced by one-line markers, in one transaction.

use std::collections::HashMap;

use crate::db::backend::args;

use crate::compaction::span::{Members, NOT_MEMBER};
use crate::context::view::ItemKind;
use crate::db::gate::transact;
use crate::db::id_list::split_ids;
use crate::error::{Error, Result};
use crate::ids::now_ms;
use crate::plan::Tail;
use crate::render::{self};
use crate::store::Store;

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
            crate::recall::index::move_backlog(tx)?;
            tx.execute(
                "UPDATE sessions SET view_version = view_version + 1 WHERE id = ?1",
                args![session_id],
            )?;
            Ok(())
        })?;
        self.views.forget(session_id);
        Ok(tombstones.len() as i64)
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
