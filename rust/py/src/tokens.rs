//! Token counting and file-id functions.

use lossless_core::context::provider;
use lossless_core::{fileids, summary_check, tokens};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

use crate::errors::invalid;
use crate::release;

/// Texts up to this size are counted keeping the interpreter (about 25 µs of work).
const SHORT_TEXT_BYTES: usize = 1024;

/// The UTF-8 of a `str` argument, borrowed; a lone surrogate is an `InvalidInputError`
/// naming `field`, as everywhere else, not a bare `UnicodeEncodeError`.
pub(crate) fn utf8<'a>(value: &'a Bound<'_, PyString>, field: &str) -> PyResult<&'a str> {
    value
        .to_str()
        .map_err(|_| invalid(field, "is not valid text (it holds a lone surrogate)"))
}

#[pyfunction]
pub fn count_tokens(py: Python<'_>, text: &Bound<'_, PyString>, model: &str) -> PyResult<usize> {
    let text = utf8(text, "text")?;
    let counter = tokens::TokenCounter::new(model, 1.0);
    release(py, || Ok(counter.count(text)))
}

#[pyfunction]
pub fn encoding_for_model(model: &str) -> &'static str {
    tokens::encoding_for_model(model).name()
}

/// The provider requests for `model` go to, as litellm names it.
#[pyfunction]
pub fn model_provider(model: &str) -> &str {
    provider::provider_of(model)
}

/// Refuses a reasoning block the store would not keep (its JSON text), naming
/// `field`: the core's rule, checked before any message of a list is stored.
#[pyfunction]
pub fn check_reasoning_payload(payload: &str, field: &str) -> PyResult<()> {
    lossless_core::parts::check_reasoning_payload(field, payload).map_err(crate::errors::to_py_err)
}

/// Refuses a provider's compaction block the store would not keep (its JSON text),
/// naming `field`: the core's rule, checked before any message of a list is stored.
#[pyfunction]
pub fn check_compaction_payload(payload: &str, field: &str) -> PyResult<()> {
    lossless_core::parts::check_compaction_payload(field, payload).map_err(crate::errors::to_py_err)
}

#[pyfunction]
pub fn extract_file_ids(py: Python<'_>, text: &Bound<'_, PyString>) -> PyResult<Vec<String>> {
    let text = utf8(text, "text")?;
    release(py, || Ok(fileids::extract_file_ids(text)))
}

#[pyfunction]
pub fn merge_file_id_footer(
    py: Python<'_>,
    text: &Bound<'_, PyString>,
    file_ids: Vec<String>,
) -> PyResult<String> {
    let text = utf8(text, "text")?;
    release(py, || Ok(fileids::merge_file_id_footer(text, &file_ids)))
}

/// What a model summary left out of the extractive pass's constraints and
/// identifiers, how much of it repeats its prompt, and how much repeats itself:
/// `(missing, prompt_echo, repetition)`.
#[pyfunction]
pub fn check_summary(
    py: Python<'_>,
    summary: &Bound<'_, PyString>,
    extractive: &Bound<'_, PyString>,
    prompt: &Bound<'_, PyString>,
) -> PyResult<(Vec<String>, f64, f64)> {
    let (summary, extractive) = (utf8(summary, "summary")?, utf8(extractive, "extractive")?);
    let prompt = utf8(prompt, "prompt")?;
    let check = release(py, || {
        Ok(summary_check::check_summary(summary, extractive, prompt))
    })?;
    Ok((check.missing, check.prompt_echo, check.repetition))
}

/// `summary` with `missing` appended in a section of their own.
#[pyfunction]
pub fn with_kept(summary: &Bound<'_, PyString>, missing: Vec<String>) -> PyResult<String> {
    Ok(summary_check::with_kept(
        utf8(summary, "summary")?,
        &missing,
    ))
}

/// Counts tokens for one model's encoding.
#[pyclass(frozen)]
pub struct TokenCounter {
    model: String,
    inner: tokens::TokenCounter,
}

#[pymethods]
impl TokenCounter {
    #[new]
    #[pyo3(signature = (model, correction = 1.0))]
    fn new(model: String, correction: f64) -> Self {
        // The encoder's tables are compiled in and read in place: microseconds.
        let inner = tokens::TokenCounter::new(&model, correction);
        Self { model, inner }
    }

    #[getter]
    fn model(&self) -> &str {
        &self.model
    }

    #[getter]
    fn encoding(&self) -> &'static str {
        self.inner.encoding().name()
    }

    #[getter]
    fn correction(&self) -> f64 {
        self.inner.correction()
    }

    fn count(&self, py: Python<'_>, text: &Bound<'_, PyString>) -> PyResult<usize> {
        let text = utf8(text, "text")?;
        if text.len() <= SHORT_TEXT_BYTES {
            // Counted in microseconds: letting go of the interpreter would cost more,
            // on an event loop up to another thread's whole slice (decision 123).
            return Ok(self.inner.count(text));
        }
        release(py, || Ok(self.inner.count(text)))
    }

    fn count_many(&self, py: Python<'_>, texts: &Bound<'_, PyList>) -> PyResult<Vec<usize>> {
        // Borrow the UTF-8 of each str instead of copying it; the list stays alive
        // for the whole call.
        let strings: Vec<Bound<'_, PyString>> = texts
            .iter()
            .enumerate()
            .map(|(index, item)| {
                item.cast_into::<PyString>()
                    .map_err(|_| invalid(&format!("texts[{index}]"), "expected str"))
            })
            .collect::<PyResult<_>>()?;
        let borrowed: Vec<&str> = strings
            .iter()
            .enumerate()
            .map(|(index, string)| utf8(string, &format!("texts[{index}]")))
            .collect::<PyResult<_>>()?;
        release(py, || Ok(self.inner.count_many(&borrowed)))
    }
}

/// Tokens a `width`×`height` image costs the provider `model` is routed to, by
/// that provider's published rule; `detail` is OpenAI's setting.
#[pyfunction]
#[pyo3(signature = (width, height, model, detail = None))]
pub fn image_tokens(width: u32, height: u32, model: &str, detail: Option<&str>) -> usize {
    let rule = lossless_core::parts::ImageRule::of(model_provider(model), model);
    lossless_core::parts::image_tokens(width, height, detail, rule)
}

/// What the bytes of an image or a document are, read from their header: `(kind,
/// media_type, width, height, pages)`. Refuses bytes that are none of PNG, JPEG,
/// GIF, WebP or PDF, or that disagree with `media_type`, naming `field`: the core's
/// rule, checked before any message of a list is stored.
#[pyfunction]
#[pyo3(signature = (data, media_type, field))]
#[allow(clippy::type_complexity)]
pub fn media_facts(
    data: &[u8],
    media_type: Option<&str>,
    field: &str,
) -> PyResult<(
    &'static str,
    &'static str,
    Option<u32>,
    Option<u32>,
    Option<u32>,
)> {
    let sniffed = lossless_core::parts::check_media_bytes(data, media_type, field)
        .map_err(crate::errors::to_py_err)?;
    Ok((
        lossless_core::parts::kind_name(sniffed.kind),
        sniffed.media_type,
        sniffed.size.map(|(width, _)| width),
        sniffed.size.map(|(_, height)| height),
        sniffed.pages,
    ))
}
