//! What native results share: a frozen class read by attribute, and also by name,
//! as the dict each call returned before it had a type of its own (decisions 198 and 201).

use std::convert::Infallible;
use std::fmt;

use pyo3::prelude::*;
use pyo3::pyclass::PyClass;
use pyo3::types::PyList;

/// Declares a result class and its reading by name: `row["id"]` (a `KeyError` for
/// a name it lacks), `row.get("id", default)`, `row.keys()` (the field names, in
/// order) and so `dict(row)` and `{**row}`, each giving what the dict did. Every
/// field is one key, named as the field, and a read-only attribute. `eq` first
/// (for fields that all compare) makes results equal when their fields are. The
/// `#[pyclass]` attribute is written here: PyO3's `eq` names variables of its own,
/// which a caller's tokens could not see.
macro_rules! result_class {
    (@methods $name:ident {
        $($(#[$field_meta:meta])* $field_vis:vis $field:ident: $ty:ty),* $(,)?
    }) => {
        impl $name {
            /// The field names, in the order `keys()` gives them.
            const KEYS: &'static [&'static str] = &[$(stringify!($field)),*];

            /// The value named `key`; `None` for a name it lacks, or a key not a `str`.
            fn lookup<'py>(
                &self,
                py: ::pyo3::Python<'py>,
                key: &::pyo3::Bound<'py, ::pyo3::PyAny>,
            ) -> ::pyo3::PyResult<Option<::pyo3::Bound<'py, ::pyo3::PyAny>>> {
                use ::pyo3::types::PyStringMethods as _;
                use ::pyo3::IntoPyObjectExt as _;
                let Ok(key) = key.cast::<::pyo3::types::PyString>() else {
                    return Ok(None);
                };
                let Ok(key) = key.to_cow() else {
                    return Ok(None);
                };
                Ok(Some(match &*key {
                    $(stringify!($field) => (&self.$field).into_bound_py_any(py)?,)*
                    _ => return Ok(None),
                }))
            }
        }

        #[::pyo3::pymethods]
        impl $name {
            fn __getitem__<'py>(
                &self,
                py: ::pyo3::Python<'py>,
                key: &::pyo3::Bound<'py, ::pyo3::PyAny>,
            ) -> ::pyo3::PyResult<::pyo3::Bound<'py, ::pyo3::PyAny>> {
                self.lookup(py, key)?
                    .ok_or_else(|| ::pyo3::exceptions::PyKeyError::new_err(key.clone().unbind()))
            }

            #[pyo3(signature = (key, default = None, /))]
            fn get<'py>(
                &self,
                py: ::pyo3::Python<'py>,
                key: &::pyo3::Bound<'py, ::pyo3::PyAny>,
                default: Option<::pyo3::Bound<'py, ::pyo3::PyAny>>,
            ) -> ::pyo3::PyResult<::pyo3::Bound<'py, ::pyo3::PyAny>> {
                Ok(match self.lookup(py, key)? {
                    Some(value) => value,
                    None => default.unwrap_or_else(|| py.None().into_bound(py)),
                })
            }

            /// The field names: with `__getitem__`, `dict(row)` makes the mapping.
            #[allow(clippy::unused_self)] // A method, as the mapping protocol calls it.
            fn keys(&self) -> Vec<&'static str> {
                Self::KEYS.to_vec()
            }

            fn __repr__(&self) -> String {
                format!("{self:?}")
            }
        }
    };
    (eq; $(#[$meta:meta])* $vis:vis struct $name:ident $fields:tt) => {
        #[::pyo3::pyclass(frozen, get_all, eq, skip_from_py_object, module = "lossless._native")]
        $(#[$meta])*
        $vis struct $name $fields

        $crate::results::result_class!(@methods $name $fields);
    };
    ($(#[$meta:meta])* $vis:vis struct $name:ident $fields:tt) => {
        #[::pyo3::pyclass(frozen, get_all, skip_from_py_object, module = "lossless._native")]
        $(#[$meta])*
        $vis struct $name $fields

        $crate::results::result_class!(@methods $name $fields);
    };
}

pub(crate) use result_class;

/// A list a result holds as built once (a message's part dicts, an expansion's
/// messages): each read gives the same list, and results compare it as Python
/// compares lists.
#[derive(Debug)]
pub struct SharedList(Py<PyList>);

impl SharedList {
    /// A list of `items`, converted once.
    pub fn of<'py, T: IntoPyObject<'py>>(
        py: Python<'py>,
        items: impl IntoIterator<Item = T>,
    ) -> PyResult<Self> {
        let list = PyList::empty(py);
        for item in items {
            list.append(item)?;
        }
        Ok(Self(list.unbind()))
    }
}

impl PartialEq for SharedList {
    fn eq(&self, other: &Self) -> bool {
        // Results compare under the interpreter (PyO3's `__eq__`): attaching is free.
        Python::attach(|py| self.0.bind(py).eq(other.0.bind(py)).unwrap_or(false))
    }
}

impl<'py> IntoPyObject<'py> for &SharedList {
    type Target = PyList;
    type Output = Bound<'py, PyList>;
    type Error = Infallible;

    fn into_pyobject(self, py: Python<'py>) -> Result<Self::Output, Self::Error> {
        Ok(self.0.bind(py).clone())
    }
}

/// One object a result holds (a round's prune, a span's commit): built once, so each
/// read gives the same object, and results compare and show it as Python does.
pub struct Shared<T>(Py<T>);

impl<T: PyClass> Shared<T> {
    pub fn new(py: Python<'_>, value: impl Into<PyClassInitializer<T>>) -> PyResult<Self> {
        Ok(Self(Py::new(py, value)?))
    }
}

impl<T> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        // Results compare under the interpreter (PyO3's `__eq__`): attaching is free.
        Python::attach(|py| {
            let this = self.0.bind(py).as_any();
            this.eq(other.0.bind(py).as_any()).unwrap_or(false)
        })
    }
}

impl<T> fmt::Debug for Shared<T> {
    /// The object's own `repr`: a result's `repr` shows what it holds, not an address.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Python::attach(|py| match self.0.bind(py).as_any().repr() {
            Ok(repr) => f.write_str(&repr.to_string_lossy()),
            Err(_) => f.write_str("<unprintable>"),
        })
    }
}

impl<'py, T: PyClass> IntoPyObject<'py> for &Shared<T> {
    type Target = T;
    type Output = Bound<'py, T>;
    type Error = Infallible;

    fn into_pyobject(self, py: Python<'py>) -> Result<Self::Output, Self::Error> {
        Ok(self.0.bind(py).clone())
    }
}
