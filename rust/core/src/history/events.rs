//! The persisted event tape of each session.

use crate::db::backend::{args, Conn};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::ids::{new_id, now_ms};
use crate::parts::check_identifier;
use crate::store::Store;

/// One stored event.
#[derive(Clone, Debug)]
pub struct EventRow {
    pub id: String,
    pub seq: i64,
    pub name: String,
    pub payload: String,
    pub created_at: i64,
}

/// Which events [`Store::events_page`] reads.
#[derive(Clone, Copy, Debug)]
pub struct EventPage<'a> {
    /// Only events whose seq is above this one.
    pub after: Option<i64>,
    /// Only events whose seq is below this one.
    pub before: Option<i64>,
    /// Only events of this name.
    pub name: Option<&'a str>,
    /// At most this many.
    pub limit: i64,
    /// The newest first (the page next to `before`), else the oldest first.
    pub newest_first: bool,
}

/// An event that a write records in its own transaction, so the tape never misses
/// a write nor reports one that did not happen. The write adds what only it knows
/// (a new message's id) to the payload.
#[derive(Clone, Debug)]
pub struct WriteEvent {
    pub name: String,
    pub payload: Map<String, Value>,
}

impl WriteEvent {
    /// The event `name` with the JSON object `payload`, both checked.
    pub fn parse(name: &str, payload: &str) -> Result<Self> {
        check_identifier("name", name)?;
        match serde_json::from_str::<Value>(payload) {
            Ok(Value::Object(payload)) => Ok(Self {
                name: name.to_string(),
                payload,
            }),
            Ok(_) => Err(Error::invalid("payload", "not a JSON object")),
            Err(err) => Err(Error::invalid("payload", format!("not valid JSON: {err}"))),
        }
    }

    /// Writes the event, with `extra` added to its payload, inside the caller's
    /// transaction.
    pub(crate) fn insert(
        &self,
        conn: &Conn,
        session_id: &str,
        extra: &[(&str, &str)],
    ) -> Result<i64> {
        let mut payload = self.payload.clone();
        for (key, value) in extra {
            payload.insert((*key).to_string(), Value::from(*value));
        }
        insert_event(
            conn,
            session_id,
            &self.name,
            &Value::Object(payload).to_string(),
        )
    }
}

/// Writes one event row inside the caller's transaction; returns its sequence number.
fn insert_event(conn: &Conn, session_id: &str, name: &str, payload: &str) -> Result<i64> {
    let seq = conn
        .prepare_cached(
            "INSERT INTO events (session_id, seq, id, name, payload, created_at)
             SELECT ?1, COALESCE(MAX(seq), 0) + 1, ?2, ?3, ?4, ?5 FROM events WHERE session_id = ?1
             RETURNING seq",
        )?
        .query_row(
            args![session_id, new_id("evt"), name, payload, now_ms()],
            |row| row.get(0),
        )?;
    Ok(seq)
}

impl Store {
    /// Appends an event to the session's tape; returns its sequence number.
    pub fn append_event(&mut self, session_id: &str, name: &str, payload: &str) -> Result<i64> {
        check_identifier("name", name)?;
        serde_json::from_str::<serde_json::Value>(payload)
            .map_err(|err| Error::invalid("payload", format!("not valid JSON: {err}")))?;
        self.session(session_id)?;
        if self.conn.is_postgres() {
            // The next sequence number is read and written: one writer of the
            // session at a time, across workers (see `Write::for_session`).
            return crate::db::gate::transact(&self.conn, &self.writer, Some(session_id), |tx| {
                insert_event(tx, session_id, name, payload)
            });
        }
        let _gate = self.writer.hold()?;
        insert_event(&self.conn, session_id, name, payload)
    }

    /// A page of the session's events: those whose seq is above `after` and below
    /// `before` (each bound when given), named `name` when given, at most `limit`,
    /// the oldest first or, with `newest_first`, the newest first. Reads only the
    /// rows of the page (and, with a name, the rows it passes over).
    pub fn events_page(&mut self, session_id: &str, page: &EventPage<'_>) -> Result<Vec<EventRow>> {
        self.session(session_id)?;
        if page.limit <= 0 {
            return Ok(Vec::new());
        }
        // One statement per shape rather than nullable parameters: PostgreSQL cannot
        // tell the type of a parameter that is only compared with NULL.
        let mut sql = String::from(
            "SELECT id, seq, name, payload, created_at FROM events
             WHERE session_id = ?1 AND seq > ?2 AND seq < ?3",
        );
        if page.name.is_some() {
            sql.push_str(" AND name = ?5");
        }
        sql.push_str(if page.newest_first {
            " ORDER BY seq DESC LIMIT ?4"
        } else {
            " ORDER BY seq LIMIT ?4"
        });
        let after = page.after.unwrap_or(0);
        let before = page.before.unwrap_or(i64::MAX);
        let read = |row: &crate::db::backend::Row<'_>| {
            Ok(EventRow {
                id: row.get(0)?,
                seq: row.get(1)?,
                name: row.get(2)?,
                payload: row.get(3)?,
                created_at: row.get(4)?,
            })
        };
        match page.name {
            Some(name) => self.conn.query_map(
                &sql,
                args![session_id, after, before, page.limit, name],
                read,
            ),
            None => self
                .conn
                .query_map(&sql, args![session_id, after, before, page.limit], read),
        }
    }

    /// The session's events in order.
    pub fn events(&mut self, session_id: &str) -> Result<Vec<EventRow>> {
        let all = EventPage {
            after: None,
            before: None,
            name: None,
            limit: i64::MAX,
            newest_first: false,
        };
        self.events_page(session_id, &all)
    }
}
