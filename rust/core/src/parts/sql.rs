//! SQL derived from the kinds' declarations: the schemas' constraint on
//! `parts.kind` and the expression the search index reads a part's text with.

use std::fmt::Write as _;
use std::sync::LazyLock;

use super::{KIND_NAMES, KIND_SEARCH_SQL};

/// A kind name the first schema allowed that no part has ever held: kept in the
/// constraint so it reads the same in new and migrated databases.
const RESERVED_KINDS: &[&str] = &["compaction_marker"];

/// The list of kind names a `CHECK (kind IN (...))` constraint allows, quoted.
#[must_use]
pub fn kind_check() -> String {
    KIND_NAMES
        .iter()
        .chain(RESERVED_KINDS)
        .map(|name| format!("'{name}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a part is found by, as SQL over its row `p` of `parts` and `o` of
/// `tool_outputs`, in SQLite's dialect or PostgreSQL's: each kind's declared
/// expression, the stored body for kinds that declare none. One expression for
/// the index, a read-only store's search of rows still queued, and recall.
#[must_use]
pub fn search_text_sql(postgres: bool) -> &'static str {
    static SQLITE: LazyLock<String> = LazyLock::new(|| case_over_kinds(false));
    static POSTGRES: LazyLock<String> = LazyLock::new(|| case_over_kinds(true));
    if postgres {
        &POSTGRES
    } else {
        &SQLITE
    }
}

fn case_over_kinds(postgres: bool) -> String {
    let mut sql = String::from("CASE p.kind");
    for (name, search) in KIND_SEARCH_SQL {
        let expression = if postgres {
            search.postgres
        } else {
            search.sqlite
        };
        if let Some(expression) = expression {
            let _ = write!(sql, " WHEN '{name}' THEN {expression}");
        }
    }
    sql.push_str(" ELSE p.body END");
    sql
}
