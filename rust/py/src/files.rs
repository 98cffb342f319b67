//! Files kept whole: the streamed scan, storing, and reading back by line range.

use std::path::PathBuf;

use lossless_core::filescan;
use lossless_core::store::{FileRecord, NewFile};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::release;
use crate::store::{dict_of, obj, Store};

fn record<'py>(py: Python<'py>, file: &FileRecord) -> PyResult<Bound<'py, PyDict>> {
    dict_of(
        py,
        &[
            ("file_id", obj(py, &file.file_id)?),
            ("content_hash", obj(py, &file.content_hash)?),
            ("path", obj(py, &file.path)?),
            ("file_type", obj(py, &file.file_type)?),
            ("token_count", obj(py, file.token_count)?),
            ("summary", obj(py, &file.summary)?),
            ("created_at", obj(py, file.created_at)?),
            ("byte_count", obj(py, file.byte_count)?),
            ("line_count", obj(py, file.line_count)?),
            ("stored_bytes", obj(py, file.stored_bytes)?),
            ("is_text", obj(py, file.is_text)?),
        ],
    )
}

/// One streamed pass over the file at `path`: its hash, size and kind of content.
#[pyfunction]
pub fn scan_file(py: Python<'_>, path: PathBuf) -> PyResult<Bound<'_, PyDict>> {
    let (scan, ends) = release(py, || filescan::scan_path(&path))?;
    dict_of(
        py,
        &[
            ("sha256", obj(py, &scan.sha256)?),
            ("file_id", obj(py, scan.file_id())?),
            ("bytes", obj(py, scan.bytes)?),
            ("lines", obj(py, scan.lines(ends))?),
            ("has_nul", obj(py, scan.has_nul)?),
            ("utf8", obj(py, scan.utf8)?),
        ],
    )
}

/// Stores the file at `source` (whose scan found `sha256`) with its reference;
/// returns its record and whether it was stored now (else it was stored before).
#[pyfunction]
#[pyo3(signature = (store, source, sha256, path, file_type, token_count, summary))]
#[expect(
    clippy::too_many_arguments,
    reason = "one argument per column of the reference"
)]
pub fn store_file<'py>(
    py: Python<'py>,
    store: &Store,
    source: PathBuf,
    sha256: String,
    path: String,
    file_type: String,
    token_count: i64,
    summary: String,
) -> PyResult<(Bound<'py, PyDict>, bool)> {
    let (file, stored) = store.with(py, |core| {
        core.store_file(&NewFile {
            source: &source,
            sha256: &sha256,
            path: &path,
            file_type: &file_type,
            token_count,
            summary: &summary,
        })
    })?;
    Ok((record(py, &file)?, stored))
}

/// The stored file `file_id`, or `None`.
#[pyfunction]
pub fn file_record<'py>(
    py: Python<'py>,
    store: &Store,
    file_id: String,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let found = store.with(py, |core| core.file_record(&file_id))?;
    found.map(|file| record(py, &file)).transpose()
}

/// The bytes of a stored file, whole or lines `first..=last` (from 1).
#[pyfunction]
#[pyo3(signature = (store, file_id, first = None, last = None))]
pub fn read_file<'py>(
    py: Python<'py>,
    store: &Store,
    file_id: String,
    first: Option<u64>,
    last: Option<u64>,
) -> PyResult<Bound<'py, PyBytes>> {
    let lines = match (first, last) {
        (Some(first), Some(last)) => Some((first, last)),
        (Some(first), None) => Some((first, u64::MAX)),
        (None, Some(last)) => Some((1, last)),
        (None, None) => None,
    };
    let bytes = store.with(py, |core| core.read_file(&file_id, lines))?;
    Ok(PyBytes::new(py, &bytes))
}

/// Writes the bytes of a stored file to the file at `dest`; returns how many.
#[pyfunction]
pub fn export_file(py: Python<'_>, store: &Store, file_id: String, dest: PathBuf) -> PyResult<u64> {
    store.with(py, |core| {
        let file = std::fs::File::create(&dest).map_err(|err| {
            lossless_core::Error::invalid("dest", format!("{}: {err}", dest.display()))
        })?;
        let mut out = std::io::BufWriter::new(file);
        let written = core.export_file(&file_id, &mut out)?;
        std::io::Write::flush(&mut out).map_err(|err| {
            lossless_core::Error::invalid("dest", format!("{}: {err}", dest.display()))
        })?;
        Ok(written)
    })
}
