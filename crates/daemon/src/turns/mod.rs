//! Running turns: one live runtime per session (its conversation, its model, its open cards),
//! the host the agent's turn loop calls back into, and cancellation.

mod cards;
mod host;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use codaris_agent::{
    Conversation, ModelProvider, ProviderConfig, ProviderKind, Registry, RegistryTool,
    ScriptedProvider, Secret, TurnConfig, build_provider, parse_script, run_turn,
};
use codaris_ledger::{CardAnswer, Ledger};
use codaris_policy::Task;
use codaris_proto::v1;
use tokio::sync::{mpsc, watch};

pub use cards::{Cards, Delivery, NotRecorded};
use host::DaemonHost;

use crate::builtins::{Builtins, Pictures};
use crate::config::{ApiConfig, Config};
use crate::dispatch::Dispatcher;
use crate::error::DaemonError;
use crate::registry::ToolRegistry;
use crate::sessions::{SessionRecord, SessionState, SessionStore};

/// The tools the turn loop itself answers; the built-in tools join them in the registry.
pub const LOOP_TOOLS: &[&str] = &["search_tools", "request_capability"];

/// How long `AnswerCard` waits for the turn to make an answer durable before it says so.
pub const RECORD_WAIT: Duration = Duration::from_secs(30);

/// What an answer to a card did, once durable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answered {
    /// False when the card was not open to the answer (answered, lapsed, turn gone).
    pub accepted: bool,
    /// The grants recorded, in order (a deny answer records a deny grant).
    pub grant_ids: Vec<String>,
}

/// The rounds a turn may take before it ends with `max_rounds`.
const MAX_ROUNDS: u32 = 24;

const SYSTEM_PROMPT: &str = "You are Codaris, an agent for building and running bioinformatics pipelines and code. \
Use the tools you are given. When no bound tool fits, call search_tools with what you need in plain words; never guess a tool name. \
A refused call comes back with the reason and, when a grant would help, the capability to ask for with request_capability.";

/// A session's live state while the daemon runs.
pub struct Live {
    /// Notices (background commands that finished) waiting for the session's next turn.
    notes: Mutex<Vec<String>>,
    /// Where the session moved during a turn (`worktree_create`); calls after the move are
    /// decided and run there. Later turns read it from the session's record.
    cwd: Mutex<Option<String>>,
    /// Held by the running turn, so a session runs one turn at a time.
    conversation: Arc<tokio::sync::Mutex<Conversation>>,
    provider: Box<dyn ModelProvider>,
    /// Whether the session's model is shown the pictures tools return.
    pictures: Pictures,
    cards: Cards,
    cancel: watch::Sender<u64>,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("provider", &self.provider.name())
            .finish_non_exhaustive()
    }
}

impl Live {
    /// Where the session moved during a turn, if it did.
    pub fn moved_cwd(&self) -> Option<String> {
        self.cwd
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub fn move_cwd(&self, cwd: String) {
        *self.cwd.lock().unwrap_or_else(PoisonError::into_inner) = Some(cwd);
    }
}

/// Everything turns need, shared by the gRPC handlers.
#[derive(Debug)]
pub struct Turns {
    pub config: Arc<Config>,
    pub ledger: Arc<Ledger>,
    pub sessions: SessionStore,
    pub tools: Arc<ToolRegistry>,
    pub builtins: Builtins,
    pub card_timeout: Duration,
    live: Mutex<HashMap<String, Arc<Live>>>,
}

impl Turns {
    pub fn new(
        config: Arc<Config>,
        ledger: Arc<Ledger>,
        sessions: SessionStore,
        tools: Arc<ToolRegistry>,
        builtins: Builtins,
    ) -> Self {
        Self {
            card_timeout: config.card_timeout,
            config,
            ledger,
            sessions,
            tools,
            builtins,
            live: Mutex::new(HashMap::new()),
        }
    }

    /// Starts a turn and returns the stream of its events. The turn runs on its own task: a
    /// client that disconnects does not stop it (`CancelTurn` does).
    pub fn start(
        self: &Arc<Self>,
        session_id: &str,
        text: String,
    ) -> Result<mpsc::UnboundedReceiver<v1::TurnEvent>, DaemonError> {
        let record = self.sessions.get(session_id)?;
        if record.state == SessionState::Ended {
            return Err(DaemonError::SessionEnded {
                id: session_id.to_owned(),
            });
        }
        let live = self.live(&record)?;
        let Ok(conversation) = live.conversation.clone().try_lock_owned() else {
            return Err(DaemonError::TurnRunning {
                id: session_id.to_owned(),
            });
        };
        let (events, receiver) = mpsc::unbounded_channel();
        let turns = self.clone();
        let task = self.task(&record);
        let mut cancelled = live.cancel.subscribe();
        cancelled.mark_unchanged();
        tokio::spawn(async move {
            let mut conversation = conversation;
            conversation.notes.extend(
                live.notes
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .drain(..),
            );
            let host = DaemonHost::new(turns.clone(), live.clone(), record.id.clone(), events);
            // Only what runs here is bound: the loop's own tools and the built-ins.
            let registry = Registry::new(
                LOOP_TOOLS
                    .iter()
                    .copied()
                    .chain(turns.builtins.names())
                    .map(RegistryTool::builtin),
                &[],
            );
            let config = TurnConfig {
                system: SYSTEM_PROMPT.to_owned(),
                max_rounds: MAX_ROUNDS,
                lean: turns.config.lean_surface,
                // Deferred tools and tool references exist on the Anthropic route only.
                tool_search_api: turns.config.tool_search_api
                    && live.provider.name() == "anthropic",
            };
            let turn = conversation.turns;
            tokio::select! {
                reason = run_turn(&mut conversation, &text, &task, &registry, live.provider.as_ref(), &host, &config) => {
                    tracing::info!(session = %record.id, turn, reason = %reason, "turn ended");
                }
                _ = cancelled.changed() => {
                    live.cards.close(&turns.ledger, CardAnswer::SessionEnded);
                    host.cancelled(turn);
                    tracing::info!(session = %record.id, turn, "turn cancelled");
                }
            }
            if let Err(err) = turns.sessions.count_turn(&record.id) {
                tracing::warn!(%err, "could not count the turn");
            }
        });
        Ok(receiver)
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
            Some(live) => live
                .notes
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(note),
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
    ) -> Result<Answered, DaemonError> {
        let delivery = match self.live_of(session_id) {
            Some(live) => live.cards.answer(card_id, secret, answer),
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

    /// Cancels the session's running turn; `false` when none runs.
    pub fn cancel(&self, session_id: &str) -> bool {
        match self.live_of(session_id) {
            Some(live) if live.conversation.try_lock().is_err() => {
                live.cancel.send_modify(|n| *n += 1);
                true
            }
            _ => false,
        }
    }

    /// Ends the session's live state: open cards grant nothing, a running turn is cancelled.
    pub fn end(&self, session_id: &str) {
        self.cancel(session_id);
        self.builtins.close_session(session_id);
        if let Some(live) = self
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(session_id)
        {
            live.cards.close(&self.ledger, CardAnswer::SessionEnded);
        }
    }

    fn live_of(&self, session_id: &str) -> Option<Arc<Live>> {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(session_id)
            .cloned()
    }

    fn live(&self, record: &SessionRecord) -> Result<Arc<Live>, DaemonError> {
        if let Some(live) = self.live_of(&record.id) {
            return Ok(live);
        }
        let live = Arc::new(Live {
            notes: Mutex::new(Vec::new()),
            cwd: Mutex::new(None),
            conversation: Arc::new(tokio::sync::Mutex::new(Conversation::default())),
            provider: provider_for(record, &self.config)?,
            pictures: pictures_for(record, &self.config),
            cards: Cards::default(),
            cancel: watch::channel(0).0,
        });
        let mut map = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(map.entry(record.id.clone()).or_insert(live).clone())
    }

    /// The task state every call of this session is decided in.
    fn task(&self, record: &SessionRecord) -> Task {
        let display = |p: &PathBuf| p.display().to_string();
        let protected = vec![display(&self.config.state_dir.join("ledger"))];
        // The token opens the API to whoever holds it, and the file can hold provider keys.
        let layout = codaris_paths::StateLayout::new(&self.config.state_dir);
        let mut secret = vec![display(&layout.token())];
        secret.extend(self.config.config_file.as_ref().map(display));
        Task {
            activity: record.activity,
            permission_mode: record.permission_mode,
            cwd: display(&record.cwd),
            allowed_roots: self.roots(record),
            workspace: Some(display(&record.workspace)),
            protected,
            secret,
            // Nothing in it but the session's own workspace is open to any tool.
            state_dir: Some(display(&self.config.state_dir)),
            ..Task::default()
        }
    }

    /// The fence follows the project: the session's own directory, unless that is `/` or the
    /// home directory (or above it), then the configured `allowed_dirs`. The workspace is a
    /// root of its own (`Task::workspace`).
    fn roots(&self, record: &SessionRecord) -> Vec<String> {
        // Judged where the paths really lead: a link to the home directory opens it too.
        let real =
            |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let home = self.config.home.as_deref().map(real);
        let own = (!crate::config::opens_home(&real(&record.cwd), home.as_deref()))
            .then_some(&record.cwd);
        own.into_iter()
            .chain(&self.config.allowed_dirs)
            .map(|p| p.display().to_string())
            .collect()
    }

    fn dispatcher(&self) -> Dispatcher {
        Dispatcher::new(self.ledger.clone())
            .with_http_allowlist(&self.config.http_allowlist)
            .with_command_allowlist(&self.config.command_allowlist)
    }
}

/// Whether the session's model takes pictures: the scripted provider does (it ignores them),
/// an API model as its `[[models]]` entry says or as its name suggests.
fn pictures_for(record: &SessionRecord, config: &Config) -> Pictures {
    let model = record.model.as_deref().unwrap_or_default();
    if record.provider == codaris_agent::ProviderChoice::Scripted || config.multimodal(model) {
        Pictures::Shown
    } else {
        Pictures::Refused {
            model: model.to_owned(),
        }
    }
}

/// An HTTP model API for the session: its model, and the key and base URL from the configuration
/// (which the environment overrides). The key is never logged.
fn api_provider(
    record: &SessionRecord,
    kind: ProviderKind,
    api: &ApiConfig,
) -> Result<Box<dyn ModelProvider>, DaemonError> {
    let Some(model) = record.model.clone() else {
        return Err(DaemonError::InvalidArgument {
            field: "model",
            reason: format!(
                "provider `{}` needs a model: set CODARIS_MODEL, `[provider] model` or --model",
                kind.as_str()
            ),
        });
    };
    let mut provider = ProviderConfig::new(kind, model, api.api_key.clone().map(Secret::new));
    if let Some(base_url) = &api.base_url {
        provider = provider.with_base_url(base_url.clone());
    }
    build_provider(&provider).map_err(|err| DaemonError::InvalidArgument {
        field: "provider",
        reason: err.to_string(),
    })
}

fn provider_for(
    record: &SessionRecord,
    config: &Config,
) -> Result<Box<dyn ModelProvider>, DaemonError> {
    match record.provider {
        codaris_agent::ProviderChoice::Scripted => {
            let Some(path) = &record.script else {
                return Err(DaemonError::InvalidArgument {
                    field: "script",
                    reason:
                        "the scripted provider needs a script file (`codaris run --script FILE`)"
                            .to_owned(),
                });
            };
            // The person named this file: say which and why, not an internal error.
            let text =
                std::fs::read_to_string(path).map_err(|err| DaemonError::InvalidArgument {
                    field: "script",
                    reason: format!(
                        "cannot read {}: {}",
                        path.display(),
                        crate::error::io_reason(&err)
                    ),
                })?;
            let script = parse_script(&text).map_err(|err| DaemonError::InvalidArgument {
                field: "script",
                reason: format!("{}: {err}", path.display()),
            })?;
            Ok(Box::new(ScriptedProvider::new(script)))
        }
        codaris_agent::ProviderChoice::Api(kind) => api_provider(record, kind, config.api(kind)),
    }
}
