//! The persisted event tape of each session.

use rusqlite::params;

use super::Store;
use crate::error::{Error, Result};
use crate::ids::{new_id, now_ms};
use crate::parts::check_identifier;

/// One stored event.
#[derive(Clone, Debug)]
pub struct EventRow {
    pub id: String,
    pub seq: i64,
    pub name: String,
    pub payload: String,
    pub created_at: i64,
}

impl Store {
    /// Appends an event to the session's tape; returns its sequence number.
    pub fn append_event(&mut self, session_id: &str, name: &str, payload: &str) -> Result<i64> {
        check_identifier("name", name)?;
        serde_json::from_str::<serde_json::Value>(payload)
            .map_err(|err| Error::invalid("payload", format!("not valid JSON: {err}")))?;
        self.session(session_id)?;
        let seq = self
            .conn
            .prepare_cached(
                "INSERT INTO events (session_id, seq, id, name, payload, created_at)
                 SELECT ?1, COALESCE(MAX(seq), 0) + 1, ?2, ?3, ?4, ?5 FROM events WHERE session_id = ?1
                 RETURNING seq",
            )?
            .query_row(params![session_id, new_id("evt"), name, payload, now_ms()], |row| row.get(0))?;
        Ok(seq)
    }

    /// The session's events in order.
    pub fn events(&mut self, session_id: &str) -> Result<Vec<EventRow>> {
        self.session(session_id)?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, seq, name, payload, created_at FROM events WHERE session_id = ?1 ORDER BY seq",
        )?;
        let rows = stmt.query_map([session_id], |row| {
            Ok(EventRow {
                id: row.get(0)?,
                seq: row.get(1)?,
                name: row.get(2)?,
                payload: row.get(3)?,
                created_at: row.get(4)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}
