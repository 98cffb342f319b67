//! Erasure, subjects and retention: the store side of `lossless.erase` and
//! `lossless.maintain`.

use lossless_core::erasure::{Receipt, RetentionRule, Target};
use pyo3::prelude::*;

use crate::convert;
use crate::errors::invalid;
use crate::results::result_class;

use super::Store;

#[pymethods]
impl Store {
    /// Erases a `session`, `message` or `subject` (`kind`) in one transaction;
    /// its receipt.
    fn erase(
        &self,
        py: Python<'_>,
        kind: &str,
        target: &Bound<'_, PyAny>,
        by: &Bound<'_, PyAny>,
        reason: &Bound<'_, PyAny>,
    ) -> PyResult<ErasureReceipt> {
        let target = convert::text(target, kind)?;
        let target = match kind {
            "session" => Target::Session(target),
            "message" => Target::Message(target),
            "subject" => Target::Subject(target),
            other => {
                return Err(invalid(
                    "kind",
                    &format!("expected session, message or subject, got {other:?}"),
                ))
            }
        };
        let by = convert::text(by, "by")?;
        let reason = convert::text(reason, "reason")?;
        let receipt = self.with(py, |store| store.erase(&target, &by, &reason))?;
        Ok(receipt.into())
    }

    /// Sets how `session_id`'s writes through this store are redacted: off, or by
    /// the built-in rules (unless `defaults` is false) and `rules` (`(kind,
    /// pattern)` pairs).
    fn configure_redaction(
        &self,
        py: Python<'_>,
        session_id: &str,
        enabled: bool,
        defaults: bool,
        rules: Vec<(String, String)>,
    ) -> PyResult<()> {
        self.with(py, |store| {
            store.configure_redaction(session_id, enabled, defaults, &rules)
        })
    }

    /// Every erasure receipt, oldest first.
    fn erasure_receipts(&self, py: Python<'_>) -> PyResult<Vec<ErasureReceipt>> {
        let receipts = self.with(py, |store| store.erasure_receipts())?;
        Ok(receipts.into_iter().map(ErasureReceipt::from).collect())
    }

    /// Attaches `subject` to session `session_id`.
    fn add_subject(
        &self,
        py: Python<'_>,
        session_id: &str,
        subject: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let subject = convert::text(subject, "subject")?;
        self.with(py, |store| store.add_subject(session_id, &subject))
    }

    /// The subjects attached to `session_id`.
    fn subjects(&self, py: Python<'_>, session_id: &str) -> PyResult<Vec<String>> {
        self.with(py, |store| store.subjects(session_id))
    }

    /// Sets (or with `None` lifts) the time to live of a `session` or `subject`.
    #[pyo3(signature = (target_kind, target, ttl_ms))]
    fn set_retention(
        &self,
        py: Python<'_>,
        target_kind: &str,
        target: &Bound<'_, PyAny>,
        ttl_ms: Option<i64>,
    ) -> PyResult<()> {
        let target = convert::text(target, "target")?;
        self.with(py, |store| {
            store.set_retention(target_kind, &target, ttl_ms)
        })
    }

    /// The retention rules in force.
    fn retention_rules(&self, py: Python<'_>) -> PyResult<Vec<RetentionRuleRow>> {
        let rules = self.with(py, |store| store.retention_rules())?;
        Ok(rules.into_iter().map(RetentionRuleRow::from).collect())
    }

    /// The sessions past their time to live at `now_ms`.
    fn expired_sessions(&self, py: Python<'_>, now_ms: i64) -> PyResult<Vec<String>> {
        self.with(py, |store| store.expired_sessions(now_ms))
    }

    /// Erases the sessions past their time to live in short transactions; one
    /// receipt per session.
    fn apply_retention(
        &self,
        py: Python<'_>,
        now_ms: i64,
        by: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<ErasureReceipt>> {
        let by = convert::text(by, "by")?;
        let receipts = self.with(py, |store| store.apply_retention(now_ms, &by))?;
        Ok(receipts.into_iter().map(ErasureReceipt::from).collect())
    }
}

result_class! {
    eq;
    /// One erasure: what (`target_kind`, `target`), by whom, why and when, the
    /// JSON `counts` of what went, and whether the bytes were scrubbed after it.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct ErasureReceipt {
        id: String,
        target_kind: String,
        target: String,
        erased_by: String,
        reason: String,
        erased_at: i64,
        counts: String,
        scrubbed: bool,
    }
}

impl From<Receipt> for ErasureReceipt {
    fn from(receipt: Receipt) -> Self {
        Self {
            id: receipt.id,
            target_kind: receipt.target_kind,
            target: receipt.target,
            erased_by: receipt.erased_by,
            reason: receipt.reason,
            erased_at: receipt.erased_at,
            counts: receipt.counts,
            scrubbed: receipt.scrubbed,
        }
    }
}

result_class! {
    eq;
    /// A time to live in force for a `session` or a `subject`.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct RetentionRuleRow {
        target_kind: String,
        target: String,
        ttl_ms: i64,
    }
}

impl From<RetentionRule> for RetentionRuleRow {
    fn from(rule: RetentionRule) -> Self {
        Self {
            target_kind: rule.target_kind,
            target: rule.target,
            ttl_ms: rule.ttl_ms,
        }
    }
}
