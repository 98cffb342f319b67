//! The store's one seam between its SQL and the two databases it runs on.
//!
//! Statements are written once, in the dialect both understand, with SQLite's
//! numbered placeholders (`?1`); PostgreSQL gets them rewritten to `$1` the first time
//! a statement is prepared on a connection. Arguments are [`Value`]s (64-bit
//! integers only: PostgreSQL does not bind a smaller integer to a `BIGINT`), and
//! columns are read from a [`Row`] into plain Rust types, borrowing text and bytes
//! where SQLite lets them be borrowed. One `match` per call is all the enum costs.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use postgres::types::{FromSql, IsNull, ToSql, Type};
use rusqlite::types::{ToSqlOutput, ValueRef};

use crate::error::{Error, Result};

/// Statements a PostgreSQL connection keeps prepared before it starts over: the
/// store's are fixed strings, a few hundred at most.
const PREPARED_LIMIT: usize = 512;

/// A connection to the database behind a store.
pub enum Conn {
    Sqlite(rusqlite::Connection),
    Postgres(PgConn),
}

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

    fn error(&self, err: &postgres::Error) -> Error {
        crate::pg::error_at(err, &self.shown)
    }

    fn statement(&self, sql: &str) -> Result<postgres::Statement> {
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

    fn query(&self, sql: &str, args: &[Value<'_>]) -> Result<Vec<postgres::Row>> {
        let statement = self.statement(sql)?;
        refuse_nul(&statement, args)?;
        let bound: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a as _).collect();
        self.client
            .borrow_mut()
            .query(&statement, &bound)
            .map_err(|err| self.error(&err))
    }

    fn execute(&self, sql: &str, args: &[Value<'_>]) -> Result<u64> {
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
        &[$($crate::store::backend::Arg::value(&$arg)),*] as &[$crate::store::backend::Value<'_>]
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

/// A column's value as PostgreSQL sent it, decoded by [`Column::from_postgres`].
pub struct Raw<'a> {
    ty: Type,
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
    fn int(&self) -> std::result::Result<Option<i64>, String> {
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

    fn real(&self) -> std::result::Result<Option<f64>, String> {
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

    fn text(&self) -> std::result::Result<Option<&'a str>, String> {
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

    fn blob(&self) -> std::result::Result<Option<&'a [u8]>, String> {
        match self.ty {
            Type::BYTEA | Type::TEXT | Type::VARCHAR => Ok(self.bytes),
            _ => Err("not bytes".into()),
        }
    }
}

fn present<T>(value: std::result::Result<Option<T>, String>) -> std::result::Result<T, String> {
    value?.ok_or_else(|| "NULL where a value was expected".to_string())
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

/// A statement ready to run on one connection: rusqlite's cached statement, or a
/// PostgreSQL statement with its connection.
pub enum Statement<'c> {
    Sqlite(rusqlite::CachedStatement<'c>),
    Postgres(&'c PgConn, String),
}

impl Conn {
    /// A statement for `sql`, prepared once per connection.
    pub fn prepare_cached(&self, sql: &str) -> Result<Statement<'_>> {
        match self {
            Conn::Sqlite(conn) => Ok(Statement::Sqlite(conn.prepare_cached(sql)?)),
            Conn::Postgres(conn) => Ok(Statement::Postgres(conn, sql.to_string())),
        }
    }

    /// Runs `sql` once; the number of rows it changed.
    pub fn execute(&self, sql: &str, args: &[Value<'_>]) -> Result<usize> {
        self.prepare_cached(sql)?.execute(args)
    }

    /// The first row of `sql`, read by `read`; an error when there is none.
    pub fn query_row<T>(
        &self,
        sql: &str,
        args: &[Value<'_>],
        read: impl FnOnce(&Row<'_>) -> Result<T>,
    ) -> Result<T> {
        self.prepare_cached(sql)?.query_row(args, read)
    }

    /// The first row of `sql`, read by `read`, or `None`.
    pub fn query_opt<T>(
        &self,
        sql: &str,
        args: &[Value<'_>],
        read: impl FnOnce(&Row<'_>) -> Result<T>,
    ) -> Result<Option<T>> {
        self.prepare_cached(sql)?.query_opt(args, read)
    }

    /// Every row of `sql`, read by `read`.
    pub fn query_map<T>(
        &self,
        sql: &str,
        args: &[Value<'_>],
        read: impl FnMut(&Row<'_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        self.prepare_cached(sql)?.query_map(args, read)
    }

    /// How long a statement waits for a lock another connection holds.
    pub fn set_lock_wait(&self, wait: Duration) -> Result<()> {
        match self {
            Conn::Sqlite(conn) => Ok(conn.busy_timeout(wait)?),
            // Zero means no limit on PostgreSQL: the shortest limit it takes stands
            // for not waiting.
            Conn::Postgres(conn) => conn.batch(&format!(
                "SET lock_timeout = {}",
                wait.as_millis().clamp(1, u128::from(i32::MAX as u32))
            )),
        }
    }

    /// The statement of this connection's dialect, where the two differ.
    #[must_use]
    pub fn dialect<'s>(&self, sqlite: &'s str, postgres: &'s str) -> &'s str {
        match self {
            Conn::Sqlite(_) => sqlite,
            Conn::Postgres(_) => postgres,
        }
    }

    /// Whether this is a PostgreSQL connection.
    #[must_use]
    pub fn is_postgres(&self) -> bool {
        matches!(self, Conn::Postgres(_))
    }

    /// Runs statements without arguments.
    pub fn batch(&self, sql: &str) -> Result<()> {
        match self {
            Conn::Sqlite(conn) => Ok(conn.execute_batch(sql)?),
            Conn::Postgres(conn) => conn.batch(sql),
        }
    }
}

/// A read transaction: every query through it sees the database as it was at its
/// first read. Ended (rolled back: it wrote nothing) when dropped.
pub struct Snapshot<'c> {
    conn: &'c Conn,
}

impl Conn {
    pub fn snapshot(&self) -> Result<Snapshot<'_>> {
        self.batch(match self {
            Conn::Sqlite(_) => "BEGIN DEFERRED",
            Conn::Postgres(_) => "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
        })?;
        Ok(Snapshot { conn: self })
    }
}

impl Drop for Snapshot<'_> {
    fn drop(&mut self) {
        let _ = self.conn.batch("ROLLBACK");
    }
}

impl std::ops::Deref for Snapshot<'_> {
    type Target = Conn;

    fn deref(&self) -> &Conn {
        self.conn
    }
}

fn no_row() -> Error {
    Error::Internal("a query that returns a row returned none".into())
}

/// The rows of a query, read one at a time.
pub enum Rows<'s> {
    Sqlite(rusqlite::Rows<'s>),
    Postgres(std::vec::IntoIter<postgres::Row>, Option<postgres::Row>),
}

impl Rows<'_> {
    /// The next row, or `None` after the last.
    pub fn next(&mut self) -> Result<Option<Row<'_>>> {
        match self {
            Rows::Sqlite(rows) => Ok(rows.next()?.map(Row::Sqlite)),
            Rows::Postgres(rows, current) => {
                *current = rows.next();
                Ok(current.as_ref().map(Row::Postgres))
            }
        }
    }
}

impl Statement<'_> {
    /// The rows of the statement with `args`, to be read with [`Rows::next`].
    pub fn query(&mut self, args: &[Value<'_>]) -> Result<Rows<'_>> {
        match self {
            Statement::Sqlite(stmt) => Ok(Rows::Sqlite(
                stmt.query(rusqlite::params_from_iter(args.iter()))?,
            )),
            Statement::Postgres(conn, sql) => {
                Ok(Rows::Postgres(conn.query(sql, args)?.into_iter(), None))
            }
        }
    }

    pub fn execute(&mut self, args: &[Value<'_>]) -> Result<usize> {
        match self {
            Statement::Sqlite(stmt) => Ok(stmt.execute(rusqlite::params_from_iter(args))?),
            Statement::Postgres(conn, sql) => {
                let changed = conn.execute(sql, args)?;
                Ok(usize::try_from(changed).unwrap_or(usize::MAX))
            }
        }
    }

    pub fn query_row<T>(
        &mut self,
        args: &[Value<'_>],
        read: impl FnOnce(&Row<'_>) -> Result<T>,
    ) -> Result<T> {
        self.query_opt(args, read)?.ok_or_else(no_row)
    }

    pub fn query_opt<T>(
        &mut self,
        args: &[Value<'_>],
        read: impl FnOnce(&Row<'_>) -> Result<T>,
    ) -> Result<Option<T>> {
        match self {
            Statement::Sqlite(stmt) => {
                let mut rows = stmt.query(rusqlite::params_from_iter(args))?;
                match rows.next()? {
                    Some(row) => read(&Row::Sqlite(row)).map(Some),
                    None => Ok(None),
                }
            }
            Statement::Postgres(conn, sql) => match conn.query(sql, args)?.first() {
                Some(row) => read(&Row::Postgres(row)).map(Some),
                None => Ok(None),
            },
        }
    }

    pub fn query_map<T>(
        &mut self,
        args: &[Value<'_>],
        mut read: impl FnMut(&Row<'_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut out = Vec::new();
        self.query_each(args, |row| {
            out.push(read(row)?);
            Ok(())
        })?;
        Ok(out)
    }

    pub fn query_each(
        &mut self,
        args: &[Value<'_>],
        mut each: impl FnMut(&Row<'_>) -> Result<()>,
    ) -> Result<()> {
        match self {
            Statement::Sqlite(stmt) => {
                let mut rows = stmt.query(rusqlite::params_from_iter(args))?;
                while let Some(row) = rows.next()? {
                    each(&Row::Sqlite(row))?;
                }
            }
            Statement::Postgres(conn, sql) => {
                for row in &conn.query(sql, args)? {
                    each(&Row::Postgres(row))?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_outside_quotes() {
        assert_eq!(
            numbered_placeholders("SELECT ?2, '?1', \"a?\" FROM t WHERE x = ?1 AND y = ?"),
            "SELECT $2, '?1', \"a?\" FROM t WHERE x = $1 AND y = $3"
        );
        assert_eq!(numbered_placeholders("? ? ?10 ?"), "$1 $2 $10 $11");
    }

    #[test]
    fn sqlite_reads_and_binds_through_the_seam() {
        let conn = Conn::Sqlite(rusqlite::Connection::open_in_memory().unwrap());
        conn.batch("CREATE TABLE t (n INTEGER, x REAL, s TEXT, b BLOB)")
            .unwrap();
        let name = String::from("one");
        let none: Option<&str> = None;
        conn.execute(
            "INSERT INTO t VALUES (?1, ?2, ?3, ?4)",
            args![7_i64, 0.5, name, b"ab".as_slice()],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO t VALUES (?1, NULL, ?2, NULL)",
            args![8_i64, none],
        )
        .unwrap();
        let rows = conn
            .query_map("SELECT n, x, s, b FROM t ORDER BY n", args![], |row| {
                Ok((
                    row.get::<i64>(0)?,
                    row.get::<Option<f64>>(1)?,
                    row.get::<Option<String>>(2)?,
                    row.get::<Option<Vec<u8>>>(3)?,
                ))
            })
            .unwrap();
        assert_eq!(
            rows,
            vec![
                (7, Some(0.5), Some("one".into()), Some(b"ab".to_vec())),
                (8, None, None, None)
            ]
        );
        let missing = conn
            .query_opt("SELECT n FROM t WHERE n = ?1", args![9_i64], |row| {
                row.get::<i64>(0)
            })
            .unwrap();
        assert_eq!(missing, None);
    }
}
