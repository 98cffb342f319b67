//! Keys, forks and handed-over histories: the store side of `Session.sync` and
//! `Session.fork`.

use lossless_core::lineage::ForkInfo as CoreForkInfo;
use lossless_core::sync::{Digest, DIGEST_BYTES};
use pyo3::prelude::*;

use crate::convert;
use crate::errors::invalid;
use crate::results::result_class;

use super::Store;

#[pymethods]
impl Store {
    /// The session `key` names now, or `None`.
    fn session_for_key(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
        let key = convert::text(key, "key")?;
        self.with(py, |store| store.session_for_key(&key))
    }

    /// The key that names `session_id` now, or `None`.
    fn key_of(&self, py: Python<'_>, session_id: &str) -> PyResult<Option<String>> {
        self.with(py, |store| store.key_of(session_id))
    }

    /// A session named `key`: with `reuse`, the one `key` names when there is one,
    /// else a new one `key` names from now on: `(id, created)`.
    fn named_session(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        model: &Bound<'_, PyAny>,
        config_json: &Bound<'_, PyAny>,
        system_prompt: Option<&Bound<'_, PyAny>>,
        reuse: bool,
    ) -> PyResult<(String, bool)> {
        let key = convert::text(key, "key")?;
        let model = convert::text(model, "model")?;
        let config_json = convert::text(config_json, "config_json")?;
        let system_prompt = convert::maybe_text(system_prompt, "system_prompt")?;
        self.with(py, |store| {
            store.named_session(&key, &model, &config_json, system_prompt.as_deref(), reuse)
        })
    }

    /// A new session sharing `parent_id`'s history up to its message `fork_seq`.
    #[pyo3(signature = (parent_id, fork_seq, sync_from = 0, key = None))]
    fn fork_session(
        &self,
        py: Python<'_>,
        parent_id: &str,
        fork_seq: i64,
        sync_from: i64,
        key: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let key = convert::maybe_text(key, "key")?;
        self.with(py, |store| {
            store.fork_session(parent_id, fork_seq, sync_from, key.as_deref())
        })
    }

    /// How `session_id` joins its parent, or `None` when it is no fork.
    fn fork_of(&self, py: Python<'_>, session_id: &str) -> PyResult<Option<ForkRow>> {
        let fork = self.with(py, |store| store.fork_of(session_id))?;
        Ok(fork.map(ForkRow::from))
    }

    /// The forks of `parent_id`, oldest first.
    fn forks_of(&self, py: Python<'_>, parent_id: &str) -> PyResult<Vec<ForkRow>> {
        let forks = self.with(py, |store| store.forks_of(parent_id))?;
        Ok(forks.into_iter().map(ForkRow::from).collect())
    }

    /// The seq of the message holding `session_id`'s tool call `call_id`, if any.
    fn call_seq(&self, py: Python<'_>, session_id: &str, call_id: &str) -> PyResult<Option<i64>> {
        self.with(py, |store| store.call_seq(session_id, call_id))
    }

    /// `(stored, first_difference)`: how the history whose digests are `chain`
    /// relates to what `session_id` holds.
    fn sync_match(
        &self,
        py: Python<'_>,
        session_id: &str,
        chain: &[u8],
    ) -> PyResult<(usize, Option<usize>)> {
        let chain = digests(chain)?;
        let found = self.with(py, |store| store.sync_match(session_id, &chain))?;
        Ok((found.stored, found.first_difference))
    }

    /// Stores positions `start..` of a handed-over history, each with the seqs it
    /// wrote `(oldest or None, newest after it)`; without `wait`, `None` where the
    /// write would wait (see [`Store::write`]).
    #[pyo3(signature = (session_id, start, chain, seqs, wait = true))]
    fn sync_append(
        &self,
        py: Python<'_>,
        session_id: &str,
        start: usize,
        chain: &[u8],
        seqs: Vec<(Option<i64>, i64)>,
        wait: bool,
    ) -> PyResult<Option<bool>> {
        let chain = digests(chain)?;
        self.write(py, wait, |store| {
            store
                .sync_append(session_id, start, &chain, &seqs)
                .map(|()| true)
        })
    }

    /// `(fork_seq, replay_from)` for a history that differs from position `k` on.
    #[pyo3(signature = (session_id, k, extra_low = None))]
    fn sync_fork_point(
        &self,
        py: Python<'_>,
        session_id: &str,
        k: usize,
        extra_low: Option<i64>,
    ) -> PyResult<(i64, usize)> {
        let point = self.with(py, |store| store.sync_fork_point(session_id, k, extra_low))?;
        Ok((point.fork_seq, point.replay_from))
    }

    /// The seq of message `message_id` in `session_id`'s history.
    fn message_seq(
        &self,
        py: Python<'_>,
        session_id: &str,
        message_id: &Bound<'_, PyAny>,
    ) -> PyResult<i64> {
        let message_id = convert::text(message_id, "at")?;
        self.with(py, |store| store.message_seq(session_id, &message_id))
    }

    /// How many leading positions of the handed-over history wrote only messages up
    /// to `seq`.
    fn sync_positions_within(&self, py: Python<'_>, session_id: &str, seq: i64) -> PyResult<usize> {
        self.with(py, |store| store.sync_positions_within(session_id, seq))
    }

    /// The newest message seq of `session_id` (0: none yet).
    fn newest_seq(&self, py: Python<'_>, session_id: &str) -> PyResult<i64> {
        self.with(py, |store| store.newest_seq(session_id))
    }
}

fn digests(chain: &[u8]) -> PyResult<Vec<Digest>> {
    if chain.len() % DIGEST_BYTES != 0 {
        return Err(invalid("chain", "is not a whole number of digests"));
    }
    Ok(chain
        .chunks_exact(DIGEST_BYTES)
        .map(|chunk| {
            let mut digest = [0; DIGEST_BYTES];
            digest.copy_from_slice(chunk);
            digest
        })
        .collect())
}

result_class! {
    eq;
    /// Where a fork joins its parent: the parent's last shared message seq and the
    /// first position of a handed-over history the fork holds itself.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct ForkRow {
        session_id: String,
        parent_id: String,
        fork_seq: i64,
        sync_from: i64,
        created_at: i64,
    }
}

impl From<CoreForkInfo> for ForkRow {
    fn from(fork: CoreForkInfo) -> Self {
        Self {
            session_id: fork.session_id,
            parent_id: fork.parent_id,
            fork_seq: fork.fork_seq,
            sync_from: fork.sync_from,
            created_at: fork.created_at,
        }
    }
}
