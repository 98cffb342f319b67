//! Encryption at rest: the key argument of a store, and copying a plain database
//! into an encrypted one.

use lossless_core::store::DatabaseKey;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::convert;
use crate::errors::to_py_err;
use crate::release;

/// A key argument: `None`, or the 32 bytes of a raw 256-bit key (the Python
/// facade turns hex, base64, a callback or a key file into them).
pub fn key_arg(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<DatabaseKey>> {
    let Some(value) = value.filter(|value| !value.is_none()) else {
        return Ok(None);
    };
    let bytes = value.cast::<PyBytes>().map_err(|_| {
        crate::errors::invalid(
            "encryption_key",
            &format!("expected bytes, got {}", convert::type_name(value)),
        )
    })?;
    DatabaseKey::new(bytes.as_bytes())
        .map(Some)
        .map_err(to_py_err)
}

/// Writes an encrypted copy of the plain lossless database at `src` to `dst`,
/// which must not exist yet; `key` is the 32 bytes of a raw 256-bit key.
#[pyfunction]
pub fn encrypt_database(
    py: Python<'_>,
    src: &Bound<'_, PyAny>,
    dst: &Bound<'_, PyAny>,
    key: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let src = convert::text(src, "src")?;
    let dst = convert::text(dst, "dst")?;
    let key = key_arg(Some(key))?
        .ok_or_else(|| crate::errors::invalid("encryption_key", "a key is required"))?;
    release(py, || lossless_core::store::encrypt_copy(&src, &dst, &key))
}
