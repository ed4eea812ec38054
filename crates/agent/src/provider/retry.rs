//! When to retry and how long to wait: pure functions of the policy, the attempt and the server's
//! `retry-after`. The one impure piece, the jitter, is drawn by the caller.

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use super::config::RetryPolicy;

/// Whether an HTTP status is worth another attempt: rate limits and server errors (Anthropic's
/// 529 "overloaded" included).
pub(crate) fn is_retryable_status(status: u16) -> bool {
    status == 429 || (500..=599).contains(&status)
}

/// Whether a request that failed before any answer is worth another attempt: every connection
/// failure but a request reqwest could not even build.
pub(crate) fn is_retryable_connect(source: &reqwest::Error) -> bool {
    !source.is_builder()
}

/// Reads a `retry-after` header given in seconds (`3`, `0.5`). The HTTP-date form is not used by
/// either API and reads as absent, falling back to the backoff.
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
    let seconds: f64 = value.trim().parse().ok()?;
    if !seconds.is_finite() || seconds < 0.0 {
        return None;
    }
    Duration::try_from_secs_f64(seconds).ok()
}

/// How long to wait before retry number `retry` (0 for the first retry), or `None` when the
/// server asks for a longer wait than the policy honours.
///
/// Without `retry-after`: exponential backoff from `initial_backoff`, capped at `max_backoff`,
/// with "equal jitter": half the delay fixed, half scaled by `jitter` (0.0 to 1.0).
pub(crate) fn retry_delay(
    policy: &RetryPolicy,
    retry: u32,
    retry_after: Option<Duration>,
    jitter: f64,
) -> Option<Duration> {
    if let Some(wait) = retry_after {
        return (wait <= policy.max_retry_after).then_some(wait);
    }
    let factor = 2u32.checked_pow(retry).unwrap_or(u32::MAX);
    let exponential = policy
        .initial_backoff
        .checked_mul(factor)
        .unwrap_or(policy.max_backoff)
        .min(policy.max_backoff);
    let half = exponential / 2;
    Some(half + half.mul_f64(jitter.clamp(0.0, 1.0)))
}

/// A jitter in 0.0..1.0 from the standard library's randomly keyed hasher (no `rand` needed for
/// spreading retries).
pub(crate) fn draw_jitter() -> f64 {
    let bits = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    // The top 53 bits fill an f64 mantissa exactly.
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_retries: 5,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(1000),
            max_retry_after: Duration::from_secs(10),
        }
    }

    #[test]
    fn statuses_worth_retrying() {
        for status in [429, 500, 502, 503, 529, 599] {
            assert!(is_retryable_status(status), "{status}");
        }
        for status in [200, 400, 401, 403, 404, 408, 422] {
            assert!(!is_retryable_status(status), "{status}");
        }
    }

    #[test]
    fn retry_after_reads_seconds_only() {
        assert_eq!(parse_retry_after("3"), Some(Duration::from_secs(3)));
        assert_eq!(
            parse_retry_after(" 0.25 "),
            Some(Duration::from_millis(250))
        );
        assert_eq!(parse_retry_after("0"), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }

    #[test]
    fn backoff_doubles_caps_and_jitters_within_half() {
        let policy = policy();
        let at = |retry, jitter| retry_delay(&policy, retry, None, jitter);
        assert_eq!(at(0, 0.0), Some(Duration::from_millis(50)));
        assert_eq!(at(0, 1.0), Some(Duration::from_millis(100)));
        assert_eq!(at(1, 1.0), Some(Duration::from_millis(200)));
        assert_eq!(at(3, 1.0), Some(Duration::from_millis(800)));
        assert_eq!(at(4, 1.0), Some(Duration::from_millis(1000)));
        assert_eq!(at(40, 0.0), Some(Duration::from_millis(500)));
    }

    #[test]
    fn retry_after_wins_unless_longer_than_the_policy_allows() {
        let policy = policy();
        let wait = Some(Duration::from_secs(2));
        assert_eq!(retry_delay(&policy, 0, wait, 0.5), wait);
        assert_eq!(
            retry_delay(&policy, 0, Some(Duration::from_secs(11)), 0.5),
            None
        );
    }

    #[test]
    fn jitter_stays_in_range() {
        for _ in 0..100 {
            let jitter = draw_jitter();
            assert!((0.0..1.0).contains(&jitter), "{jitter}");
        }
    }
}
