//! Sessions: created once, never changed except for the store's own counters.

use crate::db::backend::args;
use crate::db::gate::Write;
use crate::error::{Error, Result};
use crate::ids::{new_id, now_ms};
use crate::parts::{check_content, check_identifier};
use crate::store::Store;
use crate::tokens::TokenCounter;

/// A session row, with the token counter of its model.
#[derive(Clone)]
pub struct SessionInfo {
    pub id: String,
    pub model: String,
    pub created_at: i64,
    pub config: String,
    pub system_prompt: Option<String>,
    pub counter: TokenCounter,
}

/// A session as listed: its row plus counts.
#[derive(Clone, Debug)]
pub struct SessionSummary {
    pub id: String,
    pub model: String,
    pub created_at: i64,
    pub messages: i64,
    pub summaries: i64,
}

impl Store {
    /// Creates a session and returns its id.
    pub fn create_session(
        &mut self,
        model: &str,
        config: &str,
        system_prompt: Option<&str>,
    ) -> Result<String> {
        Self::check_new_session(model, config, system_prompt)?;
        let write = Write::begin(&self.conn, &self.writer)?;
        let id = Self::insert_session(&write, model, config, system_prompt, 1)?;
        write.commit()?;
        Ok(id)
    }

    /// Refuses what a new session cannot be created with.
    pub(crate) fn check_new_session(
        model: &str,
        config: &str,
        system_prompt: Option<&str>,
    ) -> Result<()> {
        check_identifier("model", model)?;
        serde_json::from_str::<serde_json::Value>(config)
            .map_err(|err| Error::invalid("config", format!("not valid JSON: {err}")))?;
        if let Some(prompt) = system_prompt {
            check_content("system_prompt", prompt)?;
        }
        Ok(())
    }

    /// Inserts a session row in `write`, its messages numbered from `next_seq` (a
    /// fork's go on from its parent's); returns its id.
    pub(crate) fn insert_session(
        write: &Write<'_>,
        model: &str,
        config: &str,
        system_prompt: Option<&str>,
        next_seq: i64,
    ) -> Result<String> {
        let id = new_id("ses");
        write.execute(
            "INSERT INTO sessions (id, model, created_at, config, system_prompt, next_seq)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            args![id, model, now_ms(), config, system_prompt, next_seq],
        )?;
        Ok(id)
    }

    /// The session with `id`, from the cache when it was read before.
    pub fn session(&mut self, id: &str) -> Result<&SessionInfo> {
        if !self.sessions.contains_key(id) {
            let info = self.load_session(id)?;
            self.sessions.insert(id.to_string(), info);
        }
        Ok(&self.sessions[id])
    }

    fn load_session(&self, id: &str) -> Result<SessionInfo> {
        let row = self.conn.query_opt(
            "SELECT model, created_at, config, system_prompt FROM sessions WHERE id = ?1",
            args![id],
            |row| {
                Ok((
                    row.get::<String>(0)?,
                    row.get::<i64>(1)?,
                    row.get::<String>(2)?,
                    row.get::<Option<String>>(3)?,
                ))
            },
        )?;
        let (model, created_at, config, system_prompt) =
            row.ok_or_else(|| Error::SessionNotFound(id.to_string()))?;
        let counter = TokenCounter::new(&model, 1.0);
        Ok(SessionInfo {
            id: id.to_string(),
            model,
            created_at,
            config,
            system_prompt,
            counter,
        })
    }

    /// Every session, oldest first, with message and summary counts.
    pub fn list_sessions(&self) -> Result<Vec<SessionSummary>> {
        self.conn.query_map(
            "SELECT s.id, s.model, s.created_at,
                    (SELECT count(*) FROM messages m WHERE m.session_id = s.id),
                    (SELECT count(*) FROM summaries x WHERE x.session_id = s.id)
             FROM sessions s ORDER BY s.created_at, s.id",
            args![],
            |row| {
                Ok(SessionSummary {
                    id: row.get(0)?,
                    model: row.get(1)?,
                    created_at: row.get(2)?,
                    messages: row.get(3)?,
                    summaries: row.get(4)?,
                })
            },
        )
    }
}
