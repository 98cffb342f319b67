//! Sortable, typed identifiers: `msg_`, `prt_`, `sum_`, `ses_`, `evt_` followed by
//! 16 hex digits of time-ordered sequence and 6 hex digits of per-process noise.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

static LAST: AtomicU64 = AtomicU64::new(0);
static NOISE: OnceLock<u32> = OnceLock::new();

/// Milliseconds since the Unix epoch.
#[must_use]
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn process_noise() -> u32 {
    *NOISE.get_or_init(|| {
        // RandomState is seeded from the OS; mixing the pid keeps forked children apart.
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        (hasher.finish() & 0x00ff_ffff) as u32
    })
}

/// A new id with `prefix` (without the underscore). Ids from one process are
/// strictly increasing; the time part keeps ids from several processes roughly ordered.
#[must_use]
pub fn new_id(prefix: &str) -> String {
    // 20 low bits count ids within one millisecond.
    let candidate = (now_ms() as u64) << 20;
    let mut prev = LAST.load(Ordering::Relaxed);
    let value = loop {
        let next = candidate.max(prev + 1);
        match LAST.compare_exchange_weak(prev, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => break next,
            Err(actual) => prev = actual,
        }
    };
    format!("{prefix}_{value:016x}{:06x}", process_noise())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_sorted() {
        let ids: Vec<String> = (0..10_000).map(|_| new_id("msg")).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(ids, sorted);
        assert!(ids[0].starts_with("msg_"));
        assert_eq!(ids[0].len(), 4 + 22);
    }
}
