//! The context arena: a budgeted injection of pinned facts, task state, tool
//! failures, working memory and recall hits in front of a session's history.
//!
//! Pure planning, no SQL: the store keeps a session's entries (`arena/entries.rs`)
//! and hands the live ones here each turn.
//!
//! - [`zones`]: the seven zones in their fixed order, priorities, an entry.
//! - [`allocate`](mod@allocate): floors first, then caps in zone order, under a global cap.
//! - [`plan`](mod@plan): the entries of a turn, whole or cut, with the floor cascade.
//! - [`controller`]: cap moved between zones by moving averages of cuts and idleness.
//! - [`ceiling`]: the live-key ceiling and its three policies.
//! - [`cut`]: head and tail kept, a marker between.
//! - [`render`](mod@render): the system-message part and the volatile block.
//! - [`lexical`]: the built-in external retriever (feature hashing, cosine).
//! - [`usage`]: the one window-usage normaliser.
//! - [`turn`]: one session turn, from live entries and stored state to the text.

pub mod allocate;
pub mod ceiling;
pub mod controller;
pub mod cut;
pub(crate) mod entries;
pub mod lexical;
pub(crate) mod memory_recall;
pub mod plan;
pub mod render;
pub(crate) mod stored_turn;
pub mod turn;
pub mod usage;
pub mod zones;

pub use allocate::{allocate, FloorUnmet, ZoneLimits};
pub use ceiling::{decide, CeilingPolicy, Decision, DEFAULT_MAX_ENTRIES};
pub use controller::{ArenaState, ControllerRules, ControllerState, Shift};
pub use cut::cut_head_tail;
pub use plan::{plan, plan_refs, Accepted, FloorStage, Plan, PlanRules, ZoneReport};
pub use render::{render, render_refs, Rendered};
pub use stored_turn::{Candidate, Observed, PlannedTurn};
pub use turn::{observe_turn, plan_turn, ArenaRules, TurnPlan};
pub use usage::normalize_usage;
pub use zones::{Entry, PerZone, Priority, Zone};

#[cfg(test)]
mod tests;
