//! Subjects and retention: who a session is about, and how long it is kept.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::db::backend::{args, Conn};
use crate::db::gate::transact;
use crate::error::{Error, Result};
use crate::ids::now_ms;
use crate::store::Store;

use super::{family, grant, message, Erased, Receipt, Target};

/// A time to live, for a session or a subject.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RetentionRule {
    /// `session` or `subject`.
    pub target_kind: String,
    pub target: String,
    /// How long after its newest message a session is kept.
    pub ttl_ms: i64,
}

/// Messages a retention batch erases at first; each batch then sizes the next so
/// a transaction holds the write lock for about [`BATCH_HOLD`].
const FIRST_BATCH: i64 = 64;
/// The longest a retention batch should hold the write lock.
pub const BATCH_HOLD: Duration = Duration::from_millis(40);

/// The sessions attached to `subject`.
pub(super) fn sessions_of(conn: &Conn, subject: &str) -> Result<Vec<String>> {
    conn.prepare_cached(
        "SELECT session_id FROM session_subjects WHERE subject = ?1 ORDER BY session_id",
    )?
    .query_map(args![subject], |row| row.get(0))
}

fn check_subject(subject: &str) -> Result<()> {
    if subject.is_empty() || subject.len() > 512 || subject.contains('\0') {
        return Err(Error::invalid(
            "subject",
            "expected a non-empty id of at most 512 bytes without NUL",
        ));
    }
    Ok(())
}

impl Store {
    /// Attaches `subject` to session `session_id` (again: nothing changes).
    pub fn add_subject(&mut self, session_id: &str, subject: &str) -> Result<()> {
        check_subject(subject)?;
        self.session(session_id)?;
        transact(&self.conn, &self.writer, Some(session_id), |tx| {
            tx.execute(
                tx.dialect(
                    "INSERT OR IGNORE INTO session_subjects (subject, session_id, created_at)
                     VALUES (?1, ?2, ?3)",
                    "INSERT INTO session_subjects (subject, session_id, created_at)
                     VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
                ),
                args![subject, session_id, now_ms()],
            )?;
            Ok(())
        })
    }

    /// The subjects attached to session `session_id`.
    pub fn subjects(&self, session_id: &str) -> Result<Vec<String>> {
        self.conn
            .prepare_cached(
                "SELECT subject FROM session_subjects WHERE session_id = ?1 ORDER BY subject",
            )?
            .query_map(args![session_id], |row| row.get(0))
    }

    /// Sets (or with `None` lifts) the time to live of a session or a subject;
    /// the newest rule of a target is its rule.
    pub fn set_retention(
        &mut self,
        target_kind: &str,
        target: &str,
        ttl_ms: Option<i64>,
    ) -> Result<()> {
        if !matches!(target_kind, "session" | "subject") {
            return Err(Error::invalid(
                "target_kind",
                "expected 'session' or 'subject'",
            ));
        }
        if target_kind == "session" {
            self.session(target)?;
        } else {
            check_subject(target)?;
        }
        if ttl_ms.is_some_and(|ttl| ttl <= 0) {
            return Err(Error::invalid("ttl", "expected a positive duration"));
        }
        transact(&self.conn, &self.writer, None, |tx| {
            tx.execute(
                "INSERT INTO retention_rules (target_kind, target, ord, ttl_ms, created_at)
                 SELECT ?1, ?2, COALESCE(MAX(ord), 0) + 1, ?3, ?4 FROM retention_rules
                 WHERE target_kind = ?1 AND target = ?2",
                args![target_kind, target, ttl_ms, now_ms()],
            )?;
            Ok(())
        })
    }

    /// The rules in force: the newest of each target, lifted ones left out.
    pub fn retention_rules(&self) -> Result<Vec<RetentionRule>> {
        self.conn
            .prepare_cached(
                "SELECT r.target_kind, r.target, r.ttl_ms FROM retention_rules r
                 WHERE r.ord = (SELECT MAX(ord) FROM retention_rules n
                                WHERE n.target_kind = r.target_kind AND n.target = r.target)
                   AND r.ttl_ms IS NOT NULL
                 ORDER BY r.target_kind, r.target",
            )?
            .query_map(args![], |row| {
                Ok(RetentionRule {
                    target_kind: row.get(0)?,
                    target: row.get(1)?,
                    ttl_ms: row.get(2)?,
                })
            })
    }

    /// The sessions past their time to live at `now_ms`: a session's own rule
    /// wins over its subjects'; the shortest subject rule applies. A session
    /// expires that long after its newest message (its creation when it has none).
    pub fn expired_sessions(&self, now: i64) -> Result<Vec<String>> {
        self.conn
            .prepare_cached(
                "WITH rules AS (
                    SELECT r.target_kind, r.target, r.ttl_ms FROM retention_rules r
                    WHERE r.ord = (SELECT MAX(ord) FROM retention_rules n
                                   WHERE n.target_kind = r.target_kind AND n.target = r.target)
                 ), ttl AS (
                    SELECT s.id, COALESCE(
                        (SELECT ttl_ms FROM rules WHERE target_kind = 'session' AND target = s.id),
                        (SELECT MIN(rules.ttl_ms) FROM rules JOIN session_subjects j
                           ON rules.target_kind = 'subject' AND rules.target = j.subject
                         WHERE j.session_id = s.id)) AS ttl_ms,
                        COALESCE((SELECT MAX(created_at) FROM messages m WHERE m.session_id = s.id),
                                 s.created_at) AS last_at
                    FROM sessions s
                 )
                 SELECT id FROM ttl WHERE ttl_ms IS NOT NULL AND last_at + ttl_ms <= ?1
                 ORDER BY id",
            )?
            .query_map(args![now], |row| row.get(0))
    }

    /// Erases every expired session (with its forks and sub-sessions) in small
    /// transactions: a large one loses its oldest messages a batch at a time, each
    /// batch sized to hold the write lock about [`BATCH_HOLD`], so live sessions
    /// writing meanwhile wait at most that long. Each batch leaves a valid, shorter
    /// session; a run cut short (a kill) is finished by the next. Returns one
    /// receipt per expired session.
    pub fn apply_retention(&mut self, now: i64, by: &str) -> Result<Vec<Receipt>> {
        let mut receipts = Vec::new();
        for root in self.expired_sessions(now)? {
            if !family::exists(&self.conn, &root)? {
                continue; // Erased above, as another expired session's fork.
            }
            for session in family::descendants_first(&self.conn, std::slice::from_ref(&root))? {
                self.trim_in_batches(&session)?;
            }
            receipts.push(self.erase(&Target::Session(root), by, "retention")?);
        }
        Ok(receipts)
    }

    /// Erases `session`'s messages oldest first, one short transaction each.
    fn trim_in_batches(&mut self, session: &str) -> Result<()> {
        let mut batch = FIRST_BATCH;
        loop {
            let oldest: Option<i64> = self
                .conn
                .prepare_cached("SELECT MIN(seq) FROM messages WHERE session_id = ?1")?
                .query_row(args![session], |row| row.get(0))?;
            let Some(low) = oldest else {
                return Ok(());
            };
            let started = Instant::now();
            grant::without_foreign_keys(&self.conn, || {
                transact(&self.conn, &self.writer, None, |tx| {
                    grant::open(tx)?;
                    let mut erased = Erased::default();
                    message::erase_run(tx, session, (low, low + batch - 1), &mut erased)?;
                    grant::close(tx)
                })
            })?;
            self.views.forget(session);
            self.arena.forget(session);
            batch = next_batch(batch, started.elapsed());
        }
    }
}

/// The next batch size: scaled so the batch takes about [`BATCH_HOLD`], at most
/// doubling, at least one message.
fn next_batch(batch: i64, took: Duration) -> i64 {
    let took = took.as_secs_f64().max(1e-4);
    let scaled = (batch as f64 * BATCH_HOLD.as_secs_f64() / took) as i64;
    scaled.clamp(1, batch * 2)
}
