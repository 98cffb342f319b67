//! The one reading of "how full is the window" the library uses.

/// How full a window is, as a fraction in `[0, 1]`, from what is known: counted
/// `tokens` of a `window` when both are (the exact answer), else a reported
/// `percent`. A percent above 1 is read as out of 100. With tokens and a window, a
/// reported percent is read on whichever scale lies nearer the counted share, so a
/// provider's 0.99 meaning "0.99%" is not read as 99%. `None` when nothing usable
/// is known.
#[must_use]
pub fn normalize_usage(
    percent: Option<f64>,
    tokens: Option<i64>,
    window: Option<i64>,
) -> Option<f64> {
    let counted = match (tokens, window) {
        (Some(tokens), Some(window)) if tokens >= 0 && window > 0 => {
            Some((tokens as f64 / window as f64).clamp(0.0, 1.0))
        }
        _ => None,
    };
    let reported = percent.filter(|value| value.is_finite()).map(|value| {
        let value = value.max(0.0);
        let scaled = match counted {
            _ if value > 1.0 => value / 100.0,
            Some(share) if (value - 100.0 * share).abs() < (value - share).abs() => value / 100.0,
            _ => value,
        };
        scaled.clamp(0.0, 1.0)
    });
    reported.or(counted)
}

#[cfg(test)]
mod tests {
    use super::normalize_usage;

    #[test]
    fn every_scale_reads_the_same() {
        assert_eq!(normalize_usage(Some(95.0), None, None), Some(0.95));
        assert_eq!(normalize_usage(Some(0.95), None, None), Some(0.95));
        assert_eq!(normalize_usage(None, Some(50), Some(200)), Some(0.25));
        let low = normalize_usage(Some(0.9886), Some(2_689), Some(272_000)).unwrap();
        assert!((low - 0.009_886).abs() < 1e-9, "{low}");
        assert_eq!(normalize_usage(Some(f64::NAN), None, None), None);
        assert_eq!(normalize_usage(Some(250.0), None, None), Some(1.0));
        assert_eq!(normalize_usage(None, Some(10), Some(0)), None);
    }
}
