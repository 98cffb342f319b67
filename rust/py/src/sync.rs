//! The digests of a handed-over history, read straight from the caller's Python
//! objects (dicts, lists, strings, numbers, or models with `model_dump`), in the
//! core's canonical encoding: no JSON text is made.

use lossless_core::sync::{chain_next, chain_seed, CanonicalHasher, DIGEST_BYTES};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::convert::type_name;
use crate::errors::invalid;

/// Deep enough for any message; deeper is a cycle or not a message.
const MAX_DEPTH: usize = 64;

/// The digest of `messages[..=i]` for each `i`, after the digest of `system` (the
/// separate system text of an Anthropic request), as one `bytes` of 16 bytes each.
#[pyfunction]
#[pyo3(signature = (messages, system = None))]
pub fn sync_chain<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyList>,
    system: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let system = system.map(|value| digest_of(value, "system")).transpose()?;
    let mut digest = chain_seed(system.as_ref());
    let mut chain = Vec::with_capacity(messages.len() * DIGEST_BYTES);
    for (index, message) in messages.iter().enumerate() {
        let field = format!("messages[{index}]");
        digest = chain_next(&digest, &digest_of(&message, &field)?);
        chain.extend_from_slice(&digest);
    }
    Ok(PyBytes::new(py, &chain))
}

fn digest_of(value: &Bound<'_, PyAny>, field: &str) -> PyResult<[u8; 32]> {
    let mut hasher = CanonicalHasher::new();
    feed(&mut hasher, value, field, 0)?;
    Ok(hasher.finish())
}

fn feed(
    hasher: &mut CanonicalHasher,
    value: &Bound<'_, PyAny>,
    field: &str,
    depth: usize,
) -> PyResult<()> {
    if depth > MAX_DEPTH {
        return Err(invalid(field, "is nested too deeply to be a message"));
    }
    if value.is_none() {
        hasher.null();
    } else if let Ok(text) = value.cast::<PyString>() {
        let text = text
            .to_str()
            .map_err(|_| invalid(field, "is not valid text (it holds a lone surrogate)"))?;
        hasher.string(text);
    } else if let Ok(flag) = value.cast::<PyBool>() {
        hasher.boolean(flag.is_true());
    } else if let Ok(number) = value.cast::<PyInt>() {
        match number.extract::<i64>() {
            Ok(n) => hasher.integer(n),
            Err(_) => hasher.big_integer(&number.str()?.to_cow()?),
        }
    } else if let Ok(number) = value.cast::<PyFloat>() {
        hasher.float(number.value());
    } else if let Ok(dict) = value.cast::<PyDict>() {
        feed_dict(hasher, dict, field, depth)?;
    } else if let Ok(list) = value.cast::<PyList>() {
        hasher.array(list.len());
        for item in list.iter() {
            feed(hasher, &item, field, depth + 1)?;
        }
    } else if let Ok(tuple) = value.cast::<PyTuple>() {
        hasher.array(tuple.len());
        for item in tuple.iter() {
            feed(hasher, &item, field, depth + 1)?;
        }
    } else if value.hasattr("model_dump")? {
        // An SDK's message model: the dict it stands for.
        let dumped = value.call_method0("model_dump")?;
        feed(hasher, &dumped, field, depth + 1)?;
    } else {
        return Err(invalid(
            field,
            &format!(
                "holds a {} where a message holds JSON values",
                type_name(value)
            ),
        ));
    }
    Ok(())
}

fn feed_dict(
    hasher: &mut CanonicalHasher,
    dict: &Bound<'_, PyDict>,
    field: &str,
    depth: usize,
) -> PyResult<()> {
    let mut members = Vec::with_capacity(dict.len());
    for (key, item) in dict.iter() {
        if item.is_none() {
            continue;
        }
        let key = key
            .cast_into::<PyString>()
            .map_err(|_| invalid(field, "has a key that is not a string"))?;
        members.push((key, item));
    }
    let mut keyed = members
        .iter()
        .map(|(key, item)| Ok((key.to_str()?, item)))
        .collect::<PyResult<Vec<_>>>()
        .map_err(|_: PyErr| invalid(field, "has a key that is not valid text"))?;
    keyed.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    hasher.object(keyed.len());
    for (key, item) in keyed {
        hasher.key(key);
        feed(hasher, item, field, depth + 1)?;
    }
    Ok(())
}
