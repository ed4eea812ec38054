//! What every harness-less bench reports: the median and p99 of its samples, and the machine's
//! load while it ran.

use std::time::Duration;

/// The median and the 99th percentile of `samples` (sorted in place; nearest rank). Nothing
/// measured is zero for both.
pub fn percentiles(samples: &mut [Duration]) -> (Duration, Duration) {
    samples.sort();
    let at = |q: f64| {
        let last = samples.len().saturating_sub(1);
        // Nearest rank: the index is within 0..len, as q is within 0..=1.
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "a rank among at most millions of samples"
        )]
        let index = ((last as f64) * q).round() as usize;
        samples.get(index).copied().unwrap_or_default()
    };
    (at(0.50), at(0.99))
}

/// The 1, 5 and 15 minute load averages, as `/proc/loadavg` gives them; empty where there is
/// none.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_and_p99_by_nearest_rank() {
        let mut samples: Vec<Duration> = (1..=100).rev().map(Duration::from_millis).collect();
        assert_eq!(
            percentiles(&mut samples),
            (Duration::from_millis(51), Duration::from_millis(99))
        );
        assert_eq!(percentiles(&mut []), (Duration::ZERO, Duration::ZERO));
    }
}
