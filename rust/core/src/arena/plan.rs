//! One turn's plan: which entries go into the injection, whole or cut, under the
//! global cap, with the floor cascade when the floors do not fit.

use std::cmp::Reverse;

use super::allocate::{allocate, ZoneLimits};
use super::cut::cut_head_tail;
use super::zones::{Entry, PerZone, Zone};

/// What a plan is bound by, besides the global cap.
#[derive(Clone, Debug)]
pub struct PlanRules {
    /// Each zone's floor and cap as configured.
    pub limits: PerZone<ZoneLimits>,
    /// The zones whose floors are relaxed, one more at each step, when the floors do
    /// not fit.
    pub relax_order: Vec<Zone>,
    /// Whether the cascade runs at all; without it an unmet floor goes straight to
    /// the last stage.
    pub cascade: bool,
    /// The smallest piece of an entry worth injecting: an entry that does not fit is
    /// cut to what is left when at least this much is, and skipped otherwise.
    pub min_cut_tokens: i64,
}

/// How far the floor cascade had to go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloorStage {
    /// The floors fit.
    Met,
    /// They fit once the floors of [`Plan::relaxed`] were dropped.
    Relaxed,
    /// Only identity, truth and task state are planned, with their own floors.
    CriticalOnly,
    /// Not even those floors fit: identity, truth and task state are planned without
    /// floors, and the session should compact its history.
    Unrecoverable,
}

impl FloorStage {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            FloorStage::Met => "met",
            FloorStage::Relaxed => "relaxed",
            FloorStage::CriticalOnly => "critical_only",
            FloorStage::Unrecoverable => "unrecoverable",
        }
    }
}

/// What happened to one zone in a plan.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZoneReport {
    /// Tokens of the zone's candidates.
    pub demand: i64,
    /// Floor and cap the plan used (after the controller and the cascade).
    pub floor: i64,
    pub cap: i64,
    /// Tokens the allocator gave the zone, and any lent to it from what other
    /// zones were allocated and could not use.
    pub allocated: i64,
    /// Tokens of the entries injected (after cuts).
    pub accepted: i64,
    /// Tokens the zone's candidates lost when they were written, cut to the zone's
    /// cap: demand the zone had but could not ask for.
    pub cut_at_write: i64,
    /// Keys of entries injected cut.
    pub cut: Vec<String>,
    /// Keys of entries left out: the first [`REPORTED_DROPS`] of them.
    pub dropped: Vec<String>,
    /// How many entries were left out.
    pub dropped_count: usize,
}

/// Keys of left-out entries a zone's report names at most: a turn over thousands of
/// entries leaves most of them out, and copying every key would cost more than the
/// plan.
pub const REPORTED_DROPS: usize = 32;

impl ZoneReport {
    fn drop_key(&mut self, key: &str) {
        if self.dropped.len() < REPORTED_DROPS {
            self.dropped.push(key.to_string());
        }
        self.dropped_count += 1;
    }
}

/// An entry the plan injects; `text` is set when it was cut.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accepted {
    /// Index into the entries given to [`plan`].
    pub index: usize,
    pub text: Option<String>,
    pub tokens: i64,
}

/// One turn's plan.
#[derive(Clone, Debug)]
pub struct Plan {
    /// In zone order, then by priority, then newest first; then the entries that
    /// fit only in allocation another zone left unused, in the same order.
    pub accepted: Vec<Accepted>,
    pub zones: PerZone<ZoneReport>,
    pub stage: FloorStage,
    /// Zones whose floors were relaxed.
    pub relaxed: Vec<Zone>,
    /// Tokens of the accepted entries.
    pub tokens: i64,
    /// The global cap planned under.
    pub cap: i64,
}

/// Plans `entries` (every candidate of the turn) under the global cap `total`.
/// `caps` are the controller's current caps, which replace the configured ones
/// (never below a floor; a zone configured with cap 0 stays off). `count` counts
/// tokens, for cutting an entry that does not fit.
#[must_use]
pub fn plan(
    entries: &[Entry],
    total: i64,
    rules: &PlanRules,
    caps: Option<&PerZone<i64>>,
    count: &dyn Fn(&str) -> usize,
) -> Plan {
    let refs: Vec<&Entry> = entries.iter().collect();
    plan_refs(&refs, total, rules, caps, count)
}

/// [`plan`] over borrowed entries: a turn plans over thousands of live entries and
/// copies only what it injects.
#[must_use]
pub fn plan_refs(
    entries: &[&Entry],
    total: i64,
    rules: &PlanRules,
    caps: Option<&PerZone<i64>>,
    count: &dyn Fn(&str) -> usize,
) -> Plan {
    let total = total.max(0);
    let mut order: Vec<usize> = (0..entries.len()).collect();
    // The index ends the key, so the unstable sort is deterministic.
    order.sort_unstable_by_key(|&i| {
        let entry = entries[i];
        (entry.zone, entry.priority, Reverse(entry.seq), i)
    });
    let limits = effective_limits(rules, caps);
    let (stage, relaxed, limits, allowed, allocated) =
        floors(entries, &order, total, rules, limits);
    let mut zones: PerZone<ZoneReport> = Default::default();
    for zone in Zone::ALL {
        let z = zone.index();
        zones[z].floor = limits[z].floor;
        zones[z].cap = limits[z].cap;
        zones[z].allocated = allocated[z];
    }
    let mut pass = Pass {
        entries,
        rules,
        count,
        left: total,
        zone_left: allocated,
        zones,
        accepted: Vec::new(),
    };
    let mut missed = Vec::new();
    for &i in &order {
        let entry = entries[i];
        let report = &mut pass.zones[entry.zone.index()];
        report.demand += entry.tokens;
        report.cut_at_write += (entry.full_tokens - entry.tokens).max(0);
        if !allowed(entry.zone) {
            report.drop_key(&entry.key);
        } else if !pass.offer(i) {
            missed.push(i);
        }
    }
    // What a zone was allocated and could not use (its entry too large even to
    // cut) goes to entries of other zones that fit whole in it, within their caps.
    for i in missed {
        let entry = entries[i];
        let z = entry.zone.index();
        let room = pass.left.min(limits[z].cap - pass.zones[z].accepted);
        if entry.tokens <= room {
            pass.lend(z, entry.tokens);
            pass.take(i, entry.tokens, None);
        } else {
            pass.zones[z].drop_key(&entry.key);
        }
    }
    Plan {
        tokens: total - pass.left,
        accepted: pass.accepted,
        zones: pass.zones,
        stage,
        relaxed,
        cap: total,
    }
}

/// The plan being filled: what is left of the global cap and of each zone's
/// allocation.
struct Pass<'a, 'e> {
    entries: &'a [&'e Entry],
    rules: &'a PlanRules,
    count: &'a dyn Fn(&str) -> usize,
    left: i64,
    zone_left: PerZone<i64>,
    zones: PerZone<ZoneReport>,
    accepted: Vec<Accepted>,
}

impl Pass<'_, '_> {
    /// Injects entry `i` whole, or cut to what its zone has left; whether it went in.
    fn offer(&mut self, i: usize) -> bool {
        let entry = self.entries[i];
        let room = self.zone_left[entry.zone.index()].min(self.left);
        if entry.tokens <= room {
            self.take(i, entry.tokens, None);
            return true;
        }
        if room < self.rules.min_cut_tokens.max(1) {
            return false;
        }
        match cut_head_tail(&entry.text, room as usize, self.count) {
            Some((text, tokens)) => {
                self.take(i, tokens as i64, Some(text));
                true
            }
            None => false,
        }
    }

    fn take(&mut self, i: usize, tokens: i64, text: Option<String>) {
        let entry = self.entries[i];
        let z = entry.zone.index();
        let report = &mut self.zones[z];
        if text.is_some() {
            report.cut.push(entry.key.clone());
        }
        report.accepted += tokens;
        self.zone_left[z] -= tokens;
        self.left -= tokens;
        self.accepted.push(Accepted {
            index: i,
            text,
            tokens,
        });
    }

    /// Gives zone `z` what it lacks of `tokens` beyond its own unused allocation,
    /// from what the plan left over (the caller checked it is there). The zones
    /// that left it unused keep their reported allocation: it was theirs to use.
    fn lend(&mut self, z: usize, tokens: i64) {
        let lent = tokens - self.zone_left[z].max(0).min(tokens);
        self.zones[z].allocated += lent;
        self.zone_left[z] += lent;
    }
}

fn effective_limits(rules: &PlanRules, caps: Option<&PerZone<i64>>) -> PerZone<ZoneLimits> {
    let mut limits = rules.limits.map(ZoneLimits::clean);
    if let Some(caps) = caps {
        for zone in Zone::ALL {
            let z = zone.index();
            if limits[z].cap > 0 {
                limits[z].cap = caps[z].max(limits[z].floor);
            }
        }
    }
    limits
}

type Floors = (
    FloorStage,
    Vec<Zone>,
    PerZone<ZoneLimits>,
    fn(Zone) -> bool,
    PerZone<i64>,
);

/// The allocation, through as much of the cascade as it takes: relax the floors in
/// the configured order, then keep only the critical zones with their floors, then
/// the critical zones without floors (which always fits).
fn floors(
    entries: &[&Entry],
    order: &[usize],
    total: i64,
    rules: &PlanRules,
    limits: PerZone<ZoneLimits>,
) -> Floors {
    let every: fn(Zone) -> bool = |_| true;
    let critical: fn(Zone) -> bool = Zone::is_critical;
    let demand_of = |allowed: fn(Zone) -> bool| {
        let mut demand = [0_i64; 7];
        for &i in order {
            let entry = entries[i];
            if allowed(entry.zone) {
                demand[entry.zone.index()] += entry.tokens;
            }
        }
        demand
    };
    let demand = demand_of(every);
    if let Ok(granted) = allocate(total, &demand, &limits) {
        return (FloorStage::Met, Vec::new(), limits, every, granted);
    }
    let mut relaxed = Vec::new();
    let mut relaxing = limits;
    if rules.cascade {
        for &zone in &rules.relax_order {
            if relaxed.contains(&zone) {
                continue;
            }
            relaxed.push(zone);
            relaxing[zone.index()].floor = 0;
            if let Ok(granted) = allocate(total, &demand, &relaxing) {
                return (FloorStage::Relaxed, relaxed, relaxing, every, granted);
            }
        }
        let demand = demand_of(critical);
        if let Ok(granted) = allocate(total, &demand, &limits) {
            return (FloorStage::CriticalOnly, relaxed, limits, critical, granted);
        }
    }
    let mut floorless = limits;
    for zone in &mut floorless {
        zone.floor = 0;
    }
    let granted = allocate(total, &demand_of(critical), &floorless)
        .expect("an allocation without floors always fits");
    (
        FloorStage::Unrecoverable,
        relaxed,
        floorless,
        critical,
        granted,
    )
}
