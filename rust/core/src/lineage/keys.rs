//! Keys: a session's name for the outside world (an SDK session id, a proxy
//! conversation, an imported transcript). A key's newest row names the session it
//! means now; a fork or a fresh start under the same name appends a row, so what
//! the key meant before stays stored.

use crate::db::backend::args;
use crate::db::gate::Write;
use crate::error::Result;
use crate::ids::now_ms;
use crate::parts::check_identifier;
use crate::store::Store;

impl Store {
    /// The session `key` names now, if any.
    pub fn session_for_key(&self, key: &str) -> Result<Option<String>> {
        check_identifier("key", key)?;
        if !self.has_lineage_tables()? {
            return Ok(None);
        }
        self.conn
            .prepare_cached(
                "SELECT session_id FROM session_keys WHERE key = ?1 ORDER BY ord DESC LIMIT 1",
            )?
            .query_opt(args![key], |row| row.get(0))
    }

    /// The key that names `session_id` now, if one does.
    pub fn key_of(&self, session_id: &str) -> Result<Option<String>> {
        if !self.has_lineage_tables()? {
            return Ok(None);
        }
        self.conn
            .prepare_cached(
                "SELECT k.key FROM session_keys k WHERE k.session_id = ?1
                   AND k.ord = (SELECT max(ord) FROM session_keys WHERE key = k.key)
                 ORDER BY k.created_at DESC LIMIT 1",
            )?
            .query_opt(args![session_id], |row| row.get(0))
    }

    /// A session named `key`: with `reuse`, the one `key` names when it names one,
    /// else a new one that `key` names from now on (a session it named before stays
    /// stored, under its id). Returns `(id, created)`. One transaction, so processes
    /// that open the same key at once agree on one session.
    pub fn named_session(
        &mut self,
        key: &str,
        model: &str,
        config: &str,
        system_prompt: Option<&str>,
        reuse: bool,
    ) -> Result<(String, bool)> {
        check_identifier("key", key)?;
        Self::check_new_session(model, config, system_prompt)?;
        let write = Write::begin(&self.conn, &self.writer)?;
        if reuse {
            let found: Option<String> = write.query_opt(
                "SELECT session_id FROM session_keys WHERE key = ?1 ORDER BY ord DESC LIMIT 1",
                args![key],
                |row| row.get(0),
            )?;
            if let Some(id) = found {
                write.commit()?;
                return Ok((id, false));
            }
        }
        let id = Self::insert_session(&write, model, config, system_prompt, 1)?;
        append_key(&write, key, &id)?;
        write.commit()?;
        Ok((id, true))
    }
}

/// Appends the row that makes `key` name `session_id`, in `write`.
pub(crate) fn append_key(write: &Write<'_>, key: &str, session_id: &str) -> Result<()> {
    write.execute(
        "INSERT INTO session_keys (key, ord, session_id, created_at)
         VALUES (?1, (SELECT coalesce(max(ord), 0) + 1 FROM session_keys WHERE key = ?1), ?2, ?3)",
        args![key, session_id, now_ms()],
    )?;
    Ok(())
}

impl Store {
    /// The newest message seq of `session_id`, its lineage's included (0: none).
    pub fn newest_seq(&self, session_id: &str) -> Result<i64> {
        self.conn
            .prepare_cached("SELECT next_seq - 1 FROM sessions WHERE id = ?1")?
            .query_opt(args![session_id], |row| row.get(0))?
            .ok_or_else(|| crate::error::Error::SessionNotFound(session_id.to_string()))
    }

    /// The seq of the message of `session_id`'s history (its lineage's included)
    /// that holds tool call `call_id`, the newest when the id repeats.
    pub fn call_seq(&self, session_id: &str, call_id: &str) -> Result<Option<i64>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT msg_seq FROM parts WHERE session_id = ?1 AND call_id = ?2 AND kind = 'tool'
               AND msg_seq BETWEEN ?3 AND ?4
             ORDER BY msg_seq DESC LIMIT 1",
        )?;
        for segment in self.lineage(session_id)?.segments.iter().rev() {
            let found = stmt.query_opt(
                args![
                    segment.session_id,
                    call_id,
                    segment.first_seq,
                    segment.last_seq
                ],
                |row| row.get(0),
            )?;
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }
}
