//! A turn of a session's arena on its store: planning it (and keeping the plan
//! while nothing it depends on changed), observing what was sent, and starting
//! the controller's state afresh.
//!
//! The kept plan is the arena's part of the one cache layer: it lives beside the
//! entries it is made from, per session, and its rule is written on [`PlanKey`].
//! Each plan made gets a new [`Generation`], so the layers above tell plans
//! apart by number and keep nothing of their own.

use std::sync::Arc;

use super::controller::{ArenaState, Shift};
use super::entries::{ArenaWrite, Ceiling, WriteOutcome};
use super::plan::ZoneReport;
use super::turn::{current_caps, observe_turn, plan_turn, ArenaRules, TurnPlan};
use super::zones::{Entry, PerZone, Priority, Zone};
use crate::error::{Error, Result};
use crate::history::events::WriteEvent;
use crate::model::Generation;
use crate::store::Store;

/// A candidate of this turn only (a recall hit), as the caller hands it over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub zone: String,
    pub key: String,
    pub source: String,
    pub priority: String,
    pub text: String,
}

/// A turn's plan with the token counts of its two blocks.
#[derive(Clone, Debug)]
pub struct PlannedTurn {
    pub turn: TurnPlan,
    pub stable_tokens: usize,
    pub volatile_tokens: usize,
    pub generation: Generation,
}

/// What a kept plan was made from. The plan holds while the session's newest
/// arena row, its stored controller state, the rules, the cap and this turn's
/// candidates are all as they were; any write to the arena changes the first two.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PlanKey {
    newest_entry: i64,
    state: Option<String>,
    rules: u64,
    cap: i64,
    candidates: Vec<Candidate>,
}

/// What observing a sent turn changed: the shifts made and the caps after them.
#[derive(Clone, Debug, Default)]
pub struct Observed {
    pub shifts: Vec<Shift>,
    pub caps: Option<PerZone<i64>>,
    pub turns: u32,
}

impl Store {
    /// The plan of a turn of `session_id` under `cap`, with this turn's
    /// `candidates`: the kept one while its [`PlanKey`] holds, else made anew.
    /// `rules_id` tells rules apart without comparing them (they never change).
    pub fn arena_plan(
        &mut self,
        session_id: &str,
        rules: &ArenaRules,
        rules_id: u64,
        cap: i64,
        candidates: &[Candidate],
    ) -> Result<Arc<PlannedTurn>> {
        let live = self.arena_entries(session_id)?;
        let key = PlanKey {
            newest_entry: self.arena.newest_row(session_id),
            state: self.arena_state(session_id)?,
            rules: rules_id,
            cap,
            candidates: candidates.to_vec(),
        };
        if let Some((kept_key, kept)) = self.arena.plans.get(session_id) {
            if *kept_key == key {
                return Ok(Arc::clone(kept));
            }
        }
        let planned = Arc::new(self.make_plan(session_id, &live, &key, rules)?);
        self.arena
            .plans
            .insert(session_id.to_string(), (key, Arc::clone(&planned)));
        Ok(planned)
    }

    fn make_plan(
        &mut self,
        session_id: &str,
        live: &[Entry],
        key: &PlanKey,
        rules: &ArenaRules,
    ) -> Result<PlannedTurn> {
        let state = parse_state(key.state.as_deref());
        let counter = self.counter(session_id)?;
        let count = |text: &str| counter.count(text);
        let mut extra = Vec::with_capacity(key.candidates.len());
        for (at, candidate) in key.candidates.iter().enumerate() {
            let tokens = count(&candidate.text) as i64;
            extra.push(Entry {
                // After every stored entry: this turn's candidates are the newest.
                seq: i64::MAX - 1_000 + at as i64,
                zone: Zone::parse(&candidate.zone)?,
                key: candidate.key.clone(),
                source: candidate.source.clone(),
                priority: Priority::parse(&candidate.priority)?,
                text: candidate.text.clone(),
                tokens,
                full_tokens: tokens,
                once: false,
                external: false,
            });
        }
        let turn = plan_turn(live, &extra, &state, rules, key.cap, &count);
        Ok(PlannedTurn {
            stable_tokens: count(&turn.rendered.stable),
            volatile_tokens: count(&turn.rendered.volatile),
            turn,
            generation: Generation::next(),
        })
    }

    /// Applies `writes` under a session's `rules`, in one transaction with `event`.
    /// A write whose limit is at least its zone's configured cap is a write to the
    /// zone's cap, and is cut at that cap as it is now: the configured one, or the
    /// larger one the controller learned, so a zone the controller gave more keeps
    /// more of its next write. The entry ceiling is the rules' too.
    pub fn arena_write_under(
        &mut self,
        session_id: &str,
        mut writes: Vec<ArenaWrite>,
        rules: &ArenaRules,
        event: Option<&WriteEvent>,
    ) -> Result<Vec<WriteOutcome>> {
        let learned = self.arena_learned_caps(session_id, rules)?;
        for write in &mut writes {
            let zone = write.zone.index();
            write.zone_cap = write.cap_tokens >= rules.plan.limits[zone].cap;
            if let (Some(caps), true) = (learned.as_ref(), write.zone_cap) {
                write.cap_tokens = write.cap_tokens.max(caps[zone]);
            }
        }
        let ceiling = Ceiling {
            max_entries: rules.max_entries,
            policy: rules.policy,
        };
        self.arena_write(session_id, &writes, ceiling, event)
    }

    /// The caps the controller learned for `session_id`, if it has.
    pub fn arena_learned_caps(
        &mut self,
        session_id: &str,
        rules: &ArenaRules,
    ) -> Result<Option<PerZone<i64>>> {
        let state = parse_state(self.arena_state(session_id)?.as_deref());
        Ok(current_caps(&state, rules))
    }

    /// Observes a sent turn: `zones` holds (demand, accepted, cut at write) per zone
    /// in zone order, `once` the once-per-session entries it injected. Stores the
    /// controller's new state, with an event named `event` when caps shifted.
    pub fn arena_observe(
        &mut self,
        session_id: &str,
        rules: &ArenaRules,
        zones: &[(i64, i64, i64)],
        once: &[(String, String, i64)],
        event: Option<&str>,
    ) -> Result<Observed> {
        if zones.len() != Zone::ALL.len() {
            return Err(Error::invalid(
                "zones",
                "expected 7 (demand, accepted, cut_at_write) triples",
            ));
        }
        let mut reports: PerZone<ZoneReport> = Default::default();
        for (report, (demand, accepted, cut_at_write)) in reports.iter_mut().zip(zones) {
            report.demand = *demand;
            report.accepted = *accepted;
            report.cut_at_write = *cut_at_write;
        }
        let once = once
            .iter()
            .map(|(zone, key, seq)| Ok((Zone::parse(zone)?, key.clone(), *seq)))
            .collect::<Result<Vec<_>>>()?;
        let mut state = parse_state(self.arena_state(session_id)?.as_deref());
        let shifts = observe_turn(&mut state, rules, &reports, &once);
        let observed = Observed {
            caps: state.controller.as_ref().map(|c| c.caps),
            turns: state.controller.as_ref().map_or(0, |c| c.turns),
            shifts,
        };
        let event = match event {
            Some(name) if !observed.shifts.is_empty() => {
                Some(WriteEvent::parse(name, &shift_payload(&observed))?)
            }
            _ => None,
        };
        self.set_arena_state(session_id, &state_json(&state)?, event.as_ref())?;
        Ok(observed)
    }

    /// Starts the controller's state of `session_id` afresh (no learned caps, no
    /// entry shown yet), with `event`.
    pub fn arena_reset(&mut self, session_id: &str, event: &WriteEvent) -> Result<()> {
        let json = state_json(&ArenaState::default())?;
        self.set_arena_state(session_id, &json, Some(event))
    }
}

/// The stored state, or a fresh one: a state this build cannot read starts
/// afresh, as it is tuning, not content.
fn parse_state(json: Option<&str>) -> ArenaState {
    json.map(|json| serde_json::from_str(json).unwrap_or_default())
        .unwrap_or_default()
}

fn state_json(state: &ArenaState) -> Result<String> {
    serde_json::to_string(state).map_err(|err| Error::invalid("state", err.to_string()))
}

/// The payload of the event a shift of caps writes.
fn shift_payload(observed: &Observed) -> String {
    let shifts: Vec<serde_json::Value> = observed
        .shifts
        .iter()
        .map(|s| serde_json::json!({"from": s.from.as_str(), "to": s.to.as_str(), "tokens": s.tokens}))
        .collect();
    let caps: serde_json::Map<String, serde_json::Value> = Zone::ALL
        .iter()
        .zip(observed.caps.unwrap_or_default())
        .map(|(zone, cap)| (zone.as_str().to_string(), cap.into()))
        .collect();
    let moved: i64 = observed.shifts.iter().map(|s| s.tokens).sum();
    serde_json::json!({"shifts": shifts, "caps": caps, "turn": observed.turns, "moved_tokens": moved})
        .to_string()
}
