//! The store's one seam between its SQL and the two databases it runs on.
//!
//! Statements are written once, in the dialect both understand, with SQLite's
//! numbered placeholders (`?1`); PostgreSQL gets them rewritten to `$1` the first time
//! a statement is prepared on a connection. Arguments are [`Value`]s (64-bit
//! integers only: PostgreSQL does not bind a smaller integer to a `BIGINT`), and
//! columns are read from a [`Row`] into plain Rust types, borrowing text and bytes
//! where SQLite lets them be borrowed. One `match` per call is all the enum costs.

mod pg;
mod values;

use std::time::Duration;

pub use pg::PgConn;
pub(crate) use values::args;
pub use values::{Arg, Row, Value};

use crate::error::{Error, Result};

/// A connection to the database behind a store.
pub enum Conn {
    Sqlite(rusqlite::Connection),
    Postgres(PgConn),
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
    use super::pg::numbered_placeholders;
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
