//! The positions of a handed-over history a session holds (`sync_inputs`), across
//! its lineage: a fork holds its own positions from `sync_from` on and reads the
//! ones before from its parent.

use super::digest::{Digest, DIGEST_BYTES};
use crate::db::backend::args;
use crate::db::gate::Write;
use crate::error::{Error, Result};
use crate::store::Store;

/// How a handed-over history relates to what is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncMatch {
    /// Positions stored.
    pub stored: usize,
    /// The first position where the history differs from what is stored (it may
    /// be `stored` itself when the history is shorter); None when it extends it.
    pub first_difference: Option<usize>,
}

/// Where a history that differs from position `k` on goes its own way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForkPoint {
    /// The last message the fork shares (0: none).
    pub fork_seq: i64,
    /// The first position the fork stores again itself.
    pub replay_from: usize,
}

/// One stored position.
#[derive(Clone, Debug)]
struct InputRow {
    digest: Vec<u8>,
    low_seq: Option<i64>,
    high_seq: i64,
}

impl Store {
    /// Compares the digests of a handed-over history with what `session_id` holds.
    pub fn sync_match(&self, session_id: &str, chain: &[Digest]) -> Result<SyncMatch> {
        let stored = self.sync_len(session_id)?;
        if stored == 0 {
            return Ok(SyncMatch {
                stored,
                first_difference: None,
            });
        }
        if chain.len() >= stored {
            let last = self.sync_row(session_id, stored - 1)?;
            if last.is_some_and(|row| row.digest == chain[stored - 1]) {
                return Ok(SyncMatch {
                    stored,
                    first_difference: None,
                });
            }
        }
        let rows = self.sync_rows(session_id)?;
        let first = rows
            .iter()
            .zip(chain)
            .position(|(row, digest)| row.digest != digest)
            .unwrap_or(chain.len().min(rows.len()));
        Ok(SyncMatch {
            stored,
            first_difference: Some(first),
        })
    }

    /// Stores positions `start..` of a handed-over history: their digests, and for
    /// each the message seqs it wrote (`seqs[i]`: the oldest it created or changed,
    /// None for none, and the newest of the session after it). `start` must be the
    /// number of positions stored.
    pub fn sync_append(
        &mut self,
        session_id: &str,
        start: usize,
        chain: &[Digest],
        seqs: &[(Option<i64>, i64)],
    ) -> Result<()> {
        self.session(session_id)?;
        if seqs.len() != chain.len() {
            return Err(Error::invalid(
                "seqs",
                format!("{} positions but {} digests", seqs.len(), chain.len()),
            ));
        }
        let write = Write::for_session(&self.conn, &self.writer, session_id)?;
        let stored = self.sync_len(session_id)?;
        if start != stored {
            return Err(Error::invalid(
                "messages",
                format!(
                    "the history changed while it was stored: {stored} positions are \
                     stored now, not {start} (two calls of sync at once?)"
                ),
            ));
        }
        let mut insert = write.prepare_cached(
            "INSERT INTO sync_inputs (session_id, position, digest, low_seq, high_seq)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for (offset, (digest, (low_seq, high_seq))) in chain.iter().zip(seqs).enumerate() {
            let position = (start + offset) as i64;
            insert.execute(args![session_id, position, &digest[..], low_seq, high_seq])?;
        }
        drop(insert);
        write.commit()
    }

    /// Where a fork of `session_id` for a history that differs from position `k`
    /// joins it: at the newest message no stored position from `k` on wrote, nor
    /// `extra_low` and after (a message the new history changes: the call a new
    /// tool result answers); the positions that wrote messages after it are stored
    /// again by the fork.
    pub fn sync_fork_point(
        &self,
        session_id: &str,
        k: usize,
        extra_low: Option<i64>,
    ) -> Result<ForkPoint> {
        let rows = self.sync_rows(session_id)?;
        let k = k.min(rows.len());
        let mut fork_seq = if k == 0 { 0 } else { rows[k - 1].high_seq };
        if let Some(low) = extra_low {
            fork_seq = fork_seq.min(low - 1);
        }
        loop {
            let replay_from = rows
                .iter()
                .position(|row| row.high_seq > fork_seq)
                .unwrap_or(rows.len())
                .min(k);
            let lowest = rows[replay_from..]
                .iter()
                .filter_map(|row| row.low_seq)
                .min()
                .unwrap_or(i64::MAX);
            if lowest > fork_seq {
                return Ok(ForkPoint {
                    fork_seq: fork_seq.max(0),
                    replay_from,
                });
            }
            fork_seq = lowest - 1;
        }
    }

    /// How many leading positions of `session_id`'s handed-over history wrote only
    /// messages up to `seq`: what a fork at `seq` shares of it.
    pub fn sync_positions_within(&self, session_id: &str, seq: i64) -> Result<usize> {
        let rows = self.sync_rows(session_id)?;
        Ok(rows
            .iter()
            .position(|row| row.high_seq > seq)
            .unwrap_or(rows.len()))
    }

    /// Positions of a handed-over history `session_id` holds, its parent's included.
    pub fn sync_len(&self, session_id: &str) -> Result<usize> {
        let own: Option<i64> = self
            .conn
            .prepare_cached("SELECT max(position) FROM sync_inputs WHERE session_id = ?1")?
            .query_row(args![session_id], |row| row.get(0))?;
        if let Some(last) = own {
            return Ok(last as usize + 1);
        }
        Ok(self
            .fork_of(session_id)?
            .map_or(0, |fork| fork.sync_from as usize))
    }

    fn sync_row(&self, session_id: &str, position: usize) -> Result<Option<InputRow>> {
        let mut holder = session_id.to_string();
        while let Some(fork) = self.fork_of(&holder)? {
            if position as i64 >= fork.sync_from {
                break;
            }
            holder = fork.parent_id;
        }
        self.conn
            .prepare_cached(
                "SELECT digest, low_seq, high_seq FROM sync_inputs
                 WHERE session_id = ?1 AND position = ?2",
            )?
            .query_opt(args![holder, position as i64], input_row)
    }

    /// Every stored position, in order, across the lineage.
    fn sync_rows(&self, session_id: &str) -> Result<Vec<InputRow>> {
        let mut own = self.conn.query_map(
            "SELECT digest, low_seq, high_seq FROM sync_inputs
             WHERE session_id = ?1 ORDER BY position",
            args![session_id],
            input_row,
        )?;
        let Some(fork) = self.fork_of(session_id)? else {
            return Ok(own);
        };
        let mut rows = self.sync_rows(&fork.parent_id)?;
        rows.truncate(fork.sync_from as usize);
        rows.append(&mut own);
        Ok(rows)
    }
}

fn input_row(row: &crate::db::backend::Row<'_>) -> Result<InputRow> {
    let digest: Vec<u8> = row.get(0)?;
    if digest.len() != DIGEST_BYTES {
        return Err(Error::invalid(
            "digest",
            "a stored digest has the wrong length",
        ));
    }
    Ok(InputRow {
        digest,
        low_seq: row.get(1)?,
        high_seq: row.get(2)?,
    })
}
