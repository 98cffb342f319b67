//! Images and documents: their bytes read back, their parts found by reference id,
//! and the policy of what requests send inline.

use lossless_core::store::MediaPolicy;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

use crate::convert;

use super::Store;

#[pymethods]
impl Store {
    /// The MIME type and exact bytes of the image or document `media_id`, or `None`.
    fn read_media<'py>(
        &self,
        py: Python<'py>,
        media_id: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let media_id = convert::text(media_id, "media_id")?;
        let found = self.with(py, |store| store.read_media(&media_id))?;
        found
            .map(|(media_type, bytes)| {
                let members = [
                    media_type.into_pyobject(py)?.into_any(),
                    PyBytes::new(py, &bytes).into_any(),
                ];
                PyTuple::new(py, members)
            })
            .transpose()
    }

    /// The session that first stored `media_id` (`session_id`, when given) and that
    /// part's wire dict, or `None`.
    #[pyo3(signature = (media_id, session_id = None))]
    fn media_part<'py>(
        &self,
        py: Python<'py>,
        media_id: &Bound<'py, PyAny>,
        session_id: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Option<(String, Bound<'py, PyDict>)>> {
        let media_id = convert::text(media_id, "media_id")?;
        let session_id = convert::maybe_text(session_id, "session_id")?;
        let found = self.with(py, |store| {
            store.media_part(session_id.as_deref(), &media_id)
        })?;
        found
            .map(|(session_id, media)| {
                let part = lossless_core::parts::Part::Media(media);
                Ok((session_id, convert::part_dict(py, &part)?))
            })
            .transpose()
    }

    /// How many of a view's newest images and documents a request sends inline,
    /// and within how many tokens (the provider's count).
    fn set_media_policy(
        &self,
        py: Python<'_>,
        max_inline: usize,
        max_inline_tokens: i64,
    ) -> PyResult<()> {
        self.with(py, |store| {
            store.set_media_policy(MediaPolicy {
                max_inline,
                max_inline_tokens,
            });
            Ok(())
        })
    }
}
