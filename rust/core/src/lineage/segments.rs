//! A session's lineage: which session holds each of the messages it shares. A fork
//! numbers its own messages on from its fork point, so every seq of a lineage
//! belongs to exactly one of its sessions, and a range of seqs splits into at most
//! one range per session.

use crate::db::backend::args;
use crate::error::Result;
use crate::store::Store;

/// The messages `session_id` contributes to a lineage: its seqs `first_seq` to
/// `last_seq`, both included.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub session_id: String,
    pub first_seq: i64,
    pub last_seq: i64,
}

/// A session's history as segments of the sessions that hold it, oldest first; the
/// last segment is the session's own (to `i64::MAX`).
#[derive(Clone, Debug)]
pub struct Lineage {
    pub segments: Vec<Segment>,
}

impl Lineage {
    /// Whether the session shares messages of another.
    #[must_use]
    pub fn is_fork(&self) -> bool {
        self.segments.len() > 1
    }

    /// The parts of `low..=high` each session holds: `(session, low, high)`.
    pub fn clip(&self, low: i64, high: i64) -> impl Iterator<Item = (&str, i64, i64)> {
        self.segments.iter().filter_map(move |segment| {
            let (from, to) = (low.max(segment.first_seq), high.min(segment.last_seq));
            (from <= to).then_some((segment.session_id.as_str(), from, to))
        })
    }

    /// The session that holds message `seq` of this lineage.
    #[must_use]
    pub fn holder_of(&self, seq: i64) -> Option<&str> {
        self.clip(seq, seq).next().map(|(session, ..)| session)
    }
}

impl Store {
    /// The lineage of `session_id`: itself alone unless it is a fork.
    pub fn lineage(&self, session_id: &str) -> Result<Lineage> {
        let mut segments = Vec::new();
        let mut current = session_id.to_string();
        let mut last_seq = i64::MAX;
        loop {
            let fork = self.fork_row(&current)?;
            let first_seq = fork.as_ref().map_or(1, |(_, fork_seq)| fork_seq + 1);
            if first_seq <= last_seq {
                segments.push(Segment {
                    session_id: current.clone(),
                    first_seq,
                    last_seq,
                });
            }
            let Some((parent, fork_seq)) = fork else {
                break;
            };
            last_seq = last_seq.min(fork_seq);
            current = parent;
        }
        segments.reverse();
        Ok(Lineage { segments })
    }

    fn fork_row(&self, session_id: &str) -> Result<Option<(String, i64)>> {
        if !self.has_lineage_tables()? {
            return Ok(None);
        }
        self.conn
            .prepare_cached("SELECT parent_id, fork_seq FROM session_forks WHERE session_id = ?1")?
            .query_opt(args![session_id], |row| Ok((row.get(0)?, row.get(1)?)))
    }
}

impl Store {
    /// Whether the database has the tables of keys and forks: always when this store
    /// may write (opening migrated it); a file opened read-only keeps the version it
    /// was written at, and one older than 13 has neither keys nor forks.
    pub(crate) fn has_lineage_tables(&self) -> Result<bool> {
        if !self.read_only {
            return Ok(true);
        }
        let sql = self.conn.dialect(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'session_forks'",
            "SELECT count(*) FROM pg_catalog.pg_class c
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = current_schema() AND c.relname = 'session_forks'",
        );
        let found: i64 = self.conn.query_row(sql, args![], |row| row.get(0))?;
        Ok(found > 0)
    }
}
