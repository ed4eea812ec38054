//! The scheduler's clock, an input: the daemon's is the system clock; a test's is one it moves
//! by hand, so no test waits for a schedule to come round.
//!
//! Waiting is one timer for the earliest due job ([`Clock::until`]), re-armed when the jobs
//! change: no periodic tick, so an idle daemon with a thousand jobs wakes only when one is due.

use std::future::Future;
use std::pin::Pin;

use chrono::{DateTime, Utc};
use tokio::sync::watch;

/// A boxed future, so the trait stays object-safe.
pub type Wait = Pin<Box<dyn Future<Output = ()> + Send>>;

/// What the scheduler asks of time.
pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now(&self) -> DateTime<Utc>;
    /// Resolves once it is `at` or later.
    fn until(&self, at: DateTime<Utc>) -> Wait;
    /// Moves a hand-driven clock to `to`; `false` for the system clock, which nobody moves.
    fn set(&self, _to: DateTime<Utc>) -> bool {
        false
    }
    /// `system`, or `manual` for a clock moved by hand.
    fn name(&self) -> &'static str {
        "system"
    }
}

/// The wall clock.
#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }

    fn until(&self, at: DateTime<Utc>) -> Wait {
        let wait = (at - Utc::now()).to_std().unwrap_or_default();
        Box::pin(tokio::time::sleep(wait))
    }
}

/// A clock that stands still until [`Clock::set`] moves it (tests, and `codarisd` started with
/// `CODARIS_SCHEDULER_CLOCK`).
#[derive(Debug)]
pub struct ManualClock {
    now: watch::Sender<DateTime<Utc>>,
}

impl ManualClock {
    pub fn new(start: DateTime<Utc>) -> Self {
        ManualClock {
            now: watch::Sender::new(start),
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.now.borrow()
    }

    fn until(&self, at: DateTime<Utc>) -> Wait {
        let mut now = self.now.subscribe();
        Box::pin(async move {
            // A dropped sender (the clock went away) ends the wait: nothing will move it again.
            let _ = now.wait_for(|now| *now >= at).await;
        })
    }

    fn set(&self, to: DateTime<Utc>) -> bool {
        self.now.send_replace(to);
        true
    }

    fn name(&self) -> &'static str {
        "manual"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_wait_on_the_manual_clock_ends_when_it_is_moved_past_its_instant() {
        let start = Utc::now();
        let clock = ManualClock::new(start);
        let mut wait = clock.until(start + chrono::Duration::hours(1));
        assert!(futures_poll(&mut wait).is_pending());
        clock.set(start + chrono::Duration::minutes(30));
        assert!(futures_poll(&mut wait).is_pending());
        clock.set(start + chrono::Duration::hours(2));
        wait.await;
    }

    fn futures_poll(wait: &mut Wait) -> std::task::Poll<()> {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        wait.as_mut().poll(&mut cx)
    }
}
