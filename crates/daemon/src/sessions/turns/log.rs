//! A turn's events as the clients see them: numbered from 0, stamped, and kept for the turn's
//! life, so a client can attach from any sequence number and lose nothing.
//!
//! Each stream (the `Turn` call's own, each `AttachTurn`) follows the log on its own task and
//! counts as attached until its client goes away. When the last one goes while the turn still
//! runs, [`TurnLog::follow`]'s caller is told, so it can cancel the turn after a grace.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use codaris_proto::v1;
use tokio::sync::{mpsc, watch};

use crate::server::convert::timestamp_ms;
use crate::sessions::store::now_ms;

/// Events a stream may have in flight before it waits for its client.
const STREAM_BUFFER: usize = 64;

#[derive(Debug)]
pub struct TurnLog {
    /// The turn's number in its session.
    turn: u32,
    state: Mutex<LogState>,
    /// Bumped on every new event and at the end, to wake the followers.
    changed: watch::Sender<()>,
    attached: AtomicUsize,
}

#[derive(Debug, Default)]
struct LogState {
    events: Vec<v1::TurnEvent>,
    finished: bool,
}

impl TurnLog {
    pub fn new(turn: u32) -> Arc<TurnLog> {
        Arc::new(TurnLog {
            turn,
            state: Mutex::default(),
            changed: watch::channel(()).0,
            attached: AtomicUsize::new(0),
        })
    }

    pub fn turn(&self) -> u32 {
        self.turn
    }

    /// Appends an event with the next sequence number and the time now.
    pub fn push(&self, event: v1::turn_event::Event) {
        {
            let mut state = self.lock();
            if state.finished {
                return;
            }
            let seq = state.events.len() as u64;
            let ended = matches!(event, v1::turn_event::Event::TurnEnded(_));
            state.events.push(v1::TurnEvent {
                event: Some(event),
                seq,
                at: Some(timestamp_ms(now_ms())),
            });
            state.finished = ended;
        }
        self.changed.send_replace(());
    }

    /// True once `turn_ended` is in the log.
    pub fn finished(&self) -> bool {
        self.lock().finished
    }

    /// Streams attached now.
    pub fn attached(&self) -> usize {
        self.attached.load(Ordering::SeqCst)
    }

    /// A stream of the events from `from_seq` on, to the end of the turn. `on_last_detach` runs
    /// when this stream's client goes away while the turn runs and no other stream is attached.
    pub fn follow(
        self: &Arc<Self>,
        from_seq: u64,
        on_last_detach: impl FnOnce() + Send + 'static,
    ) -> mpsc::Receiver<v1::TurnEvent> {
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        let log = self.clone();
        log.attached.fetch_add(1, Ordering::SeqCst);
        // Subscribed before the first read, so no event pushed after it goes unnoticed.
        let mut changed = log.changed.subscribe();
        tokio::spawn(async move {
            let mut next = usize::try_from(from_seq).unwrap_or(usize::MAX);
            loop {
                let (batch, finished) = {
                    let state = log.lock();
                    let start = next.min(state.events.len());
                    (state.events[start..].to_vec(), state.finished)
                };
                for event in batch {
                    if tx.send(event).await.is_err() {
                        log.detach(on_last_detach);
                        return;
                    }
                    next += 1;
                }
                if finished {
                    break;
                }
                tokio::select! {
                    woke = changed.changed() => if woke.is_err() { break },
                    () = tx.closed() => {
                        log.detach(on_last_detach);
                        return;
                    }
                }
            }
            log.attached.fetch_sub(1, Ordering::SeqCst);
        });
        rx
    }

    fn detach(&self, on_last_detach: impl FnOnce()) {
        let left = self.attached.fetch_sub(1, Ordering::SeqCst) - 1;
        if left == 0 && !self.finished() {
            on_last_detach();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LogState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> v1::turn_event::Event {
        v1::turn_event::Event::Text(v1::TextDelta { text: t.to_owned() })
    }

    fn ended() -> v1::turn_event::Event {
        v1::turn_event::Event::TurnEnded(v1::TurnEnded {
            turn: 0,
            reason: "end_turn".to_owned(),
            ..v1::TurnEnded::default()
        })
    }

    async fn drain(mut rx: mpsc::Receiver<v1::TurnEvent>) -> Vec<u64> {
        let mut seqs = Vec::new();
        while let Some(event) = rx.recv().await {
            seqs.push(event.seq);
        }
        seqs
    }

    #[tokio::test]
    async fn a_follower_gets_the_missed_events_in_order_then_the_rest_to_the_end() {
        let log = TurnLog::new(0);
        for t in ["a", "b", "c"] {
            log.push(text(t));
        }
        let late = log.follow(1, || {});
        log.push(text("d"));
        log.push(ended());
        log.push(text("after the end is dropped"));
        assert_eq!(drain(late).await, [1, 2, 3, 4]);
        assert_eq!(drain(log.follow(0, || {})).await, [0, 1, 2, 3, 4]);
        assert_eq!(drain(log.follow(99, || {})).await, Vec::<u64>::new());
        assert!(log.finished());
    }

    #[tokio::test]
    async fn the_last_stream_going_away_while_the_turn_runs_says_so_once() {
        let log = TurnLog::new(0);
        log.push(text("a"));
        let (said, mut told) = mpsc::unbounded_channel();
        let first = log.follow(0, {
            let said = said.clone();
            move || said.send("first").unwrap_or_default()
        });
        let second = log.follow(0, move || said.send("second").unwrap_or_default());
        drop(first);
        log.push(text("b"));
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(told.try_recv().is_err(), "another stream is still attached");
        drop(second);
        assert_eq!(told.recv().await, Some("second"));
        assert_eq!(log.attached(), 0);
    }
}
