//! What the arena's calls return, as typed frozen classes (decision 201): a write's
//! outcome, a live entry, a turn's plan with a report per zone, what observing a
//! turn changed, a recall hit and an item of the view.

use lossless_core::arena::{Entry, Observed, PlannedTurn, Zone, ZoneReport};
use lossless_core::model::ViewItem;
use lossless_core::parts::Role;
use lossless_core::store::{RecallHit, WriteOutcome};
use pyo3::prelude::*;

use crate::results::result_class;

result_class! {
    eq;
    /// What became of one arena write, as the core applied it.
    #[derive(Debug, PartialEq, Eq)]
    pub struct ArenaWriteRow {
        key: String,
        /// The entry's sequence number (the version written).
        seq: i64,
        accepted: bool,
        tokens: i64,
        /// Tokens of the text before it was cut to its zone's cap, if it was.
        cut_from: Option<i64>,
        /// Keys the entry ceiling took out to make room.
        evicted: Vec<String>,
        /// Whether the entry ceiling acted on this write.
        enforced: bool,
        /// Whether the ceiling policy asks for a compaction.
        compact: bool,
    }
}

impl From<&WriteOutcome> for ArenaWriteRow {
    fn from(outcome: &WriteOutcome) -> Self {
        Self {
            key: outcome.key.clone(),
            seq: outcome.seq,
            accepted: outcome.accepted,
            tokens: outcome.tokens,
            cut_from: outcome.cut_from,
            evicted: outcome.evicted.clone(),
            enforced: outcome.enforced,
            compact: outcome.compact,
        }
    }
}

result_class! {
    eq;
    /// A live entry of a session's arena.
    #[derive(Debug, PartialEq, Eq)]
    pub struct ArenaEntryRow {
        seq: i64,
        zone: &'static str,
        key: String,
        source: String,
        priority: &'static str,
        text: String,
        tokens: i64,
        once: bool,
        external: bool,
    }
}

impl From<&Entry> for ArenaEntryRow {
    fn from(entry: &Entry) -> Self {
        Self {
            seq: entry.seq,
            zone: entry.zone.as_str(),
            key: entry.key.clone(),
            source: entry.source.clone(),
            priority: entry.priority.as_str(),
            text: entry.text.clone(),
            tokens: entry.tokens,
            once: entry.once,
            external: entry.external,
        }
    }
}

result_class! {
    eq;
    /// What happened to one zone in a turn's plan.
    #[derive(Debug, PartialEq, Eq)]
    pub struct ZoneReportRow {
        demand: i64,
        floor: i64,
        cap: i64,
        allocated: i64,
        accepted: i64,
        cut_at_write: i64,
        cut: Vec<String>,
        dropped: Vec<String>,
        dropped_count: usize,
    }
}

impl From<&ZoneReport> for ZoneReportRow {
    fn from(report: &ZoneReport) -> Self {
        Self {
            demand: report.demand,
            floor: report.floor,
            cap: report.cap,
            allocated: report.allocated,
            accepted: report.accepted,
            cut_at_write: report.cut_at_write,
            cut: report.cut.clone(),
            dropped: report.dropped.clone(),
            dropped_count: report.dropped_count,
        }
    }
}

result_class! {
    /// A plan's report per zone, one field a zone, so `zones["truth"]` and
    /// `zones.truth` read the same report.
    #[derive(Debug)]
    pub struct ZoneReports {
        identity: Py<ZoneReportRow>,
        truth: Py<ZoneReportRow>,
        task_state: Py<ZoneReportRow>,
        tool_failures: Py<ZoneReportRow>,
        memory_working: Py<ZoneReportRow>,
        memory_recall: Py<ZoneReportRow>,
        rag_external: Py<ZoneReportRow>,
    }
}

impl ZoneReports {
    fn of(py: Python<'_>, reports: &[ZoneReport; 7]) -> PyResult<Self> {
        let row = |zone: Zone| Py::new(py, ZoneReportRow::from(&reports[zone.index()]));
        Ok(Self {
            identity: row(Zone::Identity)?,
            truth: row(Zone::Truth)?,
            task_state: row(Zone::TaskState)?,
            tool_failures: row(Zone::ToolFailures)?,
            memory_working: row(Zone::MemoryWorking)?,
            memory_recall: row(Zone::MemoryRecall)?,
            rag_external: row(Zone::RagExternal)?,
        })
    }
}

result_class! {
    /// A turn's plan, rendered, with the generation that names it: equal
    /// generations are the same plan.
    #[derive(Debug)]
    pub struct ArenaPlanRow {
        generation: u64,
        /// The rendered text of the stable zones (the system part) and of the
        /// volatile ones (the block before the newest user message).
        stable: String,
        volatile: String,
        stable_tokens: usize,
        volatile_tokens: usize,
        /// Tokens of the injected entries, and the cap they were planned under.
        tokens: i64,
        cap: i64,
        /// How far the floor cascade went.
        stage: &'static str,
        relaxed: Vec<&'static str>,
        /// Once-per-session entries this plan injects: (zone, key, seq).
        once: Vec<(&'static str, String, i64)>,
        /// Keys of the injected entries, in the order they were chosen.
        injected: Vec<String>,
        /// Tokens of the session ledger's entries injected.
        ledger_tokens: i64,
        zones: Py<ZoneReports>,
    }
}

impl ArenaPlanRow {
    pub fn of(py: Python<'_>, planned: &PlannedTurn) -> PyResult<Self> {
        let turn = &planned.turn;
        Ok(Self {
            generation: planned.generation.0,
            stable: turn.rendered.stable.clone(),
            volatile: turn.rendered.volatile.clone(),
            stable_tokens: planned.stable_tokens,
            volatile_tokens: planned.volatile_tokens,
            tokens: turn.plan.tokens,
            cap: turn.plan.cap,
            stage: turn.plan.stage.as_str(),
            relaxed: turn.plan.relaxed.iter().map(|zone| zone.as_str()).collect(),
            once: turn
                .once
                .iter()
                .map(|(zone, key, seq)| (zone.as_str(), key.clone(), *seq))
                .collect(),
            injected: turn.injected.clone(),
            ledger_tokens: turn.ledger_tokens,
            zones: Py::new(py, ZoneReports::of(py, &turn.plan.zones)?)?,
        })
    }
}

result_class! {
    eq;
    /// What observing a sent turn changed: the controller's shifts (from, to,
    /// tokens), its caps per zone when they moved, and the turns it has seen.
    #[derive(Debug, PartialEq, Eq)]
    pub struct ArenaObservedRow {
        shifts: Vec<(&'static str, &'static str, i64)>,
        caps: Option<Vec<i64>>,
        turns: u32,
    }
}

impl From<&Observed> for ArenaObservedRow {
    fn from(observed: &Observed) -> Self {
        Self {
            shifts: observed
                .shifts
                .iter()
                .map(|shift| (shift.from.as_str(), shift.to.as_str(), shift.tokens))
                .collect(),
            caps: observed.caps.map(|caps| caps.to_vec()),
            turns: observed.turns,
        }
    }
}

result_class! {
    eq;
    /// A part out of the view that matches a question.
    #[derive(Debug, PartialEq)]
    pub struct RecallHitRow {
        message_id: String,
        part_id: String,
        seq: i64,
        text: String,
        tokens: i64,
        score: f64,
        tombstoned: bool,
    }
}

impl From<&RecallHit> for RecallHitRow {
    fn from(hit: &RecallHit) -> Self {
        Self {
            message_id: hit.message_id.clone(),
            part_id: hit.part_id.clone(),
            seq: hit.seq,
            text: hit.text.clone(),
            tokens: hit.tokens,
            score: hit.score,
            tombstoned: hit.tombstoned,
        }
    }
}

result_class! {
    eq;
    /// An item of a session's view, in the order the request holds them.
    #[derive(Debug, PartialEq, Eq)]
    pub struct ViewItemRow {
        position: i64,
        /// `message` or `summary`.
        kind: &'static str,
        id: String,
        tokens: i64,
        /// A message's role; `None` for a summary.
        role: Option<&'static str>,
        seq: i64,
    }
}

impl From<&ViewItem> for ViewItemRow {
    fn from(item: &ViewItem) -> Self {
        Self {
            position: item.position,
            kind: item.kind.as_str(),
            id: item.id.clone(),
            tokens: item.tokens,
            role: item.role.map(Role::as_str),
            seq: item.seq,
        }
    }
}
