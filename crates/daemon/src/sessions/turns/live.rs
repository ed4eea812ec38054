//! Running turns: one live [`Session`] per session (its conversation, model, open cards, pool,
//! notes and cancellation), the host the agent's turn loop calls back into, each turn's event
//! log that clients follow and re-attach to, and cancellation.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use codaris_agent::{Conversation, ProviderChoice, ProviderKind, TurnConfig, run_turn};
use codaris_ledger::{CardAnswer, Ledger};
use codaris_policy::Task;
use codaris_proto::v1;
use tokio::sync::mpsc;
use tracing::Instrument;

use super::cards::Delivery;
use super::host::DaemonHost;
use super::log::TurnLog;
use super::model::model_for;
use super::services::Services;
use super::session::Session;

use crate::calls::builtins::Builtins;
use crate::calls::dispatch::{Dispatcher, Lineage};
use crate::config::Config;
use crate::error::DaemonError;
use crate::sessions::ids::{GrantId, SessionId};
use crate::sessions::store::{SessionRecord, SessionState, SessionStore};
use crate::toolset::registry::ToolRegistry;

/// How long `AnswerCard` waits for the turn to make an answer durable before it says so.
pub const RECORD_WAIT: Duration = Duration::from_secs(30);

/// What an answer to a card did, once durable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answered {
    /// False when the card was not open to the answer (answered, lapsed, turn gone).
    pub accepted: bool,
    /// The grants recorded, in order (a deny answer records a deny grant).
    pub grant_ids: Vec<GrantId>,
}

/// The rounds a turn may take before it ends with `max_rounds`.
const MAX_ROUNDS: u32 = 24;

/// How long a new turn waits for the session's last turn to finish keeping its conversation.
pub(super) const ENDING_TURN_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

const SYSTEM_PROMPT: &str = "You are Codaris, an agent for building and running bioinformatics pipelines and code. \
Use the tools you are given. When no bound tool fits, call search_tools with what you need in plain words; never guess a tool name. \
A refused call comes back with the reason and, when a grant would help, the capability to ask for with request_capability. \
Change the model or the reasoning level (switch_model) only when the person asks for it.";

/// Where a turn's text came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TurnFrom {
    /// The person's message (or a scheduled job's, or a parent's task for a subagent).
    Person,
    /// A background child's report that woke the session.
    Wake,
}

/// The live sessions and their turns, shared by the gRPC handlers; [`Services`] (reached
/// through `Deref`) is what the turns use.
#[derive(Debug)]
pub struct Turns {
    /// What every turn uses; a turn's host holds only this.
    services: Arc<Services>,
    /// The live sessions, one owner each.
    live: Mutex<HashMap<SessionId, Arc<Session>>>,
    /// What every session's own dispatcher is made from ([`Dispatcher::for_session`]).
    dispatcher: Dispatcher,
    /// Per session, held by a turn from its start until its checkpoint is sealed, which is
    /// after the client saw `turn_ended` and perhaps ended the session: an undo waits on it.
    sealing: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl std::ops::Deref for Turns {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.services
    }
}

impl Turns {
    pub fn new(
        config: codaris_tools::Live<Config>,
        ledger: Arc<Ledger>,
        sessions: SessionStore,
        tools: Arc<ToolRegistry>,
        builtins: Builtins,
        mcp: Arc<crate::mcp::McpHub>,
        providers: Arc<crate::sessions::providers::LiveProviders>,
    ) -> Arc<Self> {
        let now = config.get();
        let dispatcher = Dispatcher::new(ledger.clone());
        dispatcher.reconfigure(crate::calls::dispatch::Operator::of(&now));
        let turns = Arc::new(Self {
            services: Arc::new(Services {
                card_timeout: now.card_timeout,
                config,
                ledger,
                sessions,
                tools,
                builtins,
                mcp,
                providers,
                family: std::sync::OnceLock::new(),
            }),
            live: Mutex::new(HashMap::new()),
            dispatcher,
            sealing: Mutex::new(HashMap::new()),
        });
        // Weak: the services live as long as the sessions, which own nothing of them.
        let _ = turns
            .services
            .family
            .set(Box::new(LiveFamily(Arc::downgrade(&turns))));
        turns
    }

    /// The dispatcher every session's own is made from: they share its operator part, which a
    /// committed configuration replaces.
    pub fn dispatcher(&self) -> &Dispatcher {
        &self.dispatcher
    }

    /// The services every turn uses (the scheduler starts its runs through them).
    pub fn services(&self) -> Arc<Services> {
        self.services.clone()
    }

    /// Starts a turn and returns the stream of its events. The turn runs on its own task; when
    /// every stream following it went away, it is cancelled after `detach_grace` unless a
    /// client attaches again (`attach`).
    pub async fn start(
        self: &Arc<Self>,
        session_id: &str,
        text: String,
    ) -> Result<mpsc::Receiver<v1::TurnEvent>, DaemonError> {
        self.start_from(session_id, text, TurnFrom::Person).await
    }

    /// Starts a turn whose text came `from` the person or a report that woke the session.
    async fn start_from(
        self: &Arc<Self>,
        session_id: &str,
        text: String,
        from: TurnFrom,
    ) -> Result<mpsc::Receiver<v1::TurnEvent>, DaemonError> {
        let record = self.sessions.get(session_id)?;
        if record.state == SessionState::Ended {
            return Err(DaemonError::SessionEnded {
                id: session_id.to_owned(),
            });
        }
        let session = self.session(&record)?;
        // The last turn lets its conversation go just before its `turn_ended` is sent, but a
        // client that did not follow that turn (another window, a script polling) may arrive
        // while it is sealing and keeping. So wait a moment for it; a turn that really still
        // runs is refused after that moment.
        let conversation = session.conversation.clone();
        let Ok(mut conversation) =
            tokio::time::timeout(ENDING_TURN_GRACE, conversation.lock_owned()).await
        else {
            return Err(DaemonError::TurnRunning {
                id: session_id.to_owned(),
            });
        };
        // The first prompt names the session in `codaris sessions`; a failure to keep the
        // name costs only the listing, not the turn.
        if let Err(err) = self.sessions.name_after(&record.id, &text) {
            tracing::warn!(session = %record.id, %err, "could not keep the session's title");
        }
        let model = session.model();
        let log = TurnLog::new(conversation.turns);
        session.set_turn_log(log.clone());
        let events = log.follow(0, self.on_last_detach(&session, &log));
        let turns = self.clone();
        let task = self.task(&record);
        let mut cancelled = session.cancellation();
        // One span for the turn: its model requests and tool calls are its children.
        let span = tracing::info_span!(
            "turn",
            session.id = %record.id,
            turn = conversation.turns,
            provider = model.provider.name(),
            model = model.provider.model(),
        );
        // Taken before any event reaches the client, so an undo that follows always waits.
        let sealing = self.sealing_of(&record.id).lock_owned().await;
        let checkpoint = codaris_tools::files::Checkpoint::new(
            super::checkpoints::turn_store(
                &self.config.get().state_dir,
                &record.id,
                conversation.turns,
            ),
            record.id.clone(),
            conversation.turns,
        );
        let is_memory = record.child.as_ref().is_some_and(|c| c.memory.is_some());
        // A person's message to their session (never a subagent's turn, nor a turn a report
        // woke: there is no message of the person's to recall for) starts its memory subagent
        // once the turn's own task is on its way: nothing here waits for it.
        let memory_turn = (self.config.get().memory.enabled
            && record.child.is_none()
            && from == TurnFrom::Person)
            .then(|| {
                (
                    session.clone(),
                    record.clone(),
                    conversation.turns,
                    text.clone(),
                )
            });
        tokio::spawn(async move {
            conversation.notes.extend(session.take_notes());
            let host = DaemonHost::new(turns.services.clone(), session.clone(), log, checkpoint.clone());
            let config = TurnConfig {
                // Read at each turn: an edit of AGENTS.md counts from the next turn.
                system: subagent_prompt(
                    crate::sessions::instructions::system_prompt(SYSTEM_PROMPT, &record.cwd),
                    record.child.as_ref(),
                ),
                max_rounds: MAX_ROUNDS,
                // A memory subagent is offered its tools from the start: it has no
                // `search_tools` to find them with (the policy leaves it only them).
                lean: turns.config.get().lean_surface && !is_memory,
                // Deferred tools and tool references exist on the Anthropic route only.
                tool_search_api: turns.config.get().tool_search_api
                    && record.provider == ProviderChoice::Api(ProviderKind::Anthropic),
                context: Some(model.context),
            };
            let turn = conversation.turns;
            tokio::select! {
                // Cancellation first: closing a session also lapses its cards, which would let
                // the turn run on to an ordinary end in the same poll.
                biased;
                _ = cancelled.changed() => {
                    session.cards.close(&turns.ledger, CardAnswer::SessionEnded);
                    // A cancelled turn's recall has nobody to go to, and what the person stopped
                    // should not go on spending for them. Only here: a session ended after its
                    // turn ended lets its memory subagent finish (`codaris run` ends at once).
                    session.stop_memory();
                    turns.cancel_children(&session);
                    host.cancelled(turn);
                    tracing::info!(session = %record.id, turn, "turn cancelled");
                }
                reason = run_turn(&mut conversation, &text, &task, model.provider.as_ref(), &host, &config) => {
                    tracing::info!(session = %record.id, turn, reason = %reason, "turn ended");
                }
            }
            // Before the conversation is let go: the next turn, and an undo, wait for it.
            super::checkpoints::seal(&record.id, turn, checkpoint).await;
            drop(sealing);
            turns.unseal(&record.id);
            turns.keep(&record.id, &conversation);
            drop(conversation);
            // Only now does the client read `turn_ended`: what it does next sees the turn whole.
            host.release_end();
            // A background child's report that came while the turn ran wakes the session now.
            if let Some(text) = session.take_wakes()
                && let Some(family) = turns.services.family.get()
            {
                family.wake(&record.id, text);
            }
        }.instrument(span));
        if let Some((session, record, turn, text)) = memory_turn {
            super::memory::start(&self.services, &session, &record, turn, &text);
        }
        Ok(events)
    }

    /// Follows the session's running (or last) turn from `from_seq`.
    pub fn attach(
        self: &Arc<Self>,
        session_id: &str,
        from_seq: u64,
    ) -> Result<mpsc::Receiver<v1::TurnEvent>, DaemonError> {
        let record = self.sessions.get(session_id)?;
        let Some((session, log)) = self
            .live_of(&record.id)
            .and_then(|s| s.turn_log().map(|log| (s, log)))
        else {
            return Err(DaemonError::NoTurn {
                id: record.id.clone(),
            });
        };
        Ok(log.follow(from_seq, self.on_last_detach(&session, &log)))
    }

    /// What happens when the last stream following a running turn goes away: after the grace,
    /// with still nobody attached, the turn is cancelled (its commands die with it).
    fn on_last_detach(
        &self,
        session: &Arc<Session>,
        log: &Arc<TurnLog>,
    ) -> impl FnOnce() + Send + 'static {
        let session = Arc::downgrade(session);
        let log = log.clone();
        let grace = self.config.get().detach_grace;
        move || {
            tokio::spawn(async move {
                tokio::time::sleep(grace).await;
                if log.attached() == 0
                    && !log.finished()
                    && let Some(session) = session.upgrade()
                {
                    tracing::info!(session = %session.id(), turn = log.turn(), grace_seconds = grace.as_secs(), "no client follows the turn; cancelling it");
                    session.cancel();
                }
            });
        }
    }

    /// Keeps what a finished turn leaves: the conversation (so a restored session continues
    /// it) and the turn count.
    fn keep(&self, session_id: &str, conversation: &Conversation) {
        match serde_json::to_value(conversation) {
            Ok(value) => {
                if let Err(err) = self.sessions.save_conversation(session_id, &value) {
                    tracing::warn!(session = %session_id, %err, "could not keep the conversation");
                }
            }
            Err(err) => {
                tracing::warn!(session = %session_id, %err, "could not encode the conversation")
            }
        }
        if let Err(err) = self.sessions.count_turn(session_id) {
            tracing::warn!(session = %session_id, %err, "could not count the turn");
        }
    }

    /// Keeps a finished background command's notice for the session's next turn.
    pub fn deliver(&self, notice: &codaris_tools::shell::TaskNotice) {
        let note = format!(
            "[background task `{}` (`{}`) finished after {} s: {}]",
            notice.task_id,
            notice.command,
            notice.elapsed.as_secs(),
            notice.status
        );
        match self.live_of(&notice.session_id) {
            Some(session) => session.note(note),
            None => tracing::info!(session = %notice.session_id, "{note}"),
        }
    }

    /// Answers an open card of `session_id` and waits, at most [`RECORD_WAIT`], until the turn
    /// has made the answer durable. Another session's card is not open to it; a card whose
    /// turn went away before recording the answer was not answered.
    pub async fn answer(
        &self,
        session_id: &str,
        card_id: &str,
        secret: &str,
        answer: CardAnswer,
        by: Option<String>,
    ) -> Result<Answered, DaemonError> {
        let delivery = match self.live_of(session_id) {
            Some(session) => session.cards.answer_by(card_id, secret, answer, by),
            None => Delivery::NotOpen,
        };
        let recorded = match delivery {
            Delivery::Delivered(recorded) => recorded,
            Delivery::NotOpen => return Ok(Answered::default()),
            Delivery::WrongSecret => {
                tracing::warn!(session = %session_id, card = %card_id, "refused an answer without the card's secret; the card stays open");
                return Err(DaemonError::WrongCardSecret {
                    card: card_id.to_owned(),
                });
            }
            Delivery::NoPrograms => {
                return Err(DaemonError::NoPrograms {
                    card: card_id.to_owned(),
                });
            }
        };
        match tokio::time::timeout(RECORD_WAIT, recorded).await {
            Ok(Ok(Ok(grant_ids))) => Ok(Answered {
                accepted: true,
                grant_ids,
            }),
            Ok(Ok(Err(crate::error::NotRecorded::Ledger(
                codaris_ledger::LedgerError::Unapplied { .. },
            )))) => Err(DaemonError::AnswerNotYetApplied {
                card: card_id.to_owned(),
            }),
            Ok(Ok(Err(source))) => Err(DaemonError::AnswerNotRecorded {
                card: card_id.to_owned(),
                source,
            }),
            Ok(Err(_)) => Ok(Answered::default()),
            Err(_) => Err(DaemonError::AnswerNotYetDurable {
                card: card_id.to_owned(),
                seconds: RECORD_WAIT.as_secs(),
            }),
        }
    }

    /// Answers an open `question` of `session_id`; `false` when it is not open (answered,
    /// timed out, its turn gone, another session's).
    pub fn answer_question(
        &self,
        session_id: &str,
        question_id: &str,
        secret: &str,
        given: Vec<(Vec<String>, String)>,
    ) -> Result<bool, DaemonError> {
        let delivery = match self.live_of(session_id) {
            Some(session) => session.questions.answer(question_id, secret, given),
            None => super::questions::Delivery::NotOpen,
        };
        match delivery {
            super::questions::Delivery::Delivered => Ok(true),
            super::questions::Delivery::NotOpen => Ok(false),
            super::questions::Delivery::WrongSecret => {
                tracing::warn!(session = %session_id, question = %question_id, "refused an answer without the question's secret; the question stays open");
                Err(DaemonError::WrongQuestionSecret {
                    question: question_id.to_owned(),
                })
            }
            super::questions::Delivery::Unfit(source) => Err(DaemonError::UnfitAnswer {
                question: question_id.to_owned(),
                source,
            }),
        }
    }

    /// Cancels the session's running turn and its running children (a background child
    /// too, whether or not the session's own turn runs); `false` when nothing ran.
    pub fn cancel(&self, session_id: &str) -> bool {
        let Some(session) = self.live_of(session_id) else {
            return false;
        };
        let children = self.cancel_children(&session);
        session.cancel() || children
    }

    /// Cancels every running child of `session`, and theirs; `true` when one ran.
    fn cancel_children(&self, session: &Session) -> bool {
        let mut any = false;
        for child in session.running_children() {
            tracing::info!(parent = %session.id(), child = %child.id, "cancelling a subagent with its parent");
            any |= self.cancel(child.id.as_str());
        }
        any
    }

    /// Starts a turn of `session_id` with `text` (a background child's report), followed by
    /// nobody: it runs to its end as any turn does, and a client may attach to it. A session
    /// whose turn runs now is woken once that turn ends.
    async fn wake_now(self: &Arc<Self>, session_id: &str, text: String) {
        if let Some(session) = self.live_of(session_id)
            && session.running()
        {
            session.queue_wake(text);
            return;
        }
        match self
            .start_from(session_id, text.clone(), TurnFrom::Wake)
            .await
        {
            Ok(mut events) => {
                // Held to its end, so the turn is not taken for abandoned (`detach_grace`).
                tokio::spawn(async move { while events.recv().await.is_some() {} });
            }
            Err(crate::error::DaemonError::TurnRunning { .. }) => {
                if let Some(session) = self.live_of(session_id) {
                    session.queue_wake(text);
                }
            }
            Err(err) => {
                tracing::warn!(session = %session_id, %err, "could not wake the session with a subagent's report; it waits for the next turn");
                if let Some(session) = self.live_of(session_id) {
                    session.note(text);
                }
            }
        }
    }

    /// Ends the session's live state: its value leaves the map and goes — the running turn is
    /// cancelled, open cards grant nothing, its background commands stop, its grant set and
    /// grant view are let go (closed now: the ending turn may hold the value a moment longer).
    pub fn end(&self, session_id: &str) {
        let removed = self
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(session_id);
        if let Some(session) = removed {
            self.cancel_children(&session);
            session.close();
        }
    }

    /// Lets go of a session's live value when no turn of it runs (a finished subagent): its
    /// record and kept conversation stay, and its next turn makes the value again.
    fn release(&self, session_id: &str) {
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        if live.get(session_id).is_some_and(|s| !s.running()) {
            let released = live.remove(session_id);
            drop(live);
            if let Some(session) = released {
                session.close();
            }
        }
    }

    /// How many sessions have a live value (made at their first turn since the daemon started).
    pub fn live_sessions(&self) -> usize {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Closes every live session (the daemon is stopping): running turns end `cancelled`, open
    /// cards lapse, background commands stop. The sessions stay active in their records.
    pub fn close_all(&self) {
        let live: Vec<Arc<Session>> = self
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, session)| session)
            .collect();
        if !live.is_empty() {
            tracing::info!(sessions = live.len(), "closing the live sessions");
        }
        for session in live {
            session.close();
        }
    }

    /// The lock a session's turn holds until its checkpoint is sealed.
    pub(super) fn sealing_of(&self, session_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        self.sealing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(session_id.to_owned())
            .or_default()
            .clone()
    }

    /// A turn sealed its checkpoint: its lock goes unless someone waits on it (an undo), so
    /// the map holds only the sessions being sealed, not every session that ever ran a turn.
    fn unseal(&self, session_id: &str) {
        let mut sealing = self.sealing.lock().unwrap_or_else(PoisonError::into_inner);
        if sealing
            .get(session_id)
            .is_some_and(|lock| Arc::strong_count(lock) == 1)
        {
            sealing.remove(session_id);
        }
    }

    pub(super) fn live_of(&self, session_id: &str) -> Option<Arc<Session>> {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(session_id)
            .cloned()
    }

    /// The session's live state, made from its record (and its kept conversation) the first
    /// time it is used since the daemon started.
    fn session(&self, record: &SessionRecord) -> Result<Arc<Session>, DaemonError> {
        // Made under the lock: a second one would close the first one's pool when dropped.
        let mut map = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(session) = map.get(record.id.as_str()) {
            return Ok(session.clone());
        }
        let mut conversation = match self.sessions.load_conversation(&record.id)? {
            Some(value) => serde_json::from_value::<Conversation>(value).map_err(|err| {
                DaemonError::CorruptRecord {
                    detail: format!("the kept conversation of session {}: {err}", record.id),
                    count: 1,
                }
            })?,
            None => Conversation::default(),
        };
        // The record counts every turn, one that was cancelled before it was kept too.
        conversation.turns = conversation.turns.max(record.turns);
        let id = SessionId::new(&record.id);
        let session = Arc::new(Session::new(
            id.clone(),
            conversation,
            model_for(record, &self.providers.current(), &self.config.get())?,
            super::session::Parts {
                ledger: self.ledger.clone(),
                dispatcher: self.dispatcher.for_session(),
                pool: self.builtins.pools().map(|pools| pools.lease(id.as_str())),
                lineage: record.child.as_ref().map(|child| Lineage {
                    parent: child.parent.clone(),
                    root: child.root.clone(),
                }),
            },
        ));
        map.insert(id, session.clone());
        Ok(session)
    }

    /// The task state every call of this session is decided in.
    fn task(&self, record: &SessionRecord) -> Task {
        // One configuration for the whole task, whatever a commit puts in force meanwhile.
        let config = self.config.get();
        let display = |p: &PathBuf| p.display().to_string();
        let protected = vec![display(&config.state_dir.join("ledger"))];
        // The token opens the API to whoever holds it, and the file can hold provider keys.
        let layout = codaris_paths::StateLayout::new(&config.state_dir);
        let mut secret = vec![
            display(&layout.token()),
            display(&self.providers.file().to_path_buf()),
        ];
        secret.extend(config.config_file.as_ref().map(display));
        // The chain's key and published head: a tool that could rewrite them could hide a cut.
        secret.extend(
            crate::server::chain_head::files(&config)
                .iter()
                .map(display),
        );
        Task {
            activity: record.activity,
            permission_mode: record.permission_mode,
            cwd: display(&record.cwd),
            allowed_roots: Self::roots_of(&config, record),
            // The roots' tail is the configuration's: what a candidate replays replace.
            configured_roots: Some(config.allowed_dirs.len()),
            workspace: Some(display(&record.workspace)),
            protected,
            secret,
            // Nothing in it but the session's own workspace is open to any tool.
            state_dir: Some(display(&config.state_dir)),
            push_registries: config.seqera.registries.clone(),
            compute_envs: config.seqera.compute_envs.clone(),
            // A child session (one `spawn_agent` started): the policy withholds what a
            // subagent is never offered (`question`, `switch_model`, `plan_exit`, the
            // configuration tools) and what its definition removes, at the surface and at
            // dispatch.
            subagent: record.child.is_some(),
            narrowed: record.child.as_ref().and_then(|c| c.narrowed.clone()),
            at_max_depth: record.child.as_ref().map_or(0, |c| c.depth)
                >= config.subagents_max_depth,
            // A memory subagent: the memory tools and nothing else (`task.memory`).
            memory: record.child.as_ref().and_then(|c| c.memory),
            ..Task::default()
        }
    }

    /// The fence follows the project: the session's own directory, unless that is `/` or the
    /// home directory (or above it), then its own additional roots (an editor's), then the
    /// configured `allowed_dirs`. The workspace is a root of its own (`Task::workspace`).
    fn roots_of(config: &Config, record: &SessionRecord) -> Vec<String> {
        // Judged where the paths really lead: a link to the home directory opens it too.
        let real =
            |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let home = config.home.as_deref().map(real);
        let own = (!crate::config::opens_home(&real(&record.cwd), home.as_deref()))
            .then_some(&record.cwd);
        fence_roots(
            own,
            crate::sessions::extra_roots::in_force(&record.additional_dirs),
            &config.allowed_dirs,
        )
    }
}

/// A task's roots in their order: the session's own directory, its own additional roots, and
/// last the configuration's `allowed_dirs`, which `configured_roots` counts from the end (a
/// candidate replay swaps exactly that tail for its own).
fn fence_roots<'a>(
    own: Option<&'a std::path::PathBuf>,
    additional: impl Iterator<Item = &'a std::path::PathBuf>,
    configured: &'a [std::path::PathBuf],
) -> Vec<String> {
    own.into_iter()
        .chain(additional)
        .chain(configured)
        .map(|p| p.display().to_string())
        .collect()
}

/// A subagent's system prompt: the session's, then what its definition tells it.
fn subagent_prompt(system: String, child: Option<&crate::sessions::store::ChildOf>) -> String {
    let Some(child) = child else {
        return system;
    };
    let mut prompt = system;
    prompt.push_str(&format!(
        "\n\nYou are a subagent (`{}`) another agent started for one task; your last answer is the report it reads. You cannot ask the person questions.",
        child.agent
    ));
    if !child.instructions.is_empty() {
        prompt.push_str("\n\n");
        prompt.push_str(&child.instructions);
    }
    prompt
}

/// The live sessions as subagents use them, held weakly by the services they own.
struct LiveFamily(std::sync::Weak<Turns>);

impl super::family::Family for LiveFamily {
    fn start<'a>(
        &'a self,
        session_id: &'a str,
        text: String,
    ) -> super::family::FamilyFuture<'a, Result<mpsc::Receiver<v1::TurnEvent>, DaemonError>> {
        Box::pin(async move {
            let Some(turns) = self.0.upgrade() else {
                return Err(DaemonError::ShuttingDown);
            };
            turns.start(session_id, text).await
        })
    }

    fn live(&self, session_id: &str) -> Option<Arc<Session>> {
        self.0.upgrade()?.live_of(session_id)
    }

    fn cancel(&self, session_id: &str) -> bool {
        self.0
            .upgrade()
            .is_some_and(|turns| turns.cancel(session_id))
    }

    fn release(&self, session_id: &str) {
        if let Some(turns) = self.0.upgrade() {
            turns.release(session_id);
        }
    }

    fn wake(&self, session_id: &str, text: String) {
        let Some(turns) = self.0.upgrade() else {
            return;
        };
        let session_id = session_id.to_owned();
        tokio::spawn(async move { turns.wake_now(&session_id, text).await });
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    /// The configuration's roots are the tail `configured_roots` counts, whatever else the
    /// session has: an editor's additional root must never be what a candidate swaps out.
    #[test]
    fn the_configured_roots_are_the_tail_after_the_sessions_own() {
        let own = PathBuf::from("/w/proj");
        let extra = [PathBuf::from("/w/shared")];
        let configured = [PathBuf::from("/data"), PathBuf::from("/refs")];
        let roots = super::fence_roots(Some(&own), extra.iter(), &configured);
        assert_eq!(roots, ["/w/proj", "/w/shared", "/data", "/refs"]);
        let tail = &roots[roots.len() - configured.len()..];
        assert_eq!(tail, ["/data", "/refs"]);
    }
}
