//! The arena's rules, its per-turn calls on a store, the lexical index and the
//! usage normaliser, as Python sees them.

use lossless_core::arena::{
    self, Candidate, CeilingPolicy, ControllerRules, PlanRules, Priority, Zone, ZoneLimits,
};
use lossless_core::store::ArenaWrite;
use lossless_core::Result;
use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::prelude::*;

use crate::errors::to_py_err;

/// A session's arena configuration, converted once when the session opens.
#[pyclass(frozen, module = "lossless._native")]
pub struct ArenaRules {
    pub(crate) inner: arena::ArenaRules,
    /// Tells rules apart without comparing them (they never change once made).
    pub(crate) id: u64,
}

static NEXT_RULES_ID: AtomicU64 = AtomicU64::new(1);

#[pymethods]
impl ArenaRules {
    #[new]
    #[pyo3(signature = (
        floors, caps, *, relax_order, cascade, min_cut_tokens, max_entries, policy,
        adaptive, alpha, warmup_turns, step_tokens, max_shift_tokens, truncation_ratio,
        idle_ratio, max_cap,
    ))]
    #[expect(
        clippy::too_many_arguments,
        reason = "mirrors the keyword arguments of the Python call"
    )]
    fn new(
        floors: Vec<i64>,
        caps: Vec<i64>,
        relax_order: Vec<String>,
        cascade: bool,
        min_cut_tokens: i64,
        max_entries: usize,
        policy: &str,
        adaptive: bool,
        alpha: f64,
        warmup_turns: u32,
        step_tokens: i64,
        max_shift_tokens: i64,
        truncation_ratio: f64,
        idle_ratio: f64,
        max_cap: i64,
    ) -> PyResult<Self> {
        if floors.len() != 7 || caps.len() != 7 {
            return Err(crate::errors::invalid(
                "zones",
                "expected 7 floors and 7 caps",
            ));
        }
        let mut limits = [ZoneLimits::default(); 7];
        for (at, limit) in limits.iter_mut().enumerate() {
            *limit = ZoneLimits {
                floor: floors[at],
                cap: caps[at],
            }
            .clean();
        }
        let relax_order = relax_order
            .iter()
            .map(|zone| Zone::parse(zone))
            .collect::<Result<Vec<_>>>()
            .map_err(to_py_err)?;
        Ok(Self {
            id: NEXT_RULES_ID.fetch_add(1, Ordering::Relaxed),
            inner: arena::ArenaRules {
                plan: PlanRules {
                    limits,
                    relax_order,
                    cascade,
                    min_cut_tokens,
                },
                controller: ControllerRules {
                    enabled: adaptive,
                    alpha,
                    warmup_turns,
                    step: step_tokens,
                    max_shift: max_shift_tokens,
                    truncation_ratio,
                    idle_ratio,
                    max_cap,
                },
                max_entries,
                policy: CeilingPolicy::parse(policy).map_err(to_py_err)?,
            },
        })
    }
}

/// One write as Python hands it over: (zone, key, source, priority, text or None to
/// remove, once, external, cap in tokens).
pub type WriteArgs = (
    String,
    String,
    String,
    String,
    Option<String>,
    bool,
    bool,
    i64,
);

/// The writes converted, every zone and priority checked before anything is
/// written; the core decides which are writes to their zone's cap.
pub fn writes(args: Vec<WriteArgs>) -> Result<Vec<ArenaWrite>> {
    args.into_iter()
        .map(
            |(zone, key, source, priority, text, once, external, cap_tokens)| {
                Ok(ArenaWrite {
                    zone: Zone::parse(&zone)?,
                    key,
                    source,
                    priority: Priority::parse(&priority)?,
                    text,
                    once,
                    external,
                    cap_tokens,
                    zone_cap: false,
                })
            },
        )
        .collect()
}

/// A candidate of this turn only as Python hands it over: (zone, key, source,
/// priority, text).
pub type TransientArgs = (String, String, String, String, String);

/// This turn's candidates as the core takes them.
pub fn candidates(transient: Vec<TransientArgs>) -> Vec<Candidate> {
    transient
        .into_iter()
        .map(|(zone, key, source, priority, text)| Candidate {
            zone,
            key,
            source,
            priority,
            text,
        })
        .collect()
}

/// One once-per-session entry a turn injected, as Python hands it over: (zone, key,
/// sequence number).
pub type OnceArgs = (String, String, i64);

/// The built-in lexical retriever's index (see `lossless_core::arena::lexical`).
#[pyclass(module = "lossless._native")]
pub struct LexicalIndex {
    inner: arena::lexical::LexicalIndex,
}

#[pymethods]
impl LexicalIndex {
    #[new]
    #[pyo3(signature = (dims = 1024, legacy = false))]
    fn new(dims: u32, legacy: bool) -> Self {
        let mode = if legacy {
            arena::lexical::HashMode::Legacy
        } else {
            arena::lexical::HashMode::Bytes
        };
        Self {
            inner: arena::lexical::LexicalIndex::new(dims, mode),
        }
    }

    fn add(&mut self, id: &str, text: &str) {
        self.inner.add(id, text);
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    #[pyo3(signature = (query, k, min_similarity = 0.08))]
    fn search(
        &self,
        py: Python<'_>,
        query: &str,
        k: usize,
        min_similarity: f64,
    ) -> Vec<(String, f64)> {
        py.detach(|| self.inner.search(query, k, min_similarity))
    }
}

/// How full a window is, in `[0, 1]` (see `lossless_core::arena::normalize_usage`).
#[pyfunction]
#[pyo3(signature = (percent = None, tokens = None, window = None))]
pub fn normalize_usage(
    percent: Option<f64>,
    tokens: Option<i64>,
    window: Option<i64>,
) -> Option<f64> {
    arena::normalize_usage(percent, tokens, window)
}
