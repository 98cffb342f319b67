//! The PostgreSQL backend's schema, prepared ahead of the workers that use it.

use pyo3::prelude::*;

use crate::release;

/// Connects to the database at `url`, creates or upgrades the lossless schema, and
/// returns its version.
#[pyfunction]
pub fn prepare_postgres(py: Python<'_>, url: String) -> PyResult<i64> {
    release(py, || {
        lossless_core::pg::Database::open(&url).map(|_| lossless_core::pg::schema::SCHEMA_VERSION)
    })
}
