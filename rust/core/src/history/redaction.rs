//! Redaction at ingest, the store's side: which redactor a session's writes go
//! through, the database's fingerprint key, and a message's parts redacted before
//! they are counted and written.
//!
//! Every session's writes go through the built-in rules unless the session turned
//! them off or added its own (`configure_redaction`, set by the Python session from
//! its config). The fingerprint key is the database's own, written once with the
//! schema: one secret gets one marker across the sessions of a file, and files do
//! not share markers.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use crate::db::backend::args;
use crate::error::{Error, Result};
use crate::parts::Part;
use crate::redact::{Finding, Redactor, RuleSet};
use crate::store::Store;

/// This connection's redactors: the default one and each session's own choice.
#[derive(Debug, Default)]
pub(crate) struct Redaction {
    key: Option<[u8; 32]>,
    default: Option<Arc<Redactor>>,
    /// A session's own redactor; `None` inside: redaction off for it.
    sessions: HashMap<String, Option<Arc<Redactor>>>,
}

impl Store {
    /// Sets how the writes of `session_id` through this store are redacted: not at
    /// all (`enabled` false), or by the built-in rules (unless `defaults` is false)
    /// and `rules`, each a `(kind, pattern)`. An invalid rule is an error and the
    /// session's setting stays as it was.
    pub fn configure_redaction(
        &mut self,
        session_id: &str,
        enabled: bool,
        defaults: bool,
        rules: &[(String, String)],
    ) -> Result<()> {
        let redactor = if enabled {
            let key = self.redaction_key()?;
            let set = if defaults {
                RuleSet::Defaults
            } else {
                RuleSet::None
            };
            let mut redactor = Redactor::new(&key, set);
            for (at, (kind, pattern)) in rules.iter().enumerate() {
                redactor.add_rule(kind, pattern).map_err(|err| {
                    Error::invalid(format!("redaction.rules[{at}]"), err.to_string())
                })?;
            }
            Some(Arc::new(redactor))
        } else {
            None
        };
        self.redaction
            .sessions
            .insert(session_id.to_string(), redactor);
        Ok(())
    }

    /// The redactor of `session_id`'s writes, `None` when redaction is off for it.
    pub(crate) fn redactor_for(&mut self, session_id: &str) -> Result<Option<Arc<Redactor>>> {
        if let Some(chosen) = self.redaction.sessions.get(session_id) {
            return Ok(chosen.clone());
        }
        if self.redaction.default.is_none() {
            let key = self.redaction_key()?;
            self.redaction.default = Some(Arc::new(Redactor::new(&key, RuleSet::Defaults)));
        }
        Ok(self.redaction.default.clone())
    }

    /// The redactor of writes no session owns (files kept whole): the built-in
    /// rules.
    pub(crate) fn default_redactor(&mut self) -> Result<Option<Arc<Redactor>>> {
        if self.read_only {
            return Ok(None);
        }
        self.redactor_for("")
    }

    /// The database's fingerprint key, read once.
    fn redaction_key(&mut self) -> Result<[u8; 32]> {
        if let Some(key) = self.redaction.key {
            return Ok(key);
        }
        let stored: Option<Vec<u8>> = self
            .conn
            .prepare_cached("SELECT key FROM store_keys WHERE name = 'redaction'")?
            .query_opt(args![], |row| row.get(0))?;
        let key: [u8; 32] = stored
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or_else(|| Error::Sqlite("the database has no redaction key".into()))?;
        self.redaction.key = Some(key);
        Ok(key)
    }
}

/// `parts` with the secrets of their text replaced, borrowed when none held any;
/// what was replaced is added to `found`.
pub(crate) fn redact_parts<'a>(
    parts: &'a [Part],
    redactor: Option<&Redactor>,
    found: &mut Vec<Finding>,
) -> Cow<'a, [Part]> {
    let Some(redactor) = redactor else {
        return Cow::Borrowed(parts);
    };
    let mut changed: Option<Vec<Part>> = None;
    for (at, part) in parts.iter().enumerate() {
        if let Some(clean) = part.redacted(redactor, found) {
            changed.get_or_insert_with(|| parts.to_vec())[at] = clean;
        }
    }
    changed.map_or(Cow::Borrowed(parts), Cow::Owned)
}

/// `text` with its secrets replaced (borrowed when it held none).
pub(crate) fn redact_text<'a>(
    text: &'a str,
    redactor: Option<&Redactor>,
    found: &mut Vec<Finding>,
) -> Cow<'a, str> {
    match redactor.and_then(|redactor| crate::parts::redacted_text(text, redactor, found)) {
        Some(clean) => Cow::Owned(clean),
        None => Cow::Borrowed(text),
    }
}
