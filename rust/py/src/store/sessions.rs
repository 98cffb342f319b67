//! Sessions and the replies still streaming in them.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use crate::convert;
use crate::tokens::utf8;

use super::{dict_of, obj, Store};

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

    fn get_session<'py>(
        &self,
        py: Python<'py>,
        session_id: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let session_id = convert::text(session_id, "session_id")?;
        let info = self.with(py, |store| store.session(&session_id).cloned())?;
        dict_of(
            py,
            &[
                ("id", obj(py, &info.id)?),
                ("model", obj(py, &info.model)?),
                ("created_at", obj(py, info.created_at)?),
                ("config_json", obj(py, &info.config)?),
                ("system_prompt", obj(py, info.system_prompt.as_deref())?),
            ],
        )
    }

    fn list_sessions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let rows = self.with(py, |store| store.list_sessions())?;
        let list = PyList::empty(py);
        for row in &rows {
            list.append(dict_of(
                py,
                &[
                    ("id", obj(py, &row.id)?),
                    ("model", obj(py, &row.model)?),
                    ("created_at", obj(py, row.created_at)?),
                    ("messages", obj(py, row.messages)?),
                    ("summaries", obj(py, row.summaries)?),
                ],
            )?)?;
        }
        Ok(list)
    }

    fn flag_interrupted(
        &self,
        py: Python<'_>,
        session_id: &str,
        message_ids: Vec<String>,
    ) -> PyResult<usize> {
        self.with(py, |store| store.flag_interrupted(session_id, &message_ids))
    }

    fn streams<'py>(&self, py: Python<'py>, session_id: &str) -> PyResult<Bound<'py, PyList>> {
        let rows = self.with(py, |store| store.streams(session_id))?;
        let list = PyList::empty(py);
        for row in rows {
            list.append(dict_of(
                py,
                &[
                    ("message_id", obj(py, row.message_id)?),
                    ("owner", obj(py, row.owner)?),
                    ("beat_at", obj(py, row.beat_at)?),
                    ("chars", obj(py, row.chars)?),
                ],
            )?)?;
        }
        Ok(list)
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
