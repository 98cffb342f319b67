//! The adaptive controller: between turns, it moves cap from zones that leave
//! theirs unused to zones whose entries are being cut or left out.
//!
//! Idle is measured as the unused share of a zone's cap, so a zone without demand
//! donates (its cap is all unused), and a zone that is cut is never idle at once
//! (a cut fills its allocation). Donors never go below their floor or what they
//! hold now, receivers never grow past what they want or could ever be allocated,
//! identity, truth and task state never donate, and every shift is zero-sum.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::allocate::ZoneLimits;
use super::plan::ZoneReport;
use super::zones::{Entry, PerZone, Zone};

/// The controller's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ControllerRules {
    pub enabled: bool,
    /// Weight of the newest turn in the moving averages.
    pub alpha: f64,
    /// Turns observed before the first shift.
    pub warmup_turns: u32,
    /// Tokens one shift moves.
    pub step: i64,
    /// Tokens all shifts of one turn move at most.
    pub max_shift: i64,
    /// A zone whose average cut share is above this receives cap.
    pub truncation_ratio: f64,
    /// A zone whose average unused share of its cap is above this donates.
    pub idle_ratio: f64,
    /// Cap no zone grows beyond (the global cap).
    pub max_cap: i64,
}

impl Default for ControllerRules {
    fn default() -> Self {
        Self {
            enabled: true,
            alpha: 0.3,
            warmup_turns: 3,
            step: 32,
            max_shift: 96,
            truncation_ratio: 0.25,
            idle_ratio: 0.15,
            max_cap: i64::MAX,
        }
    }
}

/// What the controller keeps per session, persisted with it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ControllerState {
    /// Model turns observed.
    pub turns: u32,
    pub ema_truncation: PerZone<f64>,
    pub ema_idle: PerZone<f64>,
    pub caps: PerZone<i64>,
}

/// One move of cap between two zones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shift {
    pub from: Zone,
    pub to: Zone,
    pub tokens: i64,
}

impl ControllerState {
    /// A fresh state: the configured caps, no history.
    #[must_use]
    pub fn new(limits: &PerZone<ZoneLimits>) -> Self {
        Self {
            turns: 0,
            ema_truncation: [0.0; 7],
            ema_idle: [0.0; 7],
            caps: limits.map(|limits| limits.clean().cap),
        }
    }

    /// The state fitted to `limits` (configured anew when a session is reopened): a
    /// cap never below its floor, a zone configured off stays off.
    pub fn reconcile(&mut self, limits: &PerZone<ZoneLimits>) {
        for zone in Zone::ALL {
            let z = zone.index();
            let limits = limits[z].clean();
            self.caps[z] = if limits.cap == 0 {
                0
            } else {
                self.caps[z].max(limits.floor)
            };
        }
    }

    /// Takes in one turn's plan (its zones' reports) and moves cap for the next;
    /// returns the shifts made.
    pub fn observe(
        &mut self,
        rules: &ControllerRules,
        limits: &PerZone<ZoneLimits>,
        zones: &PerZone<ZoneReport>,
    ) -> Vec<Shift> {
        if !rules.enabled {
            return Vec::new();
        }
        self.turns = self.turns.saturating_add(1);
        let alpha = rules.alpha.clamp(0.0, 1.0);
        for zone in Zone::ALL {
            let z = zone.index();
            let report = &zones[z];
            // Text cut to the zone's cap at write time is truncation too, or a zone
            // whose entries are all cut when written would never look cut.
            let truncation = ratio(wanted(report) - report.accepted, wanted(report));
            let idle = ratio(self.caps[z] - report.accepted, self.caps[z]);
            self.ema_truncation[z] = alpha * truncation + (1.0 - alpha) * self.ema_truncation[z];
            self.ema_idle[z] = alpha * idle + (1.0 - alpha) * self.ema_idle[z];
        }
        if self.turns < rules.warmup_turns || rules.step <= 0 {
            return Vec::new();
        }
        self.shift(rules, limits, zones)
    }

    fn shift(
        &mut self,
        rules: &ControllerRules,
        limits: &PerZone<ZoneLimits>,
        zones: &PerZone<ZoneReport>,
    ) -> Vec<Shift> {
        let unit = rules.step;
        let mut budget = rules.max_shift;
        // What each zone may hold at most after this turn's shifts: a receiver no more
        // than it could ever be allocated or use, a donor no less than it holds now.
        let ceiling = receiver_ceilings(rules, limits, zones);
        let floor = donor_floors(limits, zones);
        let mut receivers: Vec<Zone> = Zone::ALL
            .into_iter()
            .filter(|zone| {
                let z = zone.index();
                wanted(&zones[z]) > 0
                    && self.ema_truncation[z] > rules.truncation_ratio
                    && limits[z].clean().cap > 0
                    && self.caps[z] < ceiling[z]
            })
            .collect();
        receivers.sort_by(|a, b| {
            self.ema_truncation[b.index()].total_cmp(&self.ema_truncation[a.index()])
        });
        let mut donors: Vec<Zone> = Zone::ALL
            .into_iter()
            .filter(|zone| {
                let z = zone.index();
                !zone.is_critical()
                    && self.ema_idle[z] > rules.idle_ratio
                    && self.caps[z] > floor[z]
                    && !receivers.contains(zone)
            })
            .collect();
        donors.sort_by(|a, b| self.ema_idle[b.index()].total_cmp(&self.ema_idle[a.index()]));
        let mut shifts: Vec<Shift> = Vec::new();
        let mut turn = 0;
        while budget > 0 && !donors.is_empty() && !receivers.is_empty() {
            let donor = donors[0];
            let receiver = receivers[turn % receivers.len()];
            turn += 1;
            let (d, r) = (donor.index(), receiver.index());
            // A last step may be short: it stops at what the zones can take or give.
            let tokens = unit
                .min(budget)
                .min(self.caps[d] - floor[d])
                .min(ceiling[r] - self.caps[r]);
            self.caps[d] -= tokens;
            self.caps[r] += tokens;
            budget -= tokens;
            match shifts
                .iter_mut()
                .find(|s| s.from == donor && s.to == receiver)
            {
                Some(shift) => shift.tokens += tokens,
                None => shifts.push(Shift {
                    from: donor,
                    to: receiver,
                    tokens,
                }),
            }
            if self.caps[d] <= floor[d] {
                donors.remove(0);
            }
            if self.caps[r] >= ceiling[r] {
                receivers.retain(|zone| *zone != receiver);
            }
        }
        shifts
    }
}

/// Tokens a zone's candidates had as they were handed over (demand plus what was
/// cut at write time): what a larger cap could give the zone.
fn wanted(report: &ZoneReport) -> i64 {
    report.demand.max(0) + report.cut_at_write.max(0)
}

/// The largest cap worth giving each zone: what it wants, and no more than the
/// global cap less the floors the other zones with demand take first (the most the
/// allocator can ever give it).
fn receiver_ceilings(
    rules: &ControllerRules,
    limits: &PerZone<ZoneLimits>,
    zones: &PerZone<ZoneReport>,
) -> PerZone<i64> {
    let floors: PerZone<i64> = Zone::ALL.map(|zone| {
        let z = zone.index();
        limits[z].clean().floor.min(zones[z].demand.max(0))
    });
    let all_floors: i64 = floors.iter().sum();
    Zone::ALL.map(|zone| {
        let z = zone.index();
        let reachable = rules.max_cap.saturating_sub(all_floors - floors[z]);
        wanted(&zones[z]).min(reachable)
    })
}

/// The smallest cap each zone may be left with as a donor: its floor, and never
/// less than what it wants now, so an entry that fits today still fits tomorrow.
fn donor_floors(limits: &PerZone<ZoneLimits>, zones: &PerZone<ZoneReport>) -> PerZone<i64> {
    Zone::ALL.map(|zone| {
        let z = zone.index();
        limits[z].clean().floor.max(wanted(&zones[z]))
    })
}

fn ratio(part: i64, whole: i64) -> f64 {
    if whole <= 0 {
        0.0
    } else {
        (part as f64 / whole as f64).clamp(0.0, 1.0)
    }
}

/// Everything the arena keeps per session between turns, persisted as JSON.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ArenaState {
    /// `None` until the first observed turn.
    pub controller: Option<ControllerState>,
    /// Keys of once-per-session entries injected, as states written before entries
    /// were told apart by zone and version recorded them: still never offered again.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub presented: BTreeSet<String>,
    /// The once-per-session entries injected: `zone:key` to the sequence number of
    /// the version injected. A rewrite has a newer number, so it is offered again.
    #[serde(default)]
    pub shown: BTreeMap<String, i64>,
}

impl ArenaState {
    /// Whether `entry` (a once-per-session one) was injected in this version.
    #[must_use]
    pub fn was_shown(&self, entry: &Entry) -> bool {
        self.presented.contains(&entry.key)
            || self
                .shown
                .get(&shown_key(entry.zone, &entry.key))
                .is_some_and(|seq| *seq >= entry.seq)
    }

    /// Records that the version `seq` of `key` in `zone` was injected.
    pub fn mark_shown(&mut self, zone: Zone, key: &str, seq: i64) {
        let slot = self.shown.entry(shown_key(zone, key)).or_insert(seq);
        *slot = (*slot).max(seq);
    }
}

fn shown_key(zone: Zone, key: &str) -> String {
    format!("{}:{key}", zone.as_str())
}
