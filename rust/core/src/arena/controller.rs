//! The adaptive controller: between turns, it moves cap from zones that leave
//! theirs unused to zones whose entries are being cut or left out.
//!
//! Idle is measured as the unused share of a zone's cap, so a zone without demand
//! donates (its cap is all unused), and a zone that is cut is never idle at once
//! (a cut fills its allocation). Donors never go below their floor, identity, truth
//! and task state never donate, and every shift is zero-sum.

use serde::{Deserialize, Serialize};

use super::allocate::ZoneLimits;
use super::plan::ZoneReport;
use super::zones::{PerZone, Zone};

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
            let truncation = ratio(report.demand - report.accepted, report.demand);
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
        let mut budget = rules.max_shift / unit * unit;
        let mut receivers: Vec<Zone> = Zone::ALL
            .into_iter()
            .filter(|zone| {
                let z = zone.index();
                zones[z].demand > 0
                    && self.ema_truncation[z] > rules.truncation_ratio
                    && limits[z].clean().cap > 0
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
                    && self.caps[z] - limits[z].clean().floor >= unit
            })
            .collect();
        donors.sort_by(|a, b| self.ema_idle[b.index()].total_cmp(&self.ema_idle[a.index()]));
        let mut shifts: Vec<Shift> = Vec::new();
        let mut turn = 0;
        while budget >= unit && !donors.is_empty() && !receivers.is_empty() {
            let donor = donors[0];
            let receiver = receivers[turn % receivers.len()];
            turn += 1;
            let (d, r) = (donor.index(), receiver.index());
            let floor = limits[d].clean().floor;
            if donor == receiver || self.caps[d] - floor < unit {
                donors.remove(0);
                continue;
            }
            if self.caps[r] + unit > rules.max_cap {
                receivers.retain(|zone| *zone != receiver);
                continue;
            }
            self.caps[d] -= unit;
            self.caps[r] += unit;
            budget -= unit;
            match shifts
                .iter_mut()
                .find(|s| s.from == donor && s.to == receiver)
            {
                Some(shift) => shift.tokens += unit,
                None => shifts.push(Shift {
                    from: donor,
                    to: receiver,
                    tokens: unit,
                }),
            }
            if self.caps[d] - floor < unit {
                donors.remove(0);
            }
        }
        shifts
    }
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
    /// Keys of once-per-session entries already injected.
    pub presented: std::collections::BTreeSet<String>,
}
