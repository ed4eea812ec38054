//! Group commit: appends that arrive while a commit is running share the next one.
//!
//! Writers queue their records and take a ticket; the first waiter that finds no commit running
//! becomes the leader: it takes everything queued, writes it in one sled batch, flushes and
//! `fdatasync`s, then wakes everyone whose ticket that covered. Writers never touch sled
//! concurrently with a flush, so a commit's cost is paid once per batch, not once per record.
//!
//! A leader that finds fewer tickets waiting than its predecessor committed waits up to
//! [`GATHER`] for the rest to arrive: the writers just woken by the last commit are still
//! preparing their next record, and without the pause batches alternate between one record and
//! all the others. A lone writer never waits (its predecessor's batch was one ticket).

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The longest a leader waits for the writers of the previous batch to come back.
pub const GATHER: Duration = Duration::from_micros(100);

#[derive(Debug)]
struct State<T> {
    /// Tickets handed out.
    issued: u64,
    /// Every ticket up to this one is on the device.
    durable: u64,
    committing: bool,
    /// Records queued since the last commit began, in ticket order.
    queued: Vec<T>,
    /// How many tickets the last successful commit covered.
    last_batch: u64,
    /// A leader is waiting for writers to arrive (only then does a submit wake anyone).
    gathering: bool,
}

/// Queues records of type `T` and commits them in batches.
#[derive(Debug)]
pub struct GroupCommit<T> {
    state: Mutex<State<T>>,
    done: Condvar,
    arrived: Condvar,
}

impl<T> Default for GroupCommit<T> {
    fn default() -> Self {
        Self {
            state: Mutex::new(State {
                issued: 0,
                durable: 0,
                committing: false,
                queued: Vec::new(),
                last_batch: 0,
                gathering: false,
            }),
            done: Condvar::new(),
            arrived: Condvar::new(),
        }
    }
}

impl<T> GroupCommit<T> {
    /// Queues `record` (if any) for the next commit and returns its ticket.
    pub fn submit(&self, record: Option<T>) -> u64 {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.queued.extend(record);
        state.issued += 1;
        if state.gathering {
            self.arrived.notify_one();
        }
        state.issued
    }

    /// Returns once `ticket` is durable. The leader runs `commit` with every queued record;
    /// when it fails, the records go back to the front of the queue for the next leader.
    pub fn wait<E>(&self, ticket: u64, commit: impl Fn(&[T]) -> Result<(), E>) -> Result<(), E> {
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
            let deadline = Instant::now() + GATHER;
            state.gathering = true;
            while state.issued - state.durable < state.last_batch {
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
            state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.committing = false;
            match result {
                Ok(()) => {
                    state.last_batch = covers - state.durable;
                    state.durable = state.durable.max(covers);
                }
                Err(_) => {
                    let later = std::mem::replace(&mut state.queued, batch);
                    state.queued.extend(later);
                }
            }
            self.done.notify_all();
            result?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::GroupCommit;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};

    #[test]
    fn concurrent_writers_share_commits_and_every_record_is_committed() {
        let commit = Arc::new(GroupCommit::<Vec<u8>>::default());
        let commits = Arc::new(AtomicU64::new(0));
        let written = Arc::new(Mutex::new(Vec::new()));
        let threads: Vec<_> = (0..16u8)
            .map(|writer| {
                let commit = commit.clone();
                let commits = commits.clone();
                let written = written.clone();
                std::thread::spawn(move || {
                    for n in 0..50u8 {
                        let ticket = commit.submit(Some(vec![writer, n]));
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
    fn a_failed_commit_keeps_its_records_for_the_next_leader() {
        let commit = GroupCommit::<Vec<u8>>::default();
        let ticket = commit.submit(Some(b"a".to_vec()));
        assert_eq!(commit.wait(ticket, |_| Err("disk full")), Err("disk full"));
        let seen = std::cell::RefCell::new(Vec::new());
        let result = commit.wait(ticket, |batch| {
            seen.borrow_mut().extend(batch.iter().cloned());
            Ok::<(), &str>(())
        });
        assert_eq!(result, Ok(()));
        assert_eq!(seen.into_inner(), vec![b"a".to_vec()]);
    }
}
