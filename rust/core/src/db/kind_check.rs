//! Widening the `parts.kind` constraint of a SQLite file in place, to the kinds
//! this build declares (`parts::kind_check`).
//!
//! SQLite cannot alter a `CHECK` constraint, and rebuilding `parts` (a new table,
//! every row copied, the old one dropped) would take minutes and twice the space on
//! a file of millions of parts. SQLite documents a procedure for schema changes
//! that no stored row can violate ("Making Other Kinds Of Table Schema Changes",
//! <https://www.sqlite.org/lang_altertable.html#otheralter>): the table's `CREATE`
//! statement is rewritten in `sqlite_schema` under `PRAGMA writable_schema`, the
//! schema version is incremented so that every connection reads the schema again,
//! and `PRAGMA integrity_check` verifies the result, all in one transaction.
//!
//! It is safe here because the new constraint only allows more: every stored row
//! satisfied the old list, which the new one contains (checked below before
//! anything is written), and nothing else of the table changes (its columns, its
//! rowid, its indexes and triggers), so the pages on disk stay valid under the new
//! definition.

use std::collections::HashSet;

use rusqlite::Transaction;

use crate::error::{Error, Result};

/// Where the constraint's list begins in the table's `CREATE` statement.
const LIST_START: &str = "CHECK (kind IN (";

/// Rewrites the `parts` table's constraint to allow every declared kind, in the
/// migration's transaction `tx`; nothing when it already does.
pub(crate) fn widen(tx: &Transaction<'_>, path: &str) -> Result<()> {
    let sql: String = tx.query_row(
        "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'parts'",
        [],
        |row| row.get(0),
    )?;
    let Some(widened) =
        widened_sql(&sql, &crate::parts::kind_check()).map_err(|reason| Error::Corrupt {
            path: path.to_string(),
            reason,
        })?
    else {
        return Ok(());
    };
    let version: i64 = tx.query_row("PRAGMA schema_version", [], |row| row.get(0))?;
    tx.execute_batch("PRAGMA writable_schema = ON")?;
    let rewritten = tx
        .execute(
            "UPDATE sqlite_schema SET sql = ?1 WHERE type = 'table' AND name = 'parts'",
            [&widened],
        )
        .and_then(|_| tx.execute_batch(&format!("PRAGMA schema_version = {}", version + 1)));
    // Off again whatever happened: the connection is the store's from here on.
    tx.execute_batch("PRAGMA writable_schema = OFF")?;
    rewritten?;
    let verdict: String = tx.query_row("PRAGMA integrity_check(parts)", [], |row| row.get(0))?;
    if verdict != "ok" {
        return Err(Error::Corrupt {
            path: path.to_string(),
            reason: format!(
                "the parts table failed its check after the kind constraint was widened: {verdict}"
            ),
        });
    }
    Ok(())
}

/// `sql` (the `parts` table's `CREATE` statement) with its kind list replaced by
/// `kinds`, or `None` when it is `kinds` already. Refuses a statement whose list
/// is not found exactly once or allows a kind `kinds` lacks: the rewrite must only
/// ever allow more.
pub(crate) fn widened_sql(sql: &str, kinds: &str) -> std::result::Result<Option<String>, String> {
    if sql.matches(LIST_START).count() != 1 {
        return Err("the parts table has no single kind constraint to widen".into());
    }
    let start = sql.find(LIST_START).expect("counted above") + LIST_START.len();
    let end = start
        + sql[start..]
            .find(')')
            .ok_or("the parts table's kind constraint is not closed")?;
    let stored = &sql[start..end];
    if stored == kinds {
        return Ok(None);
    }
    let allowed: HashSet<&str> = kinds.split(',').map(str::trim).collect();
    if let Some(unknown) = stored
        .split(',')
        .map(str::trim)
        .find(|name| !allowed.contains(name))
    {
        return Err(format!(
            "the parts table allows the kind {unknown}, which this build does not declare"
        ));
    }
    Ok(Some(format!("{}{kinds}{}", &sql[..start], &sql[end..])))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "CREATE TABLE parts (\n    kind TEXT NOT NULL CHECK (kind IN ('text', 'tool')),\n    body TEXT\n)";

    #[test]
    fn the_list_is_replaced_and_nothing_else() {
        let widened = widened_sql(OLD, "'text', 'tool', 'reasoning'")
            .unwrap()
            .unwrap();
        assert_eq!(widened, OLD.replace("'tool')", "'tool', 'reasoning')"));
        assert_eq!(
            widened_sql(&widened, "'text', 'tool', 'reasoning'"),
            Ok(None)
        );
    }

    #[test]
    fn a_list_that_would_narrow_or_is_missing_is_refused() {
        assert!(widened_sql(OLD, "'text'").is_err());
        assert!(widened_sql("CREATE TABLE parts (kind TEXT)", "'text'").is_err());
    }
}
