//! What crosses the seam: a statement's arguments ([`Value`], [`Arg`], `args!`)
//! and a result row's columns ([`Row`], [`Column`]), on either backend.

use rusqlite::types::{ToSqlOutput, ValueRef};

use super::pg::{present, Raw};
use crate::error::{Error, Result};

/// One argument of a statement.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    Null,
    Int(i64),
    Real(f64),
    Text(&'a str),
    Blob(&'a [u8]),
}

/// What can be bound as an argument (see [`args!`]).
pub trait Arg {
    fn value(&self) -> Value<'_>;
}

impl Arg for i64 {
    fn value(&self) -> Value<'_> {
        Value::Int(*self)
    }
}

impl Arg for bool {
    fn value(&self) -> Value<'_> {
        Value::Int(i64::from(*self))
    }
}

impl Arg for f64 {
    fn value(&self) -> Value<'_> {
        Value::Real(*self)
    }
}

impl Arg for str {
    fn value(&self) -> Value<'_> {
        Value::Text(self)
    }
}

impl Arg for String {
    fn value(&self) -> Value<'_> {
        Value::Text(self)
    }
}

impl Arg for std::borrow::Cow<'_, str> {
    fn value(&self) -> Value<'_> {
        Value::Text(self)
    }
}

impl Arg for [u8] {
    fn value(&self) -> Value<'_> {
        Value::Blob(self)
    }
}

impl Arg for Vec<u8> {
    fn value(&self) -> Value<'_> {
        Value::Blob(self)
    }
}

impl<T: Arg + ?Sized> Arg for &T {
    fn value(&self) -> Value<'_> {
        (**self).value()
    }
}

impl<T: Arg> Arg for Option<T> {
    fn value(&self) -> Value<'_> {
        self.as_ref().map_or(Value::Null, Arg::value)
    }
}

impl Arg for Value<'_> {
    fn value(&self) -> Value<'_> {
        *self
    }
}

/// The arguments of a statement, as `params!` gives them for rusqlite.
macro_rules! args {
    ($($arg:expr),* $(,)?) => {
        &[$($crate::db::backend::Arg::value(&$arg)),*] as &[$crate::db::backend::Value<'_>]
    };
}
pub(crate) use args;

impl rusqlite::ToSql for Value<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match *self {
            Value::Null => ValueRef::Null,
            Value::Int(n) => ValueRef::Integer(n),
            Value::Real(x) => ValueRef::Real(x),
            Value::Text(text) => ValueRef::Text(text.as_bytes()),
            Value::Blob(bytes) => ValueRef::Blob(bytes),
        }))
    }
}

/// One result row.
pub enum Row<'r> {
    Sqlite(&'r rusqlite::Row<'r>),
    Postgres(&'r postgres::Row),
}

impl<'r> Row<'r> {
    /// Column `index`, as `T`.
    pub fn get<T: Column<'r>>(&self, index: usize) -> Result<T> {
        match *self {
            Row::Sqlite(row) => T::from_sqlite(row.get_ref(index)?),
            Row::Postgres(row) => {
                let raw: Raw<'r> = row
                    .try_get(index)
                    .map_err(|err| Error::Postgres(format!("column {index}: {err}")))?;
                T::from_postgres(&raw).map_err(|reason| {
                    Error::Postgres(format!("column {index} ({}): {reason}", raw.ty))
                })
            }
        }
    }
}

/// A Rust type a column can be read into, on either backend.
pub trait Column<'r>: Sized {
    fn from_sqlite(value: ValueRef<'r>) -> Result<Self>;
    fn from_postgres(raw: &Raw<'r>) -> std::result::Result<Self, String>;
}

/// Reads an owned type from SQLite through rusqlite's own conversion.
macro_rules! column {
    ($ty:ty, $pg:expr) => {
        impl<'r> Column<'r> for $ty {
            fn from_sqlite(value: ValueRef<'r>) -> Result<Self> {
                Ok(<$ty as rusqlite::types::FromSql>::column_result(value)?)
            }
            fn from_postgres(raw: &Raw<'r>) -> std::result::Result<Self, String> {
                #[allow(clippy::redundant_closure_call)]
                ($pg)(raw)
            }
        }
    };
}

column!(i64, |raw: &Raw<'_>| present(raw.int()));
column!(Option<i64>, |raw: &Raw<'_>| raw.int());
column!(bool, |raw: &Raw<'_>| present(raw.int()).map(|n| n != 0));
column!(f64, |raw: &Raw<'_>| present(raw.real()));
column!(Option<f64>, |raw: &Raw<'_>| raw.real());
column!(String, |raw: &Raw<'_>| present(raw.text())
    .map(str::to_string));
column!(Option<String>, |raw: &Raw<'_>| raw
    .text()
    .map(|t| t.map(str::to_string)));
column!(Vec<u8>, |raw: &Raw<'_>| present(raw.blob())
    .map(<[u8]>::to_vec));
column!(Option<Vec<u8>>, |raw: &Raw<'_>| raw
    .blob()
    .map(|b| b.map(<[u8]>::to_vec)));

impl<'r> Column<'r> for &'r str {
    fn from_sqlite(value: ValueRef<'r>) -> Result<Self> {
        Ok(value.as_str()?)
    }
    fn from_postgres(raw: &Raw<'r>) -> std::result::Result<Self, String> {
        present(raw.text())
    }
}

impl<'r> Column<'r> for Option<&'r str> {
    fn from_sqlite(value: ValueRef<'r>) -> Result<Self> {
        Ok(value.as_str_or_null()?)
    }
    fn from_postgres(raw: &Raw<'r>) -> std::result::Result<Self, String> {
        raw.text()
    }
}

impl<'r> Column<'r> for &'r [u8] {
    fn from_sqlite(value: ValueRef<'r>) -> Result<Self> {
        Ok(value.as_blob()?)
    }
    fn from_postgres(raw: &Raw<'r>) -> std::result::Result<Self, String> {
        present(raw.blob())
    }
}
