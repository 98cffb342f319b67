//! Map runs: the inputs of a run of a map operator and each item's outcome, written
//! as it completes, so a run stopped at any point resumes with what is left; and
//! the sessions an agentic map runs its items in, linked to their parent.

use crate::db::backend::args;

use crate::db::gate::Write as WriteTx;
use crate::error::{Error, Result};
use crate::history::sessions::SessionSummary;
use crate::ids::{new_id, now_ms};
use crate::parts::{check_content, check_identifier};
use crate::store::Store;

/// A run as stored.
#[derive(Clone, Debug)]
pub struct MapRun {
    pub map_id: String,
    pub kind: String,
    pub parent_id: Option<String>,
    pub spec: String,
    pub item_count: i64,
    pub created_at: i64,
}

/// One finished attempt at an item: a success (at most one per item) or a failure.
#[derive(Clone, Debug, Default)]
pub struct MapOutcome {
    pub idx: i64,
    pub succeeded: bool,
    pub output: Option<String>,
    pub error_kind: Option<String>,
    pub error: Option<String>,
    pub attempts: i64,
    pub usage: String,
    pub session_id: Option<String>,
    pub created_at: i64,
}

fn check_json(field: &str, text: &str) -> Result<()> {
    serde_json::from_str::<serde_json::Value>(text)
        .map(|_| ())
        .map_err(|err| Error::invalid(field, format!("not valid JSON: {err}")))
}

impl Store {
    /// Stores a new run of `kind` (`llm` or `agentic`) over `inputs` (JSON texts), in
    /// one transaction; returns its id (`map_...`).
    pub fn create_map(
        &mut self,
        kind: &str,
        parent_id: Option<&str>,
        spec: &str,
        inputs: &[String],
    ) -> Result<String> {
        if !matches!(kind, "llm" | "agentic") {
            return Err(Error::invalid("kind", "expected 'llm' or 'agentic'"));
        }
        if let Some(parent) = parent_id {
            check_identifier("parent_id", parent)?;
        }
        check_json("spec", spec)?;
        for (index, input) in inputs.iter().enumerate() {
            check_content(&format!("inputs[{index}]"), input)?;
        }
        let map_id = new_id("map");
        let write = WriteTx::begin(&self.conn, &self.writer)?;
        write.execute(
            "INSERT INTO map_runs (map_id, kind, parent_id, spec, item_count, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            args![map_id, kind, parent_id, spec, inputs.len() as i64, now_ms()],
        )?;
        {
            let mut insert = write.prepare_cached(
                "INSERT INTO map_inputs (map_id, idx, input) VALUES (?1, ?2, ?3)",
            )?;
            for (index, input) in inputs.iter().enumerate() {
                insert.execute(args![map_id, index as i64, input])?;
            }
        }
        write.commit()?;
        Ok(map_id)
    }

    /// The run `map_id`.
    pub fn map_run(&self, map_id: &str) -> Result<MapRun> {
        self.conn
            .prepare_cached(
                "SELECT map_id, kind, parent_id, spec, item_count, created_at
                 FROM map_runs WHERE map_id = ?1",
            )?
            .query_opt(args![map_id], |row| {
                Ok(MapRun {
                    map_id: row.get(0)?,
                    kind: row.get(1)?,
                    parent_id: row.get(2)?,
                    spec: row.get(3)?,
                    item_count: row.get(4)?,
                    created_at: row.get(5)?,
                })
            })?
            .ok_or_else(|| Error::NotFound {
                kind: "map run",
                id: map_id.to_string(),
            })
    }

    /// The inputs of a run, by index.
    pub fn map_inputs(&self, map_id: &str) -> Result<Vec<String>> {
        self.map_run(map_id)?;
        let mut stmt = self
            .conn
            .prepare_cached("SELECT input FROM map_inputs WHERE map_id = ?1 ORDER BY idx")?;
        let rows = stmt.query_map(args![map_id], |row| row.get(0))?;
        Ok(rows.into_iter().collect::<_>())
    }

    /// Every outcome stored for a run, by item then in the order written.
    pub fn map_outcomes(&self, map_id: &str) -> Result<Vec<MapOutcome>> {
        self.map_run(map_id)?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT idx, status, output, error_kind, error, attempts, usage, session_id,
                    created_at
             FROM map_outcomes WHERE map_id = ?1 ORDER BY idx, pk",
        )?;
        let rows = stmt.query_map(args![map_id], |row| {
            Ok(MapOutcome {
                idx: row.get(0)?,
                succeeded: row.get::<String>(1)? == "succeeded",
                output: row.get(2)?,
                error_kind: row.get(3)?,
                error: row.get(4)?,
                attempts: row.get(5)?,
                usage: row.get(6)?,
                session_id: row.get(7)?,
                created_at: row.get(8)?,
            })
        })?;
        Ok(rows.into_iter().collect::<_>())
    }

    /// Stores the outcome of item `outcome.idx`. A second success of one item is
    /// refused ([`Error::AlreadySucceeded`]): an item succeeds at most once.
    pub fn record_map_outcome(&mut self, map_id: &str, outcome: &MapOutcome) -> Result<()> {
        check_json("usage", &outcome.usage)?;
        if let Some(output) = &outcome.output {
            check_json("output", output)?;
        }
        if let Some(error) = &outcome.error {
            check_content("error", error)?;
        }
        let run = self.map_run(map_id)?;
        if outcome.idx < 0 || outcome.idx >= run.item_count {
            return Err(Error::invalid(
                "idx",
                format!("the run has items 0 to {}", run.item_count - 1),
            ));
        }
        let write = WriteTx::begin(&self.conn, &self.writer)?;
        let inserted = write.execute(
            "INSERT INTO map_outcomes (map_id, idx, status, output, error_kind, error, attempts,
                                       usage, session_id, created_at)
             SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10
             WHERE NOT EXISTS (SELECT 1 FROM map_outcomes
                               WHERE map_id = ?1 AND idx = ?2 AND status = 'succeeded')",
            args![
                map_id,
                outcome.idx,
                if outcome.succeeded {
                    "succeeded"
                } else {
                    "failed"
                },
                outcome.output,
                outcome.error_kind,
                outcome.error,
                outcome.attempts,
                outcome.usage,
                outcome.session_id,
                now_ms()
            ],
        )?;
        if inserted == 0 {
            return Err(Error::AlreadySucceeded(format!(
                "item {} of {map_id} already succeeded",
                outcome.idx
            )));
        }
        write.commit()
    }

    /// Creates the session of item `idx` of run `map_id`, linked to `parent_id`, in
    /// one transaction; returns its id.
    pub fn create_child_session(
        &mut self,
        model: &str,
        config: &str,
        system_prompt: Option<&str>,
        parent_id: &str,
        map_id: &str,
        idx: i64,
    ) -> Result<String> {
        check_identifier("model", model)?;
        check_identifier("parent_id", parent_id)?;
        check_json("config", config)?;
        if let Some(prompt) = system_prompt {
            check_content("system_prompt", prompt)?;
        }
        self.map_run(map_id)?;
        let id = new_id("ses");
        let write = WriteTx::begin(&self.conn, &self.writer)?;
        write.execute(
            "INSERT INTO sessions (id, model, created_at, config, system_prompt)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            args![id, model, now_ms(), config, system_prompt],
        )?;
        write.execute(
            "INSERT INTO session_parents (session_id, parent_id, map_id, idx, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            args![id, parent_id, map_id, idx, now_ms()],
        )?;
        write.commit()?;
        Ok(id)
    }

    /// The session item `idx` of run `map_id` ran in, if it started.
    pub fn item_session(&self, map_id: &str, idx: i64) -> Result<Option<String>> {
        self.conn
            .prepare_cached(
                "SELECT session_id FROM session_parents WHERE map_id = ?1 AND idx = ?2
                 ORDER BY created_at DESC LIMIT 1",
            )?
            .query_opt(args![map_id, idx], |row| row.get(0))
    }

    /// The sessions linked to `parent_id`, oldest first, with their counts.
    pub fn child_sessions(&self, parent_id: &str) -> Result<Vec<SessionSummary>> {
        if !self.has_table("session_parents")? {
            return Ok(Vec::new());
        }
        let mut stmt = self.conn.prepare_cached(
            "SELECT s.id, s.model, s.created_at,
                    (SELECT count(*) FROM messages m WHERE m.session_id = s.id),
                    (SELECT count(*) FROM summaries x WHERE x.session_id = s.id)
             FROM session_parents p JOIN sessions s ON s.id = p.session_id
             WHERE p.parent_id = ?1 ORDER BY p.map_id, p.idx, s.created_at",
        )?;
        let rows = stmt.query_map(args![parent_id], |row| {
            Ok(SessionSummary {
                id: row.get(0)?,
                model: row.get(1)?,
                created_at: row.get(2)?,
                messages: row.get(3)?,
                summaries: row.get(4)?,
            })
        })?;
        Ok(rows.into_iter().collect::<_>())
    }
}
