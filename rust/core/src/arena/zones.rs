//! The seven zones of the arena, the priorities of its entries, and an entry.

use crate::error::{Error, Result};

/// Where an entry is injected, in the fixed order the allocator fills them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Zone {
    Identity,
    Truth,
    TaskState,
    ToolFailures,
    MemoryWorking,
    MemoryRecall,
    RagExternal,
}

/// One value per zone, indexed by [`Zone::index`].
pub type PerZone<T> = [T; 7];

impl Zone {
    /// Every zone, in fill order.
    pub const ALL: [Zone; 7] = [
        Zone::Identity,
        Zone::Truth,
        Zone::TaskState,
        Zone::ToolFailures,
        Zone::MemoryWorking,
        Zone::MemoryRecall,
        Zone::RagExternal,
    ];

    /// The zones kept when every other must go (the last stage of the floor cascade),
    /// and the ones the controller never takes cap from.
    pub const CRITICAL: [Zone; 3] = [Zone::Identity, Zone::Truth, Zone::TaskState];

    #[must_use]
    pub fn index(self) -> usize {
        self as usize
    }

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Zone::Identity => "identity",
            Zone::Truth => "truth",
            Zone::TaskState => "task_state",
            Zone::ToolFailures => "tool_failures",
            Zone::MemoryWorking => "memory_working",
            Zone::MemoryRecall => "memory_recall",
            Zone::RagExternal => "rag_external",
        }
    }

    pub fn parse(value: &str) -> Result<Zone> {
        Zone::ALL
            .into_iter()
            .find(|zone| zone.as_str() == value)
            .ok_or_else(|| {
                Error::invalid(
                    "zone",
                    format!(
                        "unknown zone {value:?}; expected one of {}",
                        Zone::ALL.map(Zone::as_str).join(", ")
                    ),
                )
            })
    }

    /// Identity, truth and task state: kept by the critical-only fallback.
    #[must_use]
    pub fn is_critical(self) -> bool {
        Zone::CRITICAL.contains(&self)
    }

    /// The recall zones, which the `drop_recall` ceiling policy evicts from first.
    #[must_use]
    pub fn is_recall(self) -> bool {
        matches!(self, Zone::MemoryRecall | Zone::RagExternal)
    }

    /// The zones whose text comes from tools or retrieval rather than from the
    /// people running the session: rendered as fenced, quoted data.
    #[must_use]
    pub fn is_untrusted(self) -> bool {
        matches!(
            self,
            Zone::ToolFailures | Zone::MemoryRecall | Zone::RagExternal
        )
    }

    /// Identity and truth change only when the user changes them: they go into the
    /// system message, the stable front of every request. The other zones change
    /// turn by turn and go next to the newest user message.
    #[must_use]
    pub fn is_stable(self) -> bool {
        matches!(self, Zone::Identity | Zone::Truth)
    }
}

/// How much an entry matters inside its zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Priority {
    Critical,
    High,
    Normal,
    Low,
}

impl Priority {
    pub const ALL: [Priority; 4] = [
        Priority::Critical,
        Priority::High,
        Priority::Normal,
        Priority::Low,
    ];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Critical => "critical",
            Priority::High => "high",
            Priority::Normal => "normal",
            Priority::Low => "low",
        }
    }

    pub fn parse(value: &str) -> Result<Priority> {
        Priority::ALL
            .into_iter()
            .find(|priority| priority.as_str() == value)
            .ok_or_else(|| {
                Error::invalid(
                    "priority",
                    format!("expected critical, high, normal or low, got {value:?}"),
                )
            })
    }

    /// Low and normal entries are what `drop_low_priority` evicts.
    #[must_use]
    pub fn is_low(self) -> bool {
        matches!(self, Priority::Normal | Priority::Low)
    }
}

/// One live entry: the newest text of its key in its zone. A key names an entry
/// within one zone: the same key in two zones is two entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The arena's own sequence number in the session: orders entries, never a clock.
    pub seq: i64,
    pub zone: Zone,
    pub key: String,
    /// Who wrote it (`user`, `tool_failures`, `recall`, a port's name).
    pub source: String,
    pub priority: Priority,
    pub text: String,
    /// Counted once, when the entry was written.
    pub tokens: i64,
    /// Tokens of the text as it was handed over: more than [`Entry::tokens`] when it
    /// was cut to its zone's cap at write time, so the controller sees that zone as
    /// truncated although the plan injects the stored text whole.
    pub full_tokens: i64,
    /// Injected in one turn only, then kept but no longer offered.
    pub once: bool,
    /// Came from an external retriever (written back after it was injected).
    pub external: bool,
}
