//! Group commit: appends that arrive while a commit is running share the next one.
//!
//! Writers queue their records and take a ticket; the first waiter that finds no commit running
//! becomes the leader: it takes everything queued and makes it durable (the journal phase: one
//! `write` and one `fdatasync`), then applies it where readers find it (the apply phase), then
//! wakes everyone whose ticket that covered. Only the journal phase is the committing section:
//! once a leader's batch is durable the next leader may journal while the batch is applied, so
//! a batch's apply overlaps the next batch's `fdatasync` instead of adding to it.
//!
//! Batches are applied one at a time, in the order they were journalled: a leader whose batch
//! is durable waits for the previous batch's apply before it gives up the section, so at most
//! one batch is being applied while another is journalled. A writer is woken only once its
//! batch is applied: durable and readable.
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

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
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
    /// Every ticket up to this one has been taken into a batch by its leader.
    taken: u64,
    /// Every ticket up to this one is settled: durable and applied, or in a failed batch.
    settled: u64,
    /// A leader holds the journal phase.
    committing: bool,
    /// A batch is being applied.
    applying: bool,
    /// Records queued since the last commit began, in ticket order.
    queued: Vec<T>,
    /// How many tickets the last successful commit covered.
    last_batch: u64,
    /// A leader is waiting for writers to arrive (only then does a submit wake anyone).
    gathering: bool,
    /// Batches taken by their leaders so far; the parity picks the `turn` condvar the writers
    /// queued for the next batch wait on.
    batches: u64,
    failed: Vec<Failed<E>>,
}

/// Queues records of type `T` and commits them in batches; a failed commit's error `E` is
/// handed to every writer of the batch.
#[derive(Debug)]
pub struct GroupCommit<T, E> {
    state: Mutex<State<T, E>>,
    /// Signalled when a batch is settled (and so the one being applied is done).
    done: Condvar,
    /// Where writers queued for the next batch wait, by the parity of that batch's number:
    /// signalled (one writer) when a leader gives up the journal phase, for a queued writer to
    /// lead the next batch, and (all) when the batch settles. Taking a batch wakes nobody: its
    /// writers sleep on until it settles, so each writer wakes once per record rather than also
    /// each time the section changes hands (on two cores the wake-ups cost more than the sync).
    /// Two of them, because the writers of the batch just taken are still asleep on one while
    /// writers arriving for the next wait on the other. The one a leader hands the section on
    /// through holds no writer of an earlier batch: the batch two back has settled by then and
    /// woken all of its own (a writer queued while it was still being applied may be woken early
    /// by that, and waits again).
    turn: [Condvar; 2],
    arrived: Condvar,
}

impl<T, E> Default for GroupCommit<T, E> {
    fn default() -> Self {
        Self {
            state: Mutex::new(State {
                issued: 0,
                taken: 0,
                settled: 0,
                committing: false,
                applying: false,
                queued: Vec::new(),
                last_batch: 0,
                gathering: false,
                batches: 0,
                failed: Vec::new(),
            }),
            done: Condvar::new(),
            turn: [Condvar::new(), Condvar::new()],
            arrived: Condvar::new(),
        }
    }
}

impl<T, E: Clone> GroupCommit<T, E> {
    /// Queues `record` for the next commit and returns its ticket. Every ticket must be waited
    /// for (a failed batch keeps its error until each of its writers has collected it).
    pub fn submit(&self, record: T) -> u64 {
        let mut state = self.lock();
        state.queued.push(record);
        state.issued += 1;
        // The gathering leader is woken once, by the writer that completes its batch, not by
        // every arrival.
        if state.gathering && state.issued - state.taken == state.last_batch {
            self.arrived.notify_one();
        }
        state.issued
    }

    /// Returns once `ticket` is durable and applied, or with the error of the commit that
    /// covered it. The leader runs `journal` with every queued record, in ticket order, inside
    /// the committing section, and then `apply` with what `journal` returned, outside it. A
    /// batch whose `journal` fails is not applied.
    pub fn wait<A>(
        &self,
        ticket: u64,
        journal: impl FnOnce(Vec<T>) -> Result<A, E>,
        apply: impl FnOnce(A) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut state = self.lock();
        loop {
            if state.settled >= ticket {
                return take_failure(&mut state.failed, ticket);
            }
            if state.taken >= ticket {
                // Its batch is in flight: woken when it settles.
                state = self.wait_done(state);
            } else if state.committing {
                // Queued for the next batch: woken to lead it, or once it settles.
                let turn = &self.turn[parity(state.batches)];
                state = turn.wait(state).unwrap_or_else(PoisonError::into_inner);
            } else {
                break;
            }
        }
        // This writer leads: its ticket is queued and no leader is journalling.
        state.committing = true;
        let deadline = Instant::now() + GATHER;
        state.gathering = true;
        while state.issued - state.taken < state.last_batch {
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
        let after = state.taken;
        let covers = state.issued;
        state.taken = covers;
        // Its writers asleep on this batch's `turn` stay asleep until it settles; writers from
        // now on wait on the other one, for the next batch.
        let batch_turn = parity(state.batches);
        state.batches += 1;
        let batch = std::mem::take(&mut state.queued);
        drop(state);
        let journalled = journal(batch);
        state = self.lock();
        // Batches settle in the order they were journalled: the previous one first.
        while state.applying {
            state = self.wait_done(state);
        }
        state.committing = false;
        let result = match journalled {
            Ok(journalled) => {
                state.applying = true;
                // The next leader may journal now: one writer queued since is woken to lead.
                if state.issued > state.taken {
                    self.turn[parity(state.batches)].notify_one();
                }
                drop(state);
                let applied = apply(journalled);
                state = self.lock();
                state.applying = false;
                applied
            }
            Err(error) => {
                if state.issued > state.taken {
                    self.turn[parity(state.batches)].notify_one();
                }
                Err(error)
            }
        };
        state.settled = covers;
        match &result {
            Ok(()) => state.last_batch = covers - after,
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
            }
        }
        self.done.notify_all();
        self.turn[batch_turn].notify_all();
        result
    }

    /// Runs `f` while no batch is journalled or applied and none can start: for work on the
    /// journal outside a commit (folding it into the store at an orderly stop). Writers that
    /// arrive meanwhile queue, and one of them leads once `f` returns.
    pub fn exclusive<R>(&self, f: impl FnOnce() -> R) -> R {
        let mut state = self.lock();
        while state.committing || state.applying {
            state = self.wait_done(state);
        }
        state.committing = true;
        drop(state);
        let result = f();
        let mut state = self.lock();
        state.committing = false;
        drop(state);
        for turn in &self.turn {
            turn.notify_all();
        }
        result
    }

    /// Blocks until no batch is being applied. For a leader's journal phase: no other batch
    /// starts applying while it journals, so once this returns everything journalled before
    /// its batch is applied.
    pub fn wait_applied(&self) {
        let mut state = self.lock();
        while state.applying {
            state = self.wait_done(state);
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T, E>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait_done<'a>(&self, state: MutexGuard<'a, State<T, E>>) -> MutexGuard<'a, State<T, E>> {
        self.done
            .wait(state)
            .unwrap_or_else(PoisonError::into_inner)
    }
}

fn parity(batch: u64) -> usize {
    usize::from(batch % 2 == 1)
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
    use std::sync::{Arc, Mutex, mpsc};
    use std::time::Duration;

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
                        let result = commit.wait(
                            ticket,
                            |batch| {
                                commits.fetch_add(1, Ordering::SeqCst);
                                std::thread::sleep(std::time::Duration::from_micros(200));
                                Ok::<_, ()>(batch)
                            },
                            |batch| {
                                written.lock().map_err(|_| ())?.extend(batch);
                                Ok(())
                            },
                        );
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
        let record = |batch: Vec<Vec<u8>>| {
            seen.borrow_mut().extend(batch);
            Ok::<(), &str>(())
        };
        let journal = Ok::<_, &str>;
        // The leader commits both records and fails; the other writer is told too.
        assert_eq!(
            commit.wait(first, |_| Err::<Vec<Vec<u8>>, _>("disk full"), record),
            Err("disk full")
        );
        assert_eq!(commit.wait(second, journal, record), Err("disk full"));
        // Neither record is written by a later commit: their writers reported them lost.
        let third = commit.submit(b"c".to_vec());
        assert_eq!(commit.wait(third, journal, record), Ok(()));
        assert_eq!(seen.into_inner(), vec![b"c".to_vec()]);
    }

    #[test]
    fn the_next_batch_journals_while_the_previous_one_is_applied() {
        let commit = GroupCommit::<u8, ()>::default();
        let events = Mutex::new(Vec::new());
        let log = |event: &str| events.lock().map(|mut e| e.push(event.to_owned()));
        let (applying, applying_seen) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let (journalled, journalled_seen) = mpsc::channel();
        let (commit, log) = (&commit, &log);
        std::thread::scope(|scope| {
            let first = scope.spawn(move || {
                let ticket = commit.submit(1);
                let result = commit.wait(ticket, Ok, |_| {
                    let _ = applying.send(());
                    let _ = released.recv_timeout(Duration::from_secs(10));
                    let _ = log("first applied");
                    Ok(())
                });
                let _ = log("first acknowledged");
                result
            });
            assert!(applying_seen.recv_timeout(Duration::from_secs(10)).is_ok());
            let second = scope.spawn(move || {
                let ticket = commit.submit(2);
                commit.wait(
                    ticket,
                    |batch| {
                        let _ = log("second journalled");
                        let _ = journalled.send(());
                        Ok(batch)
                    },
                    |_| {
                        let _ = log("second applied");
                        Ok(())
                    },
                )
            });
            // The second batch is journalled while the first is still being applied.
            assert!(
                journalled_seen
                    .recv_timeout(Duration::from_secs(10))
                    .is_ok()
            );
            assert!(release.send(()).is_ok());
            assert_eq!(first.join().ok(), Some(Ok(())));
            assert_eq!(second.join().ok(), Some(Ok(())));
        });
        let events = events.into_inner().unwrap_or_default();
        assert_eq!(
            events.first().map(String::as_str),
            Some("second journalled")
        );
        let at = |event: &str| events.iter().position(|e| e == event);
        assert!(
            at("first applied") < at("first acknowledged"),
            "a writer is told only once its batch is applied: {events:?}"
        );
        assert!(
            at("first applied") < at("second applied"),
            "batches are applied in the order they were journalled: {events:?}"
        );
    }

    #[test]
    fn wait_applied_returns_only_once_the_previous_batch_is_applied() {
        let commit = GroupCommit::<u8, ()>::default();
        let events = Mutex::new(Vec::new());
        let log = |event: &str| events.lock().map(|mut e| e.push(event.to_owned()));
        let (applying, applying_seen) = mpsc::channel();
        let (commit, log) = (&commit, &log);
        std::thread::scope(|scope| {
            let first = scope.spawn(move || {
                let ticket = commit.submit(1);
                commit.wait(ticket, Ok, |_| {
                    let _ = applying.send(());
                    std::thread::sleep(Duration::from_millis(50));
                    let _ = log("first applied");
                    Ok(())
                })
            });
            assert!(applying_seen.recv_timeout(Duration::from_secs(10)).is_ok());
            let ticket = commit.submit(2);
            let second = commit.wait(
                ticket,
                |batch| {
                    commit.wait_applied();
                    let _ = log("second drained");
                    Ok(batch)
                },
                |_| Ok(()),
            );
            assert_eq!(second, Ok(()));
            assert_eq!(first.join().ok(), Some(Ok(())));
        });
        assert_eq!(
            events.into_inner().unwrap_or_default(),
            vec!["first applied".to_owned(), "second drained".to_owned()]
        );
    }
}
