//! The PostgreSQL side of the seam: a connection with its prepared statements,
//! placeholders rewritten to `$N`, values bound and columns decoded by hand.

use std::cell::RefCell;
use std::collections::HashMap;

use postgres::types::{FromSql, IsNull, ToSql, Type};

use super::Value;
use crate::error::{Error, Result};

/// Statements a PostgreSQL connection keeps prepared before it starts over: the
/// store's are fixed strings, a few hundred at most.
const PREPARED_LIMIT: usize = 512;

/// A PostgreSQL connection with the statements prepared on it, by their SQL.
pub struct PgConn {
    client: RefCell<postgres::Client>,
    prepared: RefCell<HashMap<String, postgres::Statement>>,
    /// The URL without its password, for errors.
    shown: String,
}

impl PgConn {
    #[must_use]
    pub fn new(client: postgres::Client, shown: &str) -> Self {
        Self {
            client: RefCell::new(client),
            prepared: RefCell::new(HashMap::new()),
            shown: shown.to_string(),
        }
    }

    /// The URL of the database, without its password.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.shown
    }

    pub(crate) fn error(&self, err: &postgres::Error) -> Error {
        crate::pg::error_at(err, &self.shown)
    }

    pub(crate) fn statement(&self, sql: &str) -> Result<postgres::Statement> {
        if let Some(statement) = self.prepared.borrow().get(sql) {
            return Ok(statement.clone());
        }
        let statement = self
            .client
            .borrow_mut()
            .prepare(&numbered_placeholders(sql))
            .map_err(|err| self.error(&err))?;
        let mut prepared = self.prepared.borrow_mut();
        if prepared.len() >= PREPARED_LIMIT {
            prepared.clear();
        }
        prepared.insert(sql.to_string(), statement.clone());
        Ok(statement)
    }

    pub(crate) fn query(&self, sql: &str, args: &[Value<'_>]) -> Result<Vec<postgres::Row>> {
        let statement = self.statement(sql)?;
        refuse_nul(&statement, args)?;
        let bound: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a as _).collect();
        self.client
            .borrow_mut()
            .query(&statement, &bound)
            .map_err(|err| self.error(&err))
    }

    pub(crate) fn execute(&self, sql: &str, args: &[Value<'_>]) -> Result<u64> {
        let statement = self.statement(sql)?;
        refuse_nul(&statement, args)?;
        let bound: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a as _).collect();
        self.client
            .borrow_mut()
            .execute(&statement, &bound)
            .map_err(|err| self.error(&err))
    }

    /// Runs statements without arguments (transaction control, settings).
    pub fn batch(&self, sql: &str) -> Result<()> {
        self.client
            .borrow_mut()
            .batch_execute(sql)
            .map_err(|err| self.error(&err))
    }

    /// The client, for work the seam does not cover (migrations, the lease).
    pub fn client(&self) -> std::cell::RefMut<'_, postgres::Client> {
        self.client.borrow_mut()
    }
}

/// `sql` with SQLite's placeholders (`?7`, or a bare `?` numbered after the highest
/// so far) written as PostgreSQL's (`$7`), leaving quoted text and identifiers alone.
#[must_use]
pub fn numbered_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut chars = sql.chars().peekable();
    let mut quote: Option<char> = None;
    let mut highest = 0u32;
    while let Some(c) = chars.next() {
        if let Some(open) = quote {
            out.push(c);
            if c == open {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => {
                quote = Some(c);
                out.push(c);
            }
            '?' => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    digits.push(*d);
                    chars.next();
                }
                let number = digits.parse().unwrap_or(highest + 1);
                highest = highest.max(number);
                out.push('$');
                out.push_str(&number.to_string());
            }
            _ => out.push(c),
        }
    }
    out
}

type BoxError = Box<dyn std::error::Error + Sync + Send>;

/// PostgreSQL's text types cannot hold U+0000, which SQLite stores as any other
/// character: such a text is refused as bad input before the statement runs, so
/// the write's transaction rolls back whole (decision 151).
fn refuse_nul(statement: &postgres::Statement, args: &[Value<'_>]) -> Result<()> {
    let binary = |index: usize| statement.params().get(index) == Some(&Type::BYTEA);
    match args.iter().enumerate().find(|(index, arg)| {
        matches!(arg, Value::Text(text) if text.contains('\0')) && !binary(*index)
    }) {
        Some(_) => Err(Error::invalid(
            "text",
            "contains the NUL character (U+0000), which a PostgreSQL store cannot hold",
        )),
        None => Ok(()),
    }
}

impl ToSql for Value<'_> {
    /// Binds to the type the server inferred for the placeholder: an integer to any
    /// integer, boolean or floating column, text to any text-like one.
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut postgres::types::private::BytesMut,
    ) -> std::result::Result<IsNull, BoxError> {
        match *self {
            Value::Null => Ok(IsNull::Yes),
            Value::Int(n) => match *ty {
                Type::INT4 => i32::try_from(n)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(n)?.to_sql(ty, out),
                Type::BOOL => (n != 0).to_sql(ty, out),
                // Exact for every count and size the store keeps.
                #[allow(clippy::cast_precision_loss)]
                Type::FLOAT8 => (n as f64).to_sql(ty, out),
                Type::TEXT | Type::VARCHAR => n.to_string().to_sql(ty, out),
                _ => n.to_sql(ty, out),
            },
            Value::Real(x) => x.to_sql(ty, out),
            Value::Text(text) => match *ty {
                Type::JSONB => {
                    out.extend_from_slice(&[1]);
                    out.extend_from_slice(text.as_bytes());
                    Ok(IsNull::No)
                }
                Type::BYTEA => text.as_bytes().to_sql(ty, out),
                _ => {
                    out.extend_from_slice(text.as_bytes());
                    Ok(IsNull::No)
                }
            },
            Value::Blob(bytes) => bytes.to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}

/// A column's value as PostgreSQL sent it, decoded by [`Column::from_postgres`].
pub struct Raw<'a> {
    pub(crate) ty: Type,
    bytes: Option<&'a [u8]>,
}

impl<'a> FromSql<'a> for Raw<'a> {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> std::result::Result<Self, BoxError> {
        Ok(Self {
            ty: ty.clone(),
            bytes: Some(raw),
        })
    }

    fn from_sql_null(ty: &Type) -> std::result::Result<Self, BoxError> {
        Ok(Self {
            ty: ty.clone(),
            bytes: None,
        })
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

impl<'a> Raw<'a> {
    pub(crate) fn int(&self) -> std::result::Result<Option<i64>, String> {
        let Some(bytes) = self.bytes else {
            return Ok(None);
        };
        let wrong = || format!("{} bytes for an integer", bytes.len());
        let value = match self.ty {
            Type::INT8 => i64::from_be_bytes(bytes.try_into().map_err(|_| wrong())?),
            Type::INT4 => i64::from(i32::from_be_bytes(bytes.try_into().map_err(|_| wrong())?)),
            Type::INT2 => i64::from(i16::from_be_bytes(bytes.try_into().map_err(|_| wrong())?)),
            Type::BOOL => i64::from(bytes.first().is_some_and(|b| *b != 0)),
            _ => return Err("not an integer (CAST it to BIGINT)".into()),
        };
        Ok(Some(value))
    }

    pub(crate) fn real(&self) -> std::result::Result<Option<f64>, String> {
        let Some(bytes) = self.bytes else {
            return Ok(None);
        };
        match self.ty {
            Type::FLOAT8 => Ok(Some(f64::from_be_bytes(
                bytes
                    .try_into()
                    .map_err(|_| "8 bytes expected".to_string())?,
            ))),
            Type::FLOAT4 => Ok(Some(f64::from(f32::from_be_bytes(
                bytes
                    .try_into()
                    .map_err(|_| "4 bytes expected".to_string())?,
            )))),
            // Integers read as reals, as SQLite's do.
            #[allow(clippy::cast_precision_loss)]
            _ => Ok(self.int()?.map(|n| n as f64)),
        }
    }

    pub(crate) fn text(&self) -> std::result::Result<Option<&'a str>, String> {
        let Some(bytes) = self.bytes else {
            return Ok(None);
        };
        let bytes = match self.ty {
            Type::JSONB => bytes.get(1..).unwrap_or_default(),
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::JSON | Type::UNKNOWN => {
                bytes
            }
            _ => return Err("not text".into()),
        };
        std::str::from_utf8(bytes)
            .map(Some)
            .map_err(|err| err.to_string())
    }

    pub(crate) fn blob(&self) -> std::result::Result<Option<&'a [u8]>, String> {
        match self.ty {
            Type::BYTEA | Type::TEXT | Type::VARCHAR => Ok(self.bytes),
            _ => Err("not bytes".into()),
        }
    }
}

pub(crate) fn present<T>(
    value: std::result::Result<Option<T>, String>,
) -> std::result::Result<T, String> {
    value?.ok_or_else(|| "NULL where a value was expected".to_string())
}
