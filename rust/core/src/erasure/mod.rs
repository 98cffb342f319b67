//! Erasure: the one path through the append-only triggers.
//!
//! The store never rewrites or drops what it was given; its owner may. An erasure
//! removes a session (with the forks and sub-sessions that share its history), one
//! message, or every session of a subject, in one transaction: the rows of every
//! table, the search index, blobs and files nothing else references, and the
//! summaries built from what went (each replaced by a marker that says so). The
//! transaction opens the triggers for itself alone (see [`grant`]) and records a
//! receipt without content. After the commit the bytes are scrubbed where the
//! library can: SQLite's write-ahead log is truncated (deleted content was zeroed
//! in place by `secure_delete`), PostgreSQL's touched tables are vacuumed.

mod blobs;
mod family;
mod grant;
mod index;
mod marked;
mod message;
mod receipts;
mod rows;
mod scrub;
mod subjects;

use serde::Serialize;

use crate::db::gate::transact;
use crate::error::{Error, Result};
use crate::store::Store;

pub use receipts::Receipt;
pub use subjects::RetentionRule;

/// What an erasure removes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A session, its forks and the sub-sessions its operators ran.
    Session(String),
    /// One message, wherever its history is read (its session and the forks that
    /// share it).
    Message(String),
    /// Every session attached to the subject.
    Subject(String),
}

impl Target {
    /// The target's kind as receipts name it.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Target::Session(_) => "session",
            Target::Message(_) => "message",
            Target::Subject(_) => "subject",
        }
    }

    /// The id or subject erased.
    #[must_use]
    pub fn id(&self) -> &str {
        match self {
            Target::Session(id) | Target::Message(id) | Target::Subject(id) => id,
        }
    }
}

/// What one erasure removed, by table family; the receipt's `counts`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Erased {
    /// Every session removed whole, and every session whose view changed.
    pub sessions: Vec<String>,
    pub touched_sessions: Vec<String>,
    pub messages: i64,
    pub parts: i64,
    pub summaries: i64,
    /// Summaries kept in place with an erasure marker for their text.
    pub summaries_replaced: i64,
    pub files: i64,
    pub media: i64,
    pub arena_entries: i64,
}

impl Store {
    /// Erases `target` in one transaction and returns its receipt; `by` and
    /// `reason` are recorded on it. An unknown session or message is an error and
    /// nothing changes; a subject with no sessions erases nothing and still gets a
    /// receipt (the request was carried out).
    pub fn erase(&mut self, target: &Target, by: &str, reason: &str) -> Result<Receipt> {
        if self.read_only {
            return Err(Error::invalid("db", "the store is read-only"));
        }
        let sessions = self.erasure_sessions(target)?;
        let erased = grant::without_foreign_keys(&self.conn, || {
            transact(&self.conn, &self.writer, None, |tx| {
                grant::open(tx)?;
                let mut erased = Erased::default();
                match target {
                    Target::Message(id) => message::erase(tx, id, &mut erased)?,
                    _ => {
                        for session in &sessions {
                            rows::erase_session(tx, session, &mut erased)?;
                        }
                    }
                }
                let receipt = receipts::write(tx, target, by, reason, &erased)?;
                grant::close(tx)?;
                Ok((erased, receipt))
            })
        });
        let (erased, mut receipt) = erased?;
        for session in erased.sessions.iter().chain(&erased.touched_sessions) {
            self.views.forget(session);
            self.arena.forget(session);
            self.sessions.remove(session);
        }
        // The ledgers that lost items are rendered again (their old texts went with
        // the erasure); a failure leaves a ledger out of the request until its next
        // write, never an erased text in it.
        for session in &erased.touched_sessions {
            let _ = self.refresh_ledger(session);
        }
        receipt.scrubbed = scrub::after_erasure(&self.conn);
        Ok(receipt)
    }

    /// The sessions a session or subject erasure removes, children before their
    /// parents; an unknown session is an error.
    fn erasure_sessions(&self, target: &Target) -> Result<Vec<String>> {
        match target {
            Target::Session(id) => {
                if !family::exists(&self.conn, id)? {
                    return Err(Error::SessionNotFound(id.clone()));
                }
                family::descendants_first(&self.conn, std::slice::from_ref(id))
            }
            Target::Subject(subject) => {
                let roots = subjects::sessions_of(&self.conn, subject)?;
                family::descendants_first(&self.conn, &roots)
            }
            Target::Message(_) => Ok(Vec::new()),
        }
    }
}
