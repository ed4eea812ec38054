//! The daemon's errors: one enum for configuration, one for start-up, one for serving calls.

use std::path::PathBuf;

/// A configuration that cannot be used; each variant names the file or variable and the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read configuration file {}: {source}", file.display())]
    Unreadable {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid configuration file {}{}: {message}", file.display(), line.map(|l| format!(" (line {l})")).unwrap_or_default())]
    Parse {
        file: PathBuf,
        line: Option<usize>,
        message: String,
    },
    #[error("invalid configuration: {key} {reason}")]
    Invalid { key: String, reason: String },
    #[error(transparent)]
    Paths(#[from] codaris_paths::PathsError),
}

/// Why the daemon could not start. None of these leaves a daemon or a socket behind.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(
        "another codarisd (pid {pid}) already serves {}; stop it with `codaris daemon stop`",
        socket.display()
    )]
    AlreadyRunning { pid: String, socket: PathBuf },
    #[error("cannot prepare state directory {}: {source}", path.display())]
    StateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("state directory {} is not owned by this user", path.display())]
    ForeignStateDir { path: PathBuf },
    #[error("state directory {} is a symbolic link; name the directory itself", path.display())]
    SymlinkStateDir { path: PathBuf },
    #[error(
        "state directory {} is unsafe: {} {why}",
        state.display(),
        parent.display()
    )]
    UnsafeStateParent {
        state: PathBuf,
        parent: PathBuf,
        why: &'static str,
    },
    #[error(transparent)]
    Ledger(#[from] codaris_ledger::LedgerError),
    #[error("cannot listen on {what}: {source}")]
    Listen {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot build the tool index: {0}")]
    ToolIndex(#[source] DaemonError),
    #[error("server failed: {0}")]
    Serve(#[from] tonic::transport::Error),
    /// The ledger records nothing more until it is opened again (a full disk: sled keeps the
    /// error): the daemon stopped in order, to be started again ([`crate::server::state::EXIT_LEDGER_WEDGED`]).
    #[error(
        "stopped because the ledger records nothing more until codarisd starts again ({reason}); nothing acknowledged is lost: the next start replays the journal"
    )]
    LedgerWedged { reason: codaris_ledger::Wedged },
}

/// An error while serving a call; converted to a gRPC status in one place.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("no session `{id}`")]
    SessionNotFound { id: String },
    #[error("session `{id}` has ended")]
    SessionEnded { id: String },
    #[error(
        "no tool, skill or reference `{name}` in the index; `codaris tools list` shows every name"
    )]
    ToolNotFound { name: String },
    #[error("invalid argument `{field}`: {reason}")]
    InvalidArgument { field: &'static str, reason: String },
    #[error("session `{id}` is already running a turn; wait for it or cancel it")]
    TurnRunning { id: String },
    #[error("session `{id}` has no turn to attach to since the daemon started")]
    NoTurn { id: String },
    #[error(transparent)]
    Ledger(#[from] codaris_ledger::LedgerError),
    #[error("{count} ledger record(s) do not decode, the first: {detail}")]
    CorruptRecord { detail: String, count: usize },
    #[error("a stored record does not decode: {0}")]
    Corrupt(#[from] serde_json::Error),
    #[error(
        "card `{card}` takes only the answer of the client holding its turn, and this answer's `answer_secret` is missing or wrong; the card stays open"
    )]
    WrongCardSecret { card: String },
    #[error(
        "question `{question}` takes only the answer of the client holding its turn, and this answer's `answer_secret` is missing or wrong; the question stays open"
    )]
    WrongQuestionSecret { question: String },
    #[error("question `{question}` stays open: {source}")]
    UnfitAnswer {
        question: String,
        #[source]
        source: codaris_tools::BadReply,
    },
    #[error(
        "card `{card}` lists no programs, so it cannot be answered program-wide; answer once, for the session, or deny"
    )]
    NoPrograms { card: String },
    #[error(
        "the answer to card `{card}` is durable but the ledger could not apply it: it takes effect, and grants what it gave, when codarisd restarts; until then nothing is granted or recorded"
    )]
    AnswerNotYetApplied { card: String },
    #[error("the answer to card `{card}` was not recorded, so nothing was granted: {source}")]
    AnswerNotRecorded {
        card: String,
        #[source]
        source: NotRecorded,
    },
    #[error(
        "the answer to card `{card}` was taken but not yet durable after {seconds} s; `codaris ledger grants` shows whether it was recorded"
    )]
    AnswerNotYetDurable { card: String, seconds: u64 },
    #[error("no MCP server is called `{name}`; `codaris mcp list` shows them")]
    McpUnknown { name: String },
    #[error("the MCP server `{name}` {reason}")]
    McpServer { name: String, reason: String },
    #[error(
        "no model provider is set up: run `codaris login` (or set CODARIS_PROVIDER and ANTHROPIC_API_KEY or OPENAI_API_KEY for the daemon), or give `--script FILE` for the scripted model"
    )]
    NoProvider,
    #[error(
        "provider `{provider}` has no key: set {var} in the daemon's environment or run `codaris login --provider {provider}`"
    )]
    MissingKey {
        provider: &'static str,
        var: &'static str,
    },
    /// The decision on an undo refused it (its sentence names the file); recorded unless it
    /// was a dry run.
    #[error("{sentence}")]
    UndoRefused {
        sentence: String,
        code: codaris_ledger::UndoCode,
        record_id: Option<String>,
    },
    #[error("{}", match turn {
        Some(turn) => format!("turn {} of session `{id}` kept no checkpoint: it changed no file through its tools (or ran before undo existed)", u64::from(*turn) + 1),
        None => format!("session `{id}` has no turn left to undo: none changed files through its tools, or each was undone"),
    })]
    NoCheckpoint { id: String, turn: Option<u32> },
    #[error(transparent)]
    Checkpoint(#[from] codaris_tools::files::checkpoint::CheckpointError),
    #[error("the daemon is stopping")]
    ShuttingDown,
    #[error("file system error at {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// An I/O error's reason without the "(os error N)" suffix, for messages a person reads.
pub fn io_reason(err: &std::io::Error) -> String {
    let text = err.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

/// The longest message a status carries: it travels in an HTTP/2 header, and a message that
/// echoes a huge input must not overflow the client's header limit and kill the connection.
pub const MAX_STATUS_MESSAGE: usize = 1024;

/// `message` cut to [`MAX_STATUS_MESSAGE`] bytes at a character boundary, control characters
/// (escapes a terminal would act on, newlines) shown as `\u{..}`.
pub fn status_message(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(MAX_STATUS_MESSAGE));
    for c in message.chars() {
        let piece = if c.is_control() {
            c.escape_unicode().to_string()
        } else {
            c.to_string()
        };
        if out.len() + piece.len() > MAX_STATUS_MESSAGE - 3 {
            out.push('…');
            break;
        }
        out.push_str(&piece);
    }
    out
}

impl From<DaemonError> for tonic::Status {
    fn from(err: DaemonError) -> Self {
        let message = status_message(&err.to_string());
        match err {
            DaemonError::SessionNotFound { .. }
            | DaemonError::ToolNotFound { .. }
            | DaemonError::McpUnknown { .. } => tonic::Status::not_found(message),
            DaemonError::SessionEnded { .. }
            | DaemonError::TurnRunning { .. }
            | DaemonError::NoTurn { .. }
            | DaemonError::NoPrograms { .. }
            | DaemonError::McpServer { .. }
            | DaemonError::NoProvider
            | DaemonError::UndoRefused { .. }
            | DaemonError::NoCheckpoint { .. }
            | DaemonError::MissingKey { .. } => tonic::Status::failed_precondition(message),
            DaemonError::ShuttingDown => tonic::Status::unavailable(message),
            DaemonError::WrongCardSecret { .. } | DaemonError::WrongQuestionSecret { .. } => {
                tonic::Status::permission_denied(message)
            }
            DaemonError::UnfitAnswer { .. } => tonic::Status::invalid_argument(message),
            DaemonError::AnswerNotYetDurable { .. } => tonic::Status::deadline_exceeded(message),
            DaemonError::InvalidArgument { .. } => tonic::Status::invalid_argument(message),
            DaemonError::Ledger(codaris_ledger::LedgerError::GrantNotFound { .. }) => {
                tonic::Status::not_found(message)
            }
            DaemonError::Ledger(_)
            | DaemonError::CorruptRecord { .. }
            | DaemonError::Corrupt(_)
            | DaemonError::AnswerNotRecorded { .. }
            | DaemonError::AnswerNotYetApplied { .. }
            | DaemonError::Checkpoint(_)
            | DaemonError::Io { .. } => tonic::Status::internal(message),
        }
    }
}

/// Why an answer was not made durable; nothing was granted.
#[derive(Debug, thiserror::Error)]
pub enum NotRecorded {
    #[error("the ledger could not record the answer: {0}")]
    Ledger(#[from] codaris_ledger::LedgerError),
    #[error("recording the answer stopped: {0}")]
    Task(#[from] tokio::task::JoinError),
}
