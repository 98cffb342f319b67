//! Erasure receipts: what was erased, when and by whom, never the content.

use serde::Serialize;

use crate::db::backend::{args, Conn};
use crate::error::Result;
use crate::ids::{new_id, now_ms};
use crate::store::Store;

use super::{Erased, Target};

/// One erasure, as recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Receipt {
    pub id: String,
    /// `session`, `message` or `subject`.
    pub target_kind: String,
    pub target: String,
    pub erased_by: String,
    pub reason: String,
    /// Milliseconds since the Unix epoch.
    pub erased_at: i64,
    /// What was removed (the JSON of [`Erased`]).
    pub counts: String,
    /// Whether the bytes were scrubbed after the commit (the log truncated, the
    /// tables vacuumed); not stored: false when another connection kept the
    /// write-ahead log busy or the server refused the vacuum.
    pub scrubbed: bool,
}

/// Records the receipt of `target` in the erasure's transaction.
pub(super) fn write(
    tx: &Conn,
    target: &Target,
    by: &str,
    reason: &str,
    erased: &Erased,
) -> Result<Receipt> {
    let receipt = Receipt {
        id: new_id("era"),
        target_kind: target.kind().to_string(),
        target: target.id().to_string(),
        erased_by: by.to_string(),
        reason: reason.to_string(),
        erased_at: now_ms(),
        counts: serde_json::to_string(erased).unwrap_or_default(),
        scrubbed: false,
    };
    tx.execute(
        "INSERT INTO erasure_receipts (id, target_kind, target, erased_by, reason, erased_at, counts)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        args![
            receipt.id,
            receipt.target_kind,
            receipt.target,
            receipt.erased_by,
            receipt.reason,
            receipt.erased_at,
            receipt.counts
        ],
    )?;
    Ok(receipt)
}

impl Store {
    /// Every erasure receipt, oldest first.
    pub fn erasure_receipts(&self) -> Result<Vec<Receipt>> {
        self.conn
            .prepare_cached(
                "SELECT id, target_kind, target, erased_by, reason, erased_at, counts
                 FROM erasure_receipts ORDER BY erased_at, id",
            )?
            .query_map(args![], |row| {
                Ok(Receipt {
                    id: row.get(0)?,
                    target_kind: row.get(1)?,
                    target: row.get(2)?,
                    erased_by: row.get(3)?,
                    reason: row.get(4)?,
                    erased_at: row.get(5)?,
                    counts: row.get(6)?,
                    scrubbed: true,
                })
            })
    }
}
