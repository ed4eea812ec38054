//! Group commit: writers that append while a commit is running share the next one.

use std::sync::{Condvar, Mutex, PoisonError};

#[derive(Debug, Default)]
struct State {
    /// Tickets handed out; a ticket is taken after its record is in sled.
    issued: u64,
    /// Every ticket up to this one is on the device.
    durable: u64,
    committing: bool,
}

#[derive(Debug, Default)]
pub struct GroupCommit {
    state: Mutex<State>,
    done: Condvar,
}

impl GroupCommit {
    /// Takes a ticket for a record already written to sled.
    pub fn ticket(&self) -> u64 {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.issued += 1;
        state.issued
    }

    /// Returns once `ticket` is durable. One waiter runs `commit` for everyone whose ticket was
    /// issued before it started; the others wait for it, then return or commit again.
    pub fn wait<E>(&self, ticket: u64, commit: impl Fn() -> Result<(), E>) -> Result<(), E> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if state.durable >= ticket {
                return Ok(());
            }
            if state.committing {
                state = self
                    .done
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            state.committing = true;
            let covers = state.issued;
            drop(state);
            let result = commit();
            state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.committing = false;
            if result.is_ok() {
                state.durable = state.durable.max(covers);
            }
            self.done.notify_all();
            result?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::GroupCommit;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn concurrent_writers_share_commits_and_all_become_durable() {
        let commit = Arc::new(GroupCommit::default());
        let commits = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..16)
            .map(|_| {
                let commit = commit.clone();
                let commits = commits.clone();
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        let ticket = commit.ticket();
                        let result = commit.wait(ticket, || {
                            commits.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_micros(200));
                            Ok::<(), ()>(())
                        });
                        assert_eq!(result, Ok(()));
                    }
                })
            })
            .collect();
        for thread in threads {
            assert!(thread.join().is_ok());
        }
        let commits = commits.load(Ordering::SeqCst);
        assert!(
            commits < 800,
            "16 writers × 50 appends shared commits ({commits})"
        );
    }

    #[test]
    fn a_failed_commit_is_reported_and_retried_by_the_next_waiter() {
        let commit = GroupCommit::default();
        let ticket = commit.ticket();
        assert_eq!(commit.wait(ticket, || Err("disk full")), Err("disk full"));
        assert_eq!(commit.wait(ticket, || Ok::<(), &str>(())), Ok(()));
    }
}
