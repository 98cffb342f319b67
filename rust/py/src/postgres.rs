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

/// Creates or upgrades the schema of the database at `url`, then turns row-level
/// security by tenant on for it.
#[pyfunction]
pub fn enable_postgres_tenants(py: Python<'_>, url: String) -> PyResult<()> {
    release(py, || {
        lossless_core::pg::Database::open(&url)?.enable_tenants()
    })
}
