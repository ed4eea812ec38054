//! The client-side throttle: request starts spaced so that NCBI's per-second limit (3 without
//! a key, 10 with one) is never reached, however many sessions share the client.
//!
//! The schedule is a pure function of the clock ([`Spacing::reserve`]), so it is tested with
//! made-up instants rather than by timing real requests.

use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;

/// Requests a second NCBI allows without an API key.
pub const REQUESTS_PER_SECOND_WITHOUT_KEY: u32 = 3;
/// Requests a second NCBI allows with an API key.
pub const REQUESTS_PER_SECOND_WITH_KEY: u32 = 10;

/// The gap between two request starts for `per_second` requests a second, a tenth wider than
/// the bare `1 s / per_second`: starts spaced exactly that far apart can still arrive four to a
/// second when one request is slowed on its way (a busy machine, a slow connect) and the next
/// is not.
pub fn interval_for(per_second: u32) -> Duration {
    let bare = Duration::from_secs(1) / per_second.max(1);
    bare + bare / 10
}

/// The schedule of request starts: each reservation takes the next free slot.
#[derive(Debug, Clone)]
pub struct Spacing {
    interval: Duration,
    next_free: Option<Instant>,
}

impl Spacing {
    pub fn new(interval: Duration) -> Self {
        Self {
            interval,
            next_free: None,
        }
    }

    /// When a request asked for at `now` may start: `now` if the last start is at least one
    /// interval ago, else one interval after the last reserved start.
    pub fn reserve(&mut self, now: Instant) -> Instant {
        let start = match self.next_free {
            Some(free) if free > now => free,
            _ => now,
        };
        self.next_free = Some(start + self.interval);
        start
    }

    /// Records that the request reserved last really started at `at`: a task woken late (a
    /// busy machine) pushes the next slot back, so two starts are never closer than one
    /// interval however late the first one ran.
    pub fn started(&mut self, at: Instant) {
        let after = at + self.interval;
        if self.next_free.is_none_or(|free| free < after) {
            self.next_free = Some(after);
        }
    }
}

/// The shared throttle: a [`Spacing`] behind a fair (first come, first served) lock, held
/// while waiting for the slot so that the start really taken is what the next waiter is
/// spaced from. Only the wait is inside the lock, never the request itself.
#[derive(Debug)]
pub struct Throttle {
    spacing: Mutex<Spacing>,
}

impl Throttle {
    pub fn new(interval: Duration) -> Self {
        Self {
            spacing: Mutex::new(Spacing::new(interval)),
        }
    }

    /// Waits for this request's slot.
    pub async fn wait(&self) {
        let mut spacing = self.spacing.lock().await;
        let start = spacing.reserve(Instant::now());
        tokio::time::sleep_until(start).await;
        spacing.started(Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_leaves_a_margin_under_the_limit() {
        assert_eq!(
            interval_for(REQUESTS_PER_SECOND_WITHOUT_KEY),
            Duration::from_nanos(366_666_666)
        );
        assert_eq!(
            interval_for(REQUESTS_PER_SECOND_WITH_KEY),
            Duration::from_millis(110)
        );
        // Four starts of a keyless client span more than a second.
        assert!(interval_for(3) * 3 > Duration::from_secs(1));
        assert!(interval_for(10) * 10 > Duration::from_secs(1));
        assert_eq!(interval_for(0), Duration::from_millis(1100));
    }

    #[test]
    fn a_burst_is_spread_one_interval_apart() {
        let t0 = Instant::now();
        let step = Duration::from_millis(100);
        let mut spacing = Spacing::new(step);
        let starts: Vec<Instant> = (0..4).map(|_| spacing.reserve(t0)).collect();
        assert_eq!(starts, vec![t0, t0 + step, t0 + step * 2, t0 + step * 3]);
    }

    #[test]
    fn an_idle_client_starts_at_once_and_never_banks_slots() {
        let t0 = Instant::now();
        let step = Duration::from_millis(100);
        let mut spacing = Spacing::new(step);
        assert_eq!(spacing.reserve(t0), t0);
        // Long after the last start: no wait, and the quiet time is not saved up for a burst.
        let later = t0 + Duration::from_secs(5);
        assert_eq!(spacing.reserve(later), later);
        assert_eq!(spacing.reserve(later), later + step);
        // Asked halfway through an interval: waits for the rest of it.
        let mid = later + step + step / 2;
        assert_eq!(spacing.reserve(mid), later + step * 2);
    }

    #[test]
    fn a_start_that_ran_late_pushes_the_next_one_back() {
        let t0 = Instant::now();
        let step = Duration::from_millis(100);
        let mut spacing = Spacing::new(step);
        assert_eq!(spacing.reserve(t0), t0);
        // The request meant for t0 only got going 70 ms later.
        spacing.started(t0 + Duration::from_millis(70));
        assert_eq!(spacing.reserve(t0), t0 + Duration::from_millis(170));
        // A start on time changes nothing.
        spacing.started(t0 + Duration::from_millis(170));
        assert_eq!(spacing.reserve(t0), t0 + Duration::from_millis(270));
    }
}
