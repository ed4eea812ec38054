//! Group commit: appends that arrive while a commit is running share the next one.
//!
//! Writers queue their records and take a ticket; the first waiter that finds no commit running
//! becomes the leader: it takes everything queued, writes it in one sled batch, flushes and
//! `fdatasync`s, then wakes everyone whose ticket that covered. Writers never touch sled
//! concurrently with a flush, so a commit's cost is paid once per batch, not once per record.
//!
//! A commit that fails fails for every ticket it covered: each of their writers is told, and
//! none of their records is tried again. A record retried behind its writer's back would become
//! durable after the writer had reported it lost (a grant refused to the person could come into
//! force at the next start).
//!
//! A leader that finds fewer tickets waiting than its predecessor committed waits up to
//! [`GATHER`] for the rest to arrive: the writers just woken by the last commit are still
//! preparing their next record, and without the pause batches alternate between one record and
//! all the others. A lone writer never waits (its predecessor's batch was one ticket).

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The longest a leader waits for the writers of the previous batch to come back.
pub const GATHER: Duration = Duration::from_micros(100);

/// A batch whose commit failed: tickets `after + 1 ..= through`, and the error each of their
/// writers is still to be told.
#[derive(Debug)]
struct Failed<E> {
    after: u64,
    through: u64,
    error: E,
    /// Writers of the batch, other than its leader, that have not collected the error yet.
    untold: u64,
}

#[derive(Debug)]
struct State<T, E> {
    /// Tickets handed out.
    issued: u64,
    /// Every ticket up to this one is settled: on the device, or in a failed batch.
    settled: u64,
    committing: bool,
    /// Records queued since the last commit began, in ticket order.
    queued: Vec<T>,
    /// How many tickets the last successful commit covered.
    last_batch: u64,
    /// A leader is waiting for writers to arrive (only then does a submit wake anyone).
    gathering: bool,
    failed: Vec<Failed<E>>,
}

/// Queues records of type `T` and commits them in batches; a failed commit's error `E` is
/// handed to every writer of the batch.
#[derive(Debug)]
pub struct GroupCommit<T, E> {
    state: Mutex<State<T, E>>,
    done: Condvar,
    arrived: Condvar,
}

impl<T, E> Default for GroupCommit<T, E> {
    fn default() -> Self {
        Self {
            state: Mutex::new(State {
                issued: 0,
                settled: 0,
                committing: false,
                queued: Vec::new(),
                last_batch: 0,
                gathering: false,
                failed: Vec::new(),
            }),
            done: Condvar::new(),
            arrived: Condvar::new(),
        }
    }
}

impl<T, E: Clone> GroupCommit<T, E> {
    /// Queues `record` for the next commit and returns its ticket. Every ticket must be waited
    /// for (a failed batch keeps its error until each of its writers has collected it).
    pub fn submit(&self, record: T) -> u64 {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.queued.push(record);
        state.issued += 1;
        if state.gathering {
            self.arrived.notify_one();
        }
        state.issued
    }

    /// Returns once `ticket` is durable, or with the error of the commit that covered it. The
    /// leader runs `commit` with every queued record, in ticket order.
    pub fn wait(&self, ticket: u64, commit: impl Fn(&[T]) -> Result<(), E>) -> Result<(), E> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if state.settled >= ticket {
                return take_failure(&mut state.failed, ticket);
            }
            if state.committing {
                state = self
                    .done
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            state.committing = true;
            let deadline = Instant::now() + GATHER;
            state.gathering = true;
            while state.issued - state.settled < state.last_batch {
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                state = self
                    .arrived
                    .wait_timeout(state, deadline - now)
                    .map(|(state, _)| state)
                    .unwrap_or_else(|poison| poison.into_inner().0);
            }
            state.gathering = false;
            let covers = state.issued;
            let batch = std::mem::take(&mut state.queued);
            drop(state);
            let result = commit(&batch);
            drop(batch);
            state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.committing = false;
            let after = state.settled;
            state.settled = covers;
            let outcome = match result {
                Ok(()) => {
                    state.last_batch = covers - after;
                    Ok(())
                }
                Err(error) => {
                    // The leader's own ticket is among them; it is told here.
                    let untold = covers - after - 1;
                    if untold > 0 {
                        state.failed.push(Failed {
                            after,
                            through: covers,
                            error: error.clone(),
                            untold,
                        });
                    }
                    Err(error)
                }
            };
            self.done.notify_all();
            // The leader's own ticket was queued before it waited, so this batch covered it.
            return outcome;
        }
    }
}

/// The error of the failed batch that covered `ticket`, if one did.
fn take_failure<E: Clone>(failed: &mut Vec<Failed<E>>, ticket: u64) -> Result<(), E> {
    let Some(at) = failed
        .iter()
        .position(|f| f.after < ticket && ticket <= f.through)
    else {
        return Ok(());
    };
    let batch = &mut failed[at];
    batch.untold -= 1;
    let error = batch.error.clone();
    if batch.untold == 0 {
        failed.swap_remove(at);
    }
    Err(error)
}

#[cfg(test)]
mod tests {
    use super::GroupCommit;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};

    #[test]
    fn concurrent_writers_share_commits_and_every_record_is_committed() {
        let commit = Arc::new(GroupCommit::<Vec<u8>, ()>::default());
        let commits = Arc::new(AtomicU64::new(0));
        let written = Arc::new(Mutex::new(Vec::new()));
        let threads: Vec<_> = (0..16u8)
            .map(|writer| {
                let commit = commit.clone();
                let commits = commits.clone();
                let written = written.clone();
                std::thread::spawn(move || {
                    for n in 0..50u8 {
                        let ticket = commit.submit(vec![writer, n]);
                        let result = commit.wait(ticket, |batch| {
                            commits.fetch_add(1, Ordering::SeqCst);
                            written
                                .lock()
                                .map_err(|_| ())?
                                .extend(batch.iter().cloned());
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
        let mut written = written.lock().map(|w| w.clone()).unwrap_or_default();
        written.sort();
        written.dedup();
        assert_eq!(
            written.len(),
            800,
            "every record was committed exactly once"
        );
    }

    #[test]
    fn a_failed_commit_fails_every_ticket_it_covered_and_retries_none() {
        let commit = GroupCommit::<Vec<u8>, &str>::default();
        let first = commit.submit(b"a".to_vec());
        let second = commit.submit(b"b".to_vec());
        let seen = std::cell::RefCell::new(Vec::new());
        let record = |batch: &[Vec<u8>]| {
            seen.borrow_mut().extend(batch.iter().cloned());
            Ok::<(), &str>(())
        };
        // The leader commits both records and fails; the other writer is told too.
        assert_eq!(commit.wait(first, |_| Err("disk full")), Err("disk full"));
        assert_eq!(commit.wait(second, record), Err("disk full"));
        // Neither record is written by a later commit: their writers reported them lost.
        let third = commit.submit(b"c".to_vec());
        assert_eq!(commit.wait(third, record), Ok(()));
        assert_eq!(seen.into_inner(), vec![b"c".to_vec()]);
    }
}
