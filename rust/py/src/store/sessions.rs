//! Sessions and the replies still streaming in them.

use lossless_core::store::{
    SessionInfo as CoreSessionInfo, SessionSummary, StreamRow as CoreStreamRow,
};
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::convert;
use crate::results::result_class;
use crate::tokens::utf8;

use super::Store;

#[pymethods]
impl Store {
    #[pyo3(signature = (model, config_json, system_prompt))]
    fn create_session(
        &self,
        py: Python<'_>,
        model: &Bound<'_, PyAny>,
        config_json: &Bound<'_, PyAny>,
        system_prompt: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let model = convert::text(model, "model")?;
        let config_json = convert::text(config_json, "config_json")?;
        let system_prompt = convert::maybe_text(system_prompt, "system_prompt")?;
        self.with(py, |store| {
            store.create_session(&model, &config_json, system_prompt.as_deref())
        })
    }

    fn get_session(&self, py: Python<'_>, session_id: &Bound<'_, PyAny>) -> PyResult<SessionInfo> {
        let session_id = convert::text(session_id, "session_id")?;
        let info = self.with(py, |store| store.session(&session_id).cloned())?;
        Ok(SessionInfo::from(info))
    }

    fn list_sessions(&self, py: Python<'_>) -> PyResult<Vec<SessionRow>> {
        let rows = self.with(py, |store| store.list_sessions())?;
        Ok(rows.into_iter().map(SessionRow::from).collect())
    }

    fn flag_interrupted(
        &self,
        py: Python<'_>,
        session_id: &str,
        message_ids: Vec<String>,
    ) -> PyResult<usize> {
        self.with(py, |store| store.flag_interrupted(session_id, &message_ids))
    }

    fn streams(&self, py: Python<'_>, session_id: &str) -> PyResult<Vec<StreamRow>> {
        let rows = self.with(py, |store| store.streams(session_id))?;
        Ok(rows.into_iter().map(StreamRow::from).collect())
    }

    #[pyo3(signature = (message_id, owner, appended = None))]
    fn checkpoint_message(
        &self,
        py: Python<'_>,
        message_id: &str,
        owner: &str,
        appended: Option<Bound<'_, PyString>>,
    ) -> PyResult<()> {
        let appended = appended
            .as_ref()
            .map(|text| utf8(text, "appended"))
            .transpose()?;
        self.with(py, |store| {
            store.checkpoint_message(message_id, owner, appended)
        })
    }
}

result_class! {
    eq;
    /// A session's row, as `Store.get_session` reads it.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct SessionInfo {
        id: String,
        model: String,
        created_at: i64,
        config_json: String,
        system_prompt: Option<String>,
    }
}

impl From<CoreSessionInfo> for SessionInfo {
    fn from(info: CoreSessionInfo) -> Self {
        Self {
            id: info.id,
            model: info.model,
            created_at: info.created_at,
            config_json: info.config,
            system_prompt: info.system_prompt,
        }
    }
}

result_class! {
    eq;
    /// A session as listed: its row with its message and summary counts.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct SessionRow {
        id: String,
        model: String,
        created_at: i64,
        messages: i64,
        summaries: i64,
    }
}

impl From<SessionSummary> for SessionRow {
    fn from(row: SessionSummary) -> Self {
        Self {
            id: row.id,
            model: row.model,
            created_at: row.created_at,
            messages: row.messages,
            summaries: row.summaries,
        }
    }
}

result_class! {
    eq;
    /// A reply still streaming: its owner, the owner's last heartbeat (ms) and the
    /// characters checkpointed so far.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct StreamRow {
        message_id: String,
        owner: Option<String>,
        beat_at: Option<i64>,
        chars: i64,
    }
}

impl From<CoreStreamRow> for StreamRow {
    fn from(row: CoreStreamRow) -> Self {
        Self {
            message_id: row.message_id,
            owner: row.owner,
            beat_at: row.beat_at,
            chars: row.chars,
        }
    }
}
