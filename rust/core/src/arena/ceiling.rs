//! The entry ceiling: how many live keys a session's arena holds, and what gives
//! way when a new key would pass it.
//!
//! Live entries (a key in a zone) are counted, not rows: an update of a key replaces its entry, so the
//! rows of keys updated every turn never fill the arena. An update of a key already
//! live is always accepted, whatever the policy.

use super::zones::{Entry, Priority, Zone};
use crate::error::{Error, Result};

/// The live keys a session's arena holds by default.
pub const DEFAULT_MAX_ENTRIES: usize = 4_096;

/// What gives way at the ceiling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CeilingPolicy {
    /// The oldest recall entry leaves for a new entry of another zone; a new recall
    /// entry is dropped.
    DropRecall,
    /// The oldest normal or low entry leaves for a new critical or high one; a new
    /// normal or low entry is dropped.
    DropLowPriority,
    /// Every entry outside identity, truth and task state leaves (their sources
    /// write them again), and the session compacts its history.
    ForceCompact,
}

impl CeilingPolicy {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            CeilingPolicy::DropRecall => "drop_recall",
            CeilingPolicy::DropLowPriority => "drop_low_priority",
            CeilingPolicy::ForceCompact => "force_compact",
        }
    }

    pub fn parse(value: &str) -> Result<Self> {
        match value {
            "drop_recall" => Ok(CeilingPolicy::DropRecall),
            "drop_low_priority" => Ok(CeilingPolicy::DropLowPriority),
            "force_compact" => Ok(CeilingPolicy::ForceCompact),
            other => Err(Error::invalid(
                "degradation_policy",
                format!("expected drop_recall, drop_low_priority or force_compact, got {other:?}"),
            )),
        }
    }
}

/// What the ceiling decided for one incoming entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Whether the incoming entry is written.
    pub accepted: bool,
    /// Entries (zone and key) that leave the arena to make room.
    pub evicted: Vec<(Zone, String)>,
    /// The policy ran (the ceiling was reached by a new key).
    pub enforced: bool,
    /// The session should compact its history (`force_compact`).
    pub compact: bool,
}

impl Decision {
    fn accept() -> Self {
        Self {
            accepted: true,
            evicted: Vec::new(),
            enforced: false,
            compact: false,
        }
    }

    fn enforced(accepted: bool, evicted: Vec<(Zone, String)>, compact: bool) -> Self {
        Self {
            accepted,
            evicted,
            enforced: true,
            compact,
        }
    }
}

/// Decides whether an entry of `key`, `zone` and `priority` joins `live` (the
/// session's live entries) under a ceiling of `max` keys.
#[must_use]
pub fn decide(
    live: &[Entry],
    key: &str,
    zone: Zone,
    priority: Priority,
    max: usize,
    policy: CeilingPolicy,
) -> Decision {
    let update = live
        .iter()
        .any(|entry| entry.zone == zone && entry.key == key);
    if live.len() < max.max(1) || update {
        return Decision::accept();
    }
    let oldest = |keep: &dyn Fn(&Entry) -> bool| {
        live.iter()
            .filter(|entry| keep(entry))
            .min_by_key(|entry| entry.seq)
            .map(|entry| vec![(entry.zone, entry.key.clone())])
    };
    match policy {
        CeilingPolicy::DropRecall => {
            if zone.is_recall() {
                return Decision::enforced(false, Vec::new(), false);
            }
            match oldest(&|entry| entry.zone.is_recall()) {
                Some(evicted) => Decision::enforced(true, evicted, false),
                None => Decision::enforced(false, Vec::new(), false),
            }
        }
        CeilingPolicy::DropLowPriority => {
            if priority.is_low() {
                return Decision::enforced(false, Vec::new(), false);
            }
            match oldest(&|entry| entry.priority.is_low()) {
                Some(evicted) => Decision::enforced(true, evicted, false),
                None => Decision::enforced(false, Vec::new(), false),
            }
        }
        CeilingPolicy::ForceCompact => {
            let evicted: Vec<(Zone, String)> = live
                .iter()
                .filter(|entry| !entry.zone.is_critical())
                .map(|entry| (entry.zone, entry.key.clone()))
                .collect();
            let room = live.len() - evicted.len() < max.max(1);
            Decision::enforced(room, evicted, true)
        }
    }
}
