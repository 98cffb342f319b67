//! Dividing the injection cap between the zones.

use super::zones::{PerZone, Zone};

/// A zone's floor (tokens it gets first, up to its demand) and cap (tokens it gets
/// at most).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZoneLimits {
    pub floor: i64,
    pub cap: i64,
}

impl ZoneLimits {
    /// The limits as the allocator reads them: never negative, a floor never above
    /// its cap.
    #[must_use]
    pub fn clean(self) -> Self {
        let cap = self.cap.max(0);
        Self {
            floor: self.floor.clamp(0, cap),
            cap,
        }
    }
}

/// The zones' floors (as far as each has demand) add up to more than the cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FloorUnmet {
    /// What the floors asked for.
    pub floors: i64,
}

/// Tokens per zone under `total`: each zone with demand first gets its floor (up to
/// its demand), then what is left goes in zone order, each zone up to its demand and
/// its cap. Fails when the floors alone do not fit.
///
/// The sum never exceeds `total`, a zone never gets more than its demand or its cap,
/// and a zone without demand gets nothing.
pub fn allocate(
    total: i64,
    demand: &PerZone<i64>,
    limits: &PerZone<ZoneLimits>,
) -> Result<PerZone<i64>, FloorUnmet> {
    let total = total.max(0);
    let mut granted = [0_i64; 7];
    for zone in Zone::ALL {
        let z = zone.index();
        let limits = limits[z].clean();
        granted[z] = demand[z].max(0).min(limits.floor);
    }
    let floors: i64 = granted.iter().sum();
    if floors > total {
        return Err(FloorUnmet { floors });
    }
    let mut left = total - floors;
    for zone in Zone::ALL {
        if left <= 0 {
            break;
        }
        let z = zone.index();
        let ceiling = demand[z].max(0).min(limits[z].clean().cap);
        let grant = (ceiling - granted[z]).clamp(0, left);
        granted[z] += grant;
        left -= grant;
    }
    Ok(granted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(pairs: [(i64, i64); 7]) -> PerZone<ZoneLimits> {
        pairs.map(|(floor, cap)| ZoneLimits { floor, cap })
    }

    #[test]
    fn floors_come_first_then_zone_order() {
        let limits = limits([
            (0, 100),
            (50, 100),
            (0, 100),
            (0, 100),
            (0, 100),
            (40, 100),
            (0, 0),
        ]);
        let demand = [100, 100, 100, 0, 0, 100, 100];
        let granted = allocate(200, &demand, &limits).unwrap();
        // Floors: truth 50, recall 40; then identity 100, truth 10 more of what is left.
        assert_eq!(granted, [100, 60, 0, 0, 0, 40, 0]);
    }

    #[test]
    fn floors_beyond_the_total_are_unmet() {
        let limits = limits([
            (100, 100),
            (100, 100),
            (0, 0),
            (0, 0),
            (0, 0),
            (0, 0),
            (0, 0),
        ]);
        let demand = [100, 100, 0, 0, 0, 0, 0];
        assert_eq!(
            allocate(150, &demand, &limits),
            Err(FloorUnmet { floors: 200 })
        );
    }

    #[test]
    fn a_zone_without_demand_needs_no_floor() {
        let limits = limits([(500, 500), (0, 100), (0, 0), (0, 0), (0, 0), (0, 0), (0, 0)]);
        let granted = allocate(100, &[0, 100, 0, 0, 0, 0, 0], &limits).unwrap();
        assert_eq!(granted, [0, 100, 0, 0, 0, 0, 0]);
    }
}
