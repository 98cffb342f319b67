//! Files kept whole: the streamed scan, storing, and reading back by line range.

use std::path::PathBuf;

use lossless_core::filescan;
use lossless_core::store::{FileRecord as CoreFileRecord, NewFile};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::release;
use crate::results::result_class;
use crate::store::Store;

result_class! {
    eq;
    /// A stored file: its reference (path, type, tokens, summary) and its bytes' size.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct FileRecord {
        file_id: String,
        content_hash: String,
        path: String,
        file_type: String,
        token_count: i64,
        summary: String,
        created_at: i64,
        byte_count: i64,
        line_count: i64,
        stored_bytes: i64,
        is_text: bool,
    }
}

impl From<CoreFileRecord> for FileRecord {
    fn from(file: CoreFileRecord) -> Self {
        Self {
            file_id: file.file_id,
            content_hash: file.content_hash,
            path: file.path,
            file_type: file.file_type,
            token_count: file.token_count,
            summary: file.summary,
            created_at: file.created_at,
            byte_count: file.byte_count,
            line_count: file.line_count,
            stored_bytes: file.stored_bytes,
            is_text: file.is_text,
        }
    }
}

result_class! {
    eq;
    /// One streamed pass over a file: its hash and id, its size, and its content's kind.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct FileScan {
        sha256: String,
        file_id: String,
        bytes: u64,
        lines: u64,
        has_nul: bool,
        utf8: bool,
    }
}

/// One streamed pass over the file at `path`: its hash, size and kind of content.
#[pyfunction]
pub fn scan_file(py: Python<'_>, path: PathBuf) -> PyResult<FileScan> {
    let (scan, ends) = release(py, || filescan::scan_path(&path))?;
    Ok(FileScan {
        file_id: scan.file_id(),
        lines: scan.lines(ends),
        sha256: scan.sha256,
        bytes: scan.bytes,
        has_nul: scan.has_nul,
        utf8: scan.utf8,
    })
}

/// Stores the file at `source` (whose scan found `sha256`) with its reference;
/// returns its record and whether it was stored now (else it was stored before).
#[pyfunction]
#[pyo3(signature = (store, source, sha256, path, file_type, token_count, summary))]
#[expect(
    clippy::too_many_arguments,
    reason = "one argument per column of the reference"
)]
pub fn store_file(
    py: Python<'_>,
    store: &Store,
    source: PathBuf,
    sha256: String,
    path: String,
    file_type: String,
    token_count: i64,
    summary: String,
) -> PyResult<(FileRecord, bool)> {
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
    Ok((FileRecord::from(file), stored))
}

/// The stored file `file_id`, or `None`.
#[pyfunction]
pub fn file_record(py: Python<'_>, store: &Store, file_id: String) -> PyResult<Option<FileRecord>> {
    let found = store.with(py, |core| core.file_record(&file_id))?;
    Ok(found.map(FileRecord::from))
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
