//! The adapter's state for one editor connection: the daemon's channel, who the editor is,
//! the sessions this connection drives and which of them run a turn. It grants nothing: every
//! call the editor's sessions make is decided by the daemon's policy at dispatch.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, PoisonError};

use agent_client_protocol::{Error, ErrorCode};
use codaris_proto::v1;
use tokio::sync::OnceCell;
use tonic::transport::Channel;

use crate::client::{self, Target};

pub type Sessions = v1::sessions_client::SessionsClient<Channel>;

/// The longest prompt a turn takes, in bytes of text: a larger one is refused with a sentence
/// before it reaches the daemon (whose gRPC messages stop at 4 MiB).
pub const PROMPT_MAX_BYTES: usize = 1024 * 1024;

/// The longest client name kept for the ledger's `acp:<name>`.
const CLIENT_NAME_MAX: usize = 64;

/// What `codaris acp`'s flags ask of every session it opens.
#[derive(Debug, Clone, Default)]
pub struct Defaults {
    pub provider: String,
    pub model: String,
    pub base_url: String,
    /// The scripted model's script, absolute.
    pub script: String,
    pub activity: v1::Activity,
    pub permission_mode: v1::PermissionMode,
}

/// A session this connection drives.
#[derive(Debug, Clone)]
pub struct Live {
    pub cwd: PathBuf,
    /// A turn runs (a prompt is unanswered).
    pub running: bool,
    /// The editor sent `session/cancel` for the running turn.
    pub cancelled: bool,
}

#[derive(Debug)]
pub struct Adapter {
    target: Target,
    autostart: bool,
    pub defaults: Defaults,
    channel: OnceCell<Channel>,
    /// `acp:<clientInfo.name>`, as the ledger records who answered a card.
    answered_by: Mutex<String>,
    /// What the editor said it understands in `initialize`.
    traits: Mutex<ClientTraits>,
    live: Mutex<HashMap<String, Live>>,
}

/// The parts of the editor's capabilities that change what the adapter sends: the schema
/// forbids `compaction_update` to a client that did not ask for it, and a question is a form
/// only where the client takes forms.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientTraits {
    /// `session.compaction` was advertised.
    pub compaction: bool,
    /// `elicitation.form` was advertised.
    pub forms: bool,
}

impl Adapter {
    pub fn new(target: Target, autostart: bool, defaults: Defaults) -> Self {
        Self {
            target,
            autostart,
            defaults,
            channel: OnceCell::new(),
            answered_by: Mutex::new("acp:unknown".to_owned()),
            traits: Mutex::new(ClientTraits::default()),
            live: Mutex::new(HashMap::new()),
        }
    }

    /// Reaches the daemon (starting it as every command does) once; an error names the socket.
    pub async fn connect(&self) -> Result<(), Error> {
        self.channel
            .get_or_try_init(|| client::open(&self.target, self.autostart))
            .await
            .map(|_| ())
            .map_err(|err| Error::new(ErrorCode::INTERNAL_ERROR, err.to_string()))
    }

    /// The daemon's state directory, which no session may have as its project.
    pub fn state_dir(&self) -> &std::path::Path {
        self.target.layout.dir()
    }

    /// The Sessions service; an error before `initialize` connected.
    pub fn sessions(&self) -> Result<Sessions, Error> {
        self.channel
            .get()
            .cloned()
            .map(v1::sessions_client::SessionsClient::new)
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::INTERNAL_ERROR,
                    "codarisd is not connected; send `initialize` first",
                )
            })
    }

    /// Remembers the editor's name for the ledger, cut and cleaned: it is the client's word,
    /// shown on one line.
    pub fn set_client(&self, name: Option<&str>) {
        let name: String = name
            .unwrap_or("unknown")
            .chars()
            .filter(|c| !c.is_control())
            .take(CLIENT_NAME_MAX)
            .collect();
        let name = if name.trim().is_empty() {
            "unknown".to_owned()
        } else {
            name
        };
        *lock(&self.answered_by) = format!("acp:{name}");
    }

    pub fn set_traits(&self, traits: ClientTraits) {
        *lock(&self.traits) = traits;
    }

    pub fn traits(&self) -> ClientTraits {
        *lock(&self.traits)
    }

    pub fn answered_by(&self) -> String {
        lock(&self.answered_by).clone()
    }

    /// Starts driving `session`.
    pub fn attach(&self, session: &v1::Session) {
        lock(&self.live).insert(
            session.id.clone(),
            Live {
                cwd: PathBuf::from(&session.cwd),
                running: false,
                cancelled: false,
            },
        );
    }

    /// Stops driving a session (its running turn is the caller's to cancel).
    pub fn detach(&self, id: &str) -> Option<Live> {
        lock(&self.live).remove(id)
    }

    /// The session, when this connection drives it.
    pub fn live(&self, id: &str) -> Option<Live> {
        lock(&self.live).get(id).cloned()
    }

    /// Marks a turn started; refused when one already runs in the session or the session is
    /// not this connection's.
    pub fn start_turn(&self, id: &str) -> Result<PathBuf, Error> {
        let mut live = lock(&self.live);
        let Some(session) = live.get_mut(id) else {
            return Err(unknown_session(id));
        };
        if session.running {
            return Err(Error::new(
                ErrorCode::INVALID_REQUEST,
                format!("session `{id}` is running a turn; wait for its answer or cancel it"),
            ));
        }
        session.running = true;
        session.cancelled = false;
        Ok(session.cwd.clone())
    }

    /// Marks the turn over; whether the editor had cancelled it.
    pub fn end_turn(&self, id: &str) -> bool {
        let mut live = lock(&self.live);
        live.get_mut(id).is_some_and(|session| {
            session.running = false;
            std::mem::take(&mut session.cancelled)
        })
    }

    /// Notes that the editor cancelled the session's turn; whether one was running.
    pub fn cancel_turn(&self, id: &str) -> bool {
        let mut live = lock(&self.live);
        live.get_mut(id).is_some_and(|session| {
            session.cancelled = session.running;
            session.running
        })
    }

    pub fn is_cancelled(&self, id: &str) -> bool {
        lock(&self.live).get(id).is_some_and(|s| s.cancelled)
    }

    /// The sessions with a turn running.
    pub fn running(&self) -> Vec<String> {
        lock(&self.live)
            .iter()
            .filter(|(_, s)| s.running)
            .map(|(id, _)| id.clone())
            .collect()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A session id this connection does not drive.
pub fn unknown_session(id: &str) -> Error {
    Error::new(
        ErrorCode::RESOURCE_NOT_FOUND,
        format!(
            "no session `{id}` on this connection; open it with session/new, session/load or session/resume"
        ),
    )
}

/// A daemon's refusal or failure as a JSON-RPC error carrying its sentence.
pub fn rpc_error(status: &tonic::Status) -> Error {
    let code = match status.code() {
        tonic::Code::InvalidArgument | tonic::Code::FailedPrecondition => ErrorCode::INVALID_PARAMS,
        tonic::Code::NotFound => ErrorCode::RESOURCE_NOT_FOUND,
        _ => ErrorCode::INTERNAL_ERROR,
    };
    let message = if status.message().is_empty() {
        format!("codarisd failed: {}", status.code())
    } else {
        status.message().to_owned()
    };
    Error::new(code, message)
}
