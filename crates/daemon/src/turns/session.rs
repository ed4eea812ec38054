//! One live session: the one owner of everything a session holds while the daemon runs.
//!
//! Its conversation, model, open cards, background pool, waiting notes, the log of its current
//! turn and the turn's cancellation live here, in one value in one map. Ending the session
//! removes it; closing it (and dropping it) cancels the running turn, lapses the open cards and
//! stops the session's background commands.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use codaris_agent::{Conversation, ModelProvider};
use codaris_ledger::{CardAnswer, Ledger};
use tokio::sync::watch;

use super::cards::Cards;
use super::log::TurnLog;
use crate::builtins::{Builtins, Pictures};

/// A session's model and what it does with pictures, which go together.
#[derive(Debug, Clone)]
pub(super) struct Model {
    pub provider: Arc<dyn ModelProvider>,
    /// Whether the session's model is shown the pictures tools return.
    pub pictures: Pictures,
}

pub struct Session {
    id: String,
    /// Held by the running turn, so a session runs one turn at a time.
    pub(super) conversation: Arc<tokio::sync::Mutex<Conversation>>,
    /// The model that answers, swapped whole when the session switches models (a turn holds
    /// the one it started with).
    model: Mutex<Model>,
    pub(super) cards: Cards,
    /// Notices (background commands that finished) waiting for the session's next turn.
    notes: Mutex<Vec<String>>,
    /// The running turn's events, or the last turn's once it ended.
    turn: Mutex<Option<Arc<TurnLog>>>,
    /// Bumped to cancel the running turn.
    cancel: watch::Sender<u64>,
    closed: AtomicBool,
    /// What closing needs: the ledger (lapsed cards are recorded) and the pools.
    ledger: Arc<Ledger>,
    builtins: Builtins,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("provider", &self.model().provider.name())
            .finish_non_exhaustive()
    }
}

impl Session {
    pub(super) fn new(
        id: String,
        conversation: Conversation,
        model: Model,
        ledger: Arc<Ledger>,
        builtins: Builtins,
    ) -> Session {
        Session {
            id,
            conversation: Arc::new(tokio::sync::Mutex::new(conversation)),
            model: Mutex::new(model),
            cards: Cards::default(),
            notes: Mutex::new(Vec::new()),
            turn: Mutex::new(None),
            cancel: watch::channel(0).0,
            closed: AtomicBool::new(false),
            ledger,
            builtins,
        }
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// The model the next turn asks.
    pub(super) fn model(&self) -> Model {
        self.model
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// What the session's model does with pictures.
    pub(super) fn pictures(&self) -> Pictures {
        self.model().pictures
    }

    /// Switches the model from the next turn on; a running turn keeps the one it started with.
    pub(super) fn set_model(&self, model: Model) {
        *self.model.lock().unwrap_or_else(PoisonError::into_inner) = model;
    }

    /// True while a turn holds the conversation.
    pub fn running(&self) -> bool {
        self.conversation.try_lock().is_err()
    }

    /// Keeps a note for the next turn.
    pub(super) fn note(&self, note: String) {
        self.notes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(note);
    }

    /// The notes waiting for the next turn, taken.
    pub(super) fn take_notes(&self) -> Vec<String> {
        std::mem::take(&mut *self.notes.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The current (or last) turn's log.
    pub(super) fn turn_log(&self) -> Option<Arc<TurnLog>> {
        self.turn
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(super) fn set_turn_log(&self, log: Arc<TurnLog>) {
        *self.turn.lock().unwrap_or_else(PoisonError::into_inner) = Some(log);
    }

    /// A receiver that changes when the running turn is cancelled.
    pub(super) fn cancellation(&self) -> watch::Receiver<u64> {
        let mut cancelled = self.cancel.subscribe();
        cancelled.mark_unchanged();
        cancelled
    }

    /// Cancels the running turn; `false` when none runs.
    pub fn cancel(&self) -> bool {
        if !self.running() {
            return false;
        }
        self.cancel.send_modify(|n| *n += 1);
        true
    }

    /// Cancels the running turn, lapses the open cards and stops the session's background
    /// commands. Once: later calls (and the drop) do nothing.
    pub fn close(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        self.cancel.send_modify(|n| *n += 1);
        self.cards.close(&self.ledger, CardAnswer::SessionEnded);
        self.builtins.close_session(&self.id);
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close();
    }
}
