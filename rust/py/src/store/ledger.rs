//! The session ledger: the store side of `session.ledger`.

use lossless_core::ledger::store::{LedgerCaps, LedgerEdit, LedgerRow, LedgerUpdate};
use lossless_core::ledger::{Item, Kind, Origin};
use pyo3::prelude::*;

use crate::errors::invalid;
use crate::results::result_class;

use super::Store;

#[pymethods]
impl Store {
    /// The live items of `session_id`'s ledger, in the order they were written.
    fn ledger_items(&self, py: Python<'_>, session_id: &str) -> PyResult<Vec<LedgerItemRow>> {
        let items = self.with(py, |store| store.ledger_items(session_id))?;
        Ok(items.into_iter().map(LedgerItemRow::from).collect())
    }

    /// Every stored value of `session_id`'s ledger (of `subject` alone, when given),
    /// oldest first, removals included.
    #[pyo3(signature = (session_id, subject = None))]
    fn ledger_history(
        &self,
        py: Python<'_>,
        session_id: &str,
        subject: Option<String>,
    ) -> PyResult<Vec<LedgerItemRow>> {
        let rows = self.with(py, |store| {
            store.ledger_history(session_id, subject.as_deref())
        })?;
        Ok(rows.into_iter().map(LedgerItemRow::from).collect())
    }

    /// Applies `edits` (`("set", kind, subject, text)` or `("remove", "", subject,
    /// "")`) in one transaction and renders the ledger again within the caps;
    /// `origin` is `caller` or `model`.
    #[pyo3(signature = (session_id, edits, stable_cap, volatile_cap, origin = "caller"))]
    fn ledger_edit(
        &self,
        py: Python<'_>,
        session_id: &str,
        edits: Vec<(String, String, String, String)>,
        stable_cap: i64,
        volatile_cap: i64,
        origin: &str,
    ) -> PyResult<LedgerUpdateResult> {
        let origin = match origin {
            "caller" | "model" => Origin::parse(origin).map_err(crate::errors::to_py_err)?,
            other => {
                return Err(invalid(
                    "origin",
                    &format!("expected caller or model, got {other:?}"),
                ))
            }
        };
        let edits = edits
            .into_iter()
            .enumerate()
            .map(|(at, (op, kind, subject, text))| match op.as_str() {
                "set" => Ok(LedgerEdit::Set {
                    kind: Kind::parse(&kind).map_err(crate::errors::to_py_err)?,
                    subject,
                    text,
                }),
                "remove" => Ok(LedgerEdit::Remove { subject }),
                other => Err(invalid(
                    &format!("edits[{at}]"),
                    &format!("expected set or remove, got {other:?}"),
                )),
            })
            .collect::<PyResult<Vec<_>>>()?;
        let caps = LedgerCaps::new(stable_cap, volatile_cap);
        let update = self.with(py, |store| {
            store.ledger_edit(session_id, &edits, caps, origin)
        })?;
        Ok(update.into())
    }

    /// Reads the messages compaction took out of the view since the last call into
    /// the ledger and renders it again, in one transaction.
    fn absorb_ledger(
        &self,
        py: Python<'_>,
        session_id: &str,
        stable_cap: i64,
        volatile_cap: i64,
    ) -> PyResult<LedgerUpdateResult> {
        let caps = LedgerCaps::new(stable_cap, volatile_cap);
        let update = self.with(py, |store| store.absorb_ledger(session_id, caps))?;
        Ok(update.into())
    }

    /// The ledger as the request carries it: `(stable, volatile, counts)`.
    fn ledger_render(
        &self,
        py: Python<'_>,
        session_id: &str,
        stable_cap: i64,
        volatile_cap: i64,
    ) -> PyResult<(String, String, LedgerUpdateResult)> {
        let caps = LedgerCaps::new(stable_cap, volatile_cap);
        let (rendered, update) = self.with(py, |store| store.ledger_render(session_id, caps))?;
        Ok((rendered.stable, rendered.volatile, update.into()))
    }
}

/// The subject the built-in rules give `text`: what a later text must be about to
/// replace it in the ledger.
#[pyfunction]
pub fn ledger_subject(text: &str) -> String {
    lossless_core::ledger::subject_of(text)
}

result_class! {
    eq;
    /// One value of a ledger subject: its `kind`, `text` and `origin` (extracted,
    /// model or caller), whether it `changed` an earlier value or `removed` the
    /// subject, where it came from (`seq`, `message_ids`) and where the subject was
    /// first seen (`first_seq`).
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct LedgerItemRow {
        id: String,
        kind: String,
        subject: String,
        text: String,
        origin: String,
        changed: bool,
        removed: bool,
        seq: i64,
        first_seq: i64,
        ord: i64,
        message_ids: Vec<String>,
    }
}

impl From<Item> for LedgerItemRow {
    fn from(item: Item) -> Self {
        Self {
            id: item.id,
            kind: item.kind.as_str().to_string(),
            subject: item.subject,
            text: item.text,
            origin: item.origin.as_str().to_string(),
            changed: item.changed,
            removed: false,
            seq: item.seq,
            first_seq: item.first_seq,
            ord: item.ord,
            message_ids: item.message_ids,
        }
    }
}

impl From<LedgerRow> for LedgerItemRow {
    fn from(row: LedgerRow) -> Self {
        Self {
            id: row.id,
            kind: row.kind.as_str().to_string(),
            subject: row.subject,
            text: row.text,
            origin: row.origin.as_str().to_string(),
            changed: row.changed,
            removed: row.removed,
            seq: row.msg_seq,
            first_seq: row.msg_seq,
            ord: row.ord,
            message_ids: row.message_ids,
        }
    }
}

result_class! {
    eq;
    /// What a write to the ledger did: values `added` (of which `changed` replaced
    /// one), subjects `removed`, whether the request's ledger text changed
    /// (`rendered`), the tokens of its two parts, what was left out for room
    /// (`(kind, count)` pairs) and how far the messages have been read into it.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct LedgerUpdateResult {
        added: usize,
        changed: usize,
        removed: usize,
        rendered: bool,
        stable_tokens: i64,
        volatile_tokens: i64,
        left_out: Vec<(String, usize)>,
        absorbed_seq: i64,
    }
}

impl From<LedgerUpdate> for LedgerUpdateResult {
    fn from(update: LedgerUpdate) -> Self {
        Self {
            added: update.added,
            changed: update.changed,
            removed: update.removed,
            rendered: update.rendered,
            stable_tokens: update.stable_tokens,
            volatile_tokens: update.volatile_tokens,
            left_out: update.left_out,
            absorbed_seq: update.absorbed_seq,
        }
    }
}
