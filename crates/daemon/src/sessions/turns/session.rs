//! One live session: the one owner of everything a session holds while the daemon runs.
//!
//! Its conversation, model, open cards, waiting notes, the log of its current turn and the
//! turn's cancellation live here, in one value in one map, and so do the things other crates
//! keep for it: its dispatcher's grant-set cache, the lease that keeps its grant view in the
//! ledger's memory and the lease that owns its background task pool. Ending the session removes
//! it; closing it (and dropping it) cancels the running turn, lapses the open cards, stops the
//! session's background commands and lets its grant set and view go.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use codaris_agent::{Conversation, ModelProvider};
use codaris_ledger::{CardAnswer, GrantLease, Ledger};
use codaris_tools::shell::PoolLease;
use tokio::sync::watch;

use super::cards::Cards;
use super::log::TurnLog;
use super::questions::OpenQuestions;
use crate::calls::builtins::Pictures;
use crate::calls::dispatch::{Dispatcher, Lineage};
use crate::sessions::ids::SessionId;

/// A session's model and what it does with pictures, which go together.
#[derive(Debug, Clone)]
pub(super) struct Model {
    pub provider: Arc<dyn ModelProvider>,
    /// Whether the session's model is shown the pictures tools return.
    pub pictures: Pictures,
    /// How its requests share the model's context window.
    pub context: codaris_agent::ContextBudget,
}

/// What the session keeps between its turns, under one lock: each part is read or swapped
/// whole, never held across an await.
struct Between {
    /// The model that answers, swapped whole when the session switches models (a turn holds
    /// the one it started with).
    model: Model,
    /// Notices (background commands that finished) waiting for the session's next turn.
    notes: Vec<String>,
    /// The running turn's events, or the last turn's once it ended.
    turn: Option<Arc<TurnLog>>,
    /// Background children's reports that wake the session: each starts a turn once none
    /// runs.
    wakes: Vec<String>,
    /// The children running now (foreground or background): cancelling the session's turn
    /// cancels them, and `background_list` lists the background ones.
    children: Vec<RunningChild>,
    /// What memory subagents recalled, waiting for the session's next model request.
    recalled: Vec<String>,
    /// How to stop the memory subagents still running (one per turn, each holding the
    /// receiver): cancelling the session's turn stops them, a turn that ended does not.
    memory: Vec<watch::Sender<bool>>,
}

/// A child of the session that is running now.
#[derive(Debug, Clone)]
pub(super) struct RunningChild {
    pub id: SessionId,
    /// `AGENT: DESCRIPTION`.
    pub label: String,
    pub background: bool,
    pub started: std::time::Instant,
}

/// What the session holds in other crates' keeping, let go of when it closes: each is held
/// for what dropping it does.
#[expect(dead_code, reason = "held for their drop, never read")]
struct Held {
    /// Keeps the session's grant view in the ledger's memory.
    grants: Option<GrantLease>,
    /// Owns the session's background task pool (none where commands do not run).
    pool: Option<PoolLease>,
}

/// What a session is made with beyond its conversation and model.
pub(super) struct Parts {
    pub ledger: Arc<Ledger>,
    /// The session's own dispatcher ([`Dispatcher::for_session`]).
    pub dispatcher: Dispatcher,
    pub pool: Option<PoolLease>,
    /// Set for a subagent's session.
    pub lineage: Option<Lineage>,
}

pub struct Session {
    id: SessionId,
    /// Held by the running turn, so a session runs one turn at a time.
    pub(super) conversation: Arc<tokio::sync::Mutex<Conversation>>,
    between: Mutex<Between>,
    pub(super) cards: Cards,
    /// Open `question` calls; dropping the session drops them, and the waiting turn reads
    /// that nobody could answer.
    pub(super) questions: OpenQuestions,
    /// Bumped to cancel the running turn.
    cancel: watch::Sender<u64>,
    closed: AtomicBool,
    /// Decides the session's calls; its grant-set cache is the session's.
    dispatcher: Dispatcher,
    held: Mutex<Held>,
    /// Lapsed cards are recorded when the session closes.
    ledger: Arc<Ledger>,
    /// Set for a subagent's session: its parent, and the person's session whose grants and
    /// stream its calls use.
    lineage: Option<Lineage>,
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
        id: SessionId,
        conversation: Conversation,
        model: Model,
        parts: Parts,
    ) -> Session {
        Session {
            conversation: Arc::new(tokio::sync::Mutex::new(conversation)),
            between: Mutex::new(Between {
                model,
                notes: Vec::new(),
                turn: None,
                wakes: Vec::new(),
                children: Vec::new(),
                recalled: Vec::new(),
                memory: Vec::new(),
            }),
            cards: Cards::default(),
            questions: OpenQuestions::default(),
            cancel: watch::channel(0).0,
            closed: AtomicBool::new(false),
            dispatcher: match &parts.lineage {
                Some(lineage) => parts.dispatcher.for_child(lineage.clone()),
                None => parts.dispatcher,
            },
            lineage: parts.lineage,
            held: Mutex::new(Held {
                grants: Some(parts.ledger.lease_grant_view(id.as_str())),
                pool: parts.pool,
            }),
            ledger: parts.ledger,
            id,
        }
    }

    pub fn id(&self) -> &SessionId {
        &self.id
    }

    fn between(&self) -> std::sync::MutexGuard<'_, Between> {
        self.between.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The model the next turn asks.
    pub(super) fn model(&self) -> Model {
        self.between().model.clone()
    }

    /// What the session's model does with pictures.
    pub(super) fn pictures(&self) -> Pictures {
        self.model().pictures
    }

    /// Switches the model from the next turn on; a running turn keeps the one it started with.
    pub(super) fn set_model(&self, model: Model) {
        self.between().model = model;
    }

    /// The dispatcher the session's calls are decided by.
    pub(super) fn dispatcher(&self) -> Dispatcher {
        self.dispatcher.clone()
    }

    /// True while a turn holds the conversation.
    pub fn running(&self) -> bool {
        self.conversation.try_lock().is_err()
    }

    /// Keeps a note for the next turn.
    pub(super) fn note(&self, note: String) {
        self.between().notes.push(note);
    }

    /// The notes waiting for the next turn, taken.
    pub(super) fn take_notes(&self) -> Vec<String> {
        std::mem::take(&mut self.between().notes)
    }

    /// Keeps what a memory subagent recalled for the session's next model request (this
    /// turn's next round, or the next turn's first).
    pub(super) fn recall(&self, note: String) {
        self.between().recalled.push(note);
    }

    /// What memory subagents recalled since the last request, taken.
    pub(super) fn take_recalled(&self) -> Vec<String> {
        std::mem::take(&mut self.between().recalled)
    }

    /// Set for a subagent's session.
    pub(super) fn lineage(&self) -> Option<&Lineage> {
        self.lineage.as_ref()
    }

    /// Keeps a background child's report to wake the session with.
    pub(super) fn queue_wake(&self, text: String) {
        self.between().wakes.push(text);
    }

    /// The reports waiting to wake the session, taken, joined into one prompt.
    pub(super) fn take_wakes(&self) -> Option<String> {
        let wakes = std::mem::take(&mut self.between().wakes);
        (!wakes.is_empty()).then(|| wakes.join("\n\n"))
    }

    /// A child of the session started running.
    pub(super) fn child_started(&self, child: RunningChild) {
        let mut between = self.between();
        between.children.retain(|c| c.id != child.id);
        between.children.push(child);
    }

    /// A child of the session stopped running.
    pub(super) fn child_ended(&self, child: &SessionId) {
        self.between().children.retain(|c| c.id != *child);
    }

    /// A memory subagent is about to start: what tells it to stop (`true` once the turn it
    /// remembers for is cancelled). Taken before its session is made, so a cancel that comes
    /// first still reaches it.
    pub(super) fn memory_stop(&self) -> watch::Receiver<bool> {
        let (stop, stopped) = watch::channel(false);
        let mut between = self.between();
        // A subagent that finished let its receiver go.
        between.memory.retain(|stop| !stop.is_closed());
        between.memory.push(stop);
        stopped
    }

    /// Tells every running memory subagent to stop.
    pub(super) fn stop_memory(&self) {
        let stops = std::mem::take(&mut self.between().memory);
        for stop in stops {
            // A subagent that already finished let its receiver go: nothing to tell.
            let _ = stop.send(true);
        }
    }

    /// The children running now.
    pub(super) fn running_children(&self) -> Vec<RunningChild> {
        self.between().children.clone()
    }

    /// The current (or last) turn's log.
    pub(super) fn turn_log(&self) -> Option<Arc<TurnLog>> {
        self.between().turn.clone()
    }

    pub(super) fn set_turn_log(&self, log: Arc<TurnLog>) {
        self.between().turn = Some(log);
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

    /// Cancels the running turn, lapses the open cards, stops the session's background
    /// commands and lets its grant set and grant view go, now, even while the ending turn
    /// still holds the value for a moment. Once: later calls (and the drop) do nothing.
    pub fn close(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        self.cancel.send_modify(|n| *n += 1);
        self.cards.close(&self.ledger, CardAnswer::SessionEnded);
        let held = std::mem::replace(
            &mut *self.held.lock().unwrap_or_else(PoisonError::into_inner),
            Held {
                grants: None,
                pool: None,
            },
        );
        // The pool's commands are killed as its lease drops.
        drop(held);
        self.dispatcher.forget();
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
