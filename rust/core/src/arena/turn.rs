//! One turn of a session's arena, from its live entries and stored state to the
//! rendered injection, and back to the state after the turn.

use super::allocate::ZoneLimits;
use super::ceiling::CeilingPolicy;
use super::controller::{ArenaState, ControllerRules, ControllerState, Shift};
use super::plan::{plan_refs, Plan, PlanRules, ZoneReport};
use super::render::{render_refs, Rendered};
use super::zones::{Entry, PerZone, Zone};

/// Everything a session's arena is configured with.
#[derive(Clone, Debug)]
pub struct ArenaRules {
    pub plan: PlanRules,
    pub controller: ControllerRules,
    pub max_entries: usize,
    pub policy: CeilingPolicy,
}

/// A turn's plan, what it injects and its text.
#[derive(Clone, Debug)]
pub struct TurnPlan {
    pub plan: Plan,
    pub rendered: Rendered,
    /// Keys of the injected entries, in the order the plan chose them.
    pub injected: Vec<String>,
    /// The once-per-session entries injected, as (zone, key, sequence number).
    pub once: Vec<(Zone, String, i64)>,
    /// Tokens of the session ledger's entries injected (after cuts).
    pub ledger_tokens: i64,
}

/// The caps the controller holds for `state`, fitted to the configured limits;
/// `None` when the controller is off or has not observed a turn.
#[must_use]
pub fn current_caps(state: &ArenaState, rules: &ArenaRules) -> Option<PerZone<i64>> {
    if !rules.controller.enabled {
        return None;
    }
    let mut controller = state.controller.clone()?;
    controller.reconcile(&rules.plan.limits);
    Some(controller.caps)
}

/// Plans a turn over the session's `live` entries (once-per-session ones already
/// injected left out) and this turn's `transient` candidates (recall hits), under
/// the global cap `cap`.
#[must_use]
pub fn plan_turn(
    live: &[Entry],
    transient: &[Entry],
    state: &ArenaState,
    rules: &ArenaRules,
    cap: i64,
    count: &dyn Fn(&str) -> usize,
) -> TurnPlan {
    let mut candidates: Vec<&Entry> = live
        .iter()
        .filter(|entry| !(entry.once && state.was_shown(entry)))
        .collect();
    candidates.extend(transient);
    let caps = current_caps(state, rules);
    let plan = plan_refs(&candidates, cap, &rules.plan, caps.as_ref(), count);
    let rendered = render_refs(&candidates, &plan);
    let chosen = || {
        plan.accepted
            .iter()
            .map(|accepted| candidates[accepted.index])
    };
    let injected = chosen().map(|entry| entry.key.clone()).collect();
    let once = chosen()
        .filter(|entry| entry.once)
        .map(|entry| (entry.zone, entry.key.clone(), entry.seq))
        .collect();
    let ledger_tokens = plan
        .accepted
        .iter()
        .filter(|accepted| {
            let entry = candidates[accepted.index];
            entry.key == crate::ledger::store::ARENA_KEY && entry.source == "ledger"
        })
        .map(|accepted| accepted.tokens)
        .sum();
    TurnPlan {
        plan,
        rendered,
        injected,
        once,
        ledger_tokens,
    }
}

/// Takes in a turn that was sent: the controller observes its zones and the
/// once-per-session entries it injected, as (zone, key, sequence number), are not
/// offered again until they are rewritten. Returns the cap shifts for the next turn.
pub fn observe_turn(
    state: &mut ArenaState,
    rules: &ArenaRules,
    zones: &PerZone<ZoneReport>,
    once: &[(Zone, String, i64)],
) -> Vec<Shift> {
    for (zone, key, seq) in once {
        state.mark_shown(*zone, key, *seq);
    }
    if !rules.controller.enabled {
        return Vec::new();
    }
    let limits: &PerZone<ZoneLimits> = &rules.plan.limits;
    let controller = state
        .controller
        .get_or_insert_with(|| ControllerState::new(limits));
    controller.reconcile(limits);
    controller.observe(&rules.controller, limits, zones)
}
