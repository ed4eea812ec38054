//! Everything that can go wrong in the CLI, each as one actionable line.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Paths(#[from] codaris_paths::PathsError),
    #[error("codarisd is not running (no daemon answers on {}); start it with `codaris daemon start`", socket.display())]
    NotRunning { socket: PathBuf },
    #[error("permission denied on {}: the socket or its directory belongs to another user or its mode shuts you out", socket.display())]
    SocketDenied { socket: PathBuf },
    #[error("cannot find the codarisd binary next to {} or on PATH; install it beside codaris", cli.display())]
    DaemonBinaryMissing { cli: PathBuf },
    #[error("cannot start codarisd ({}): {source}", binary.display())]
    Spawn {
        binary: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("codarisd exited while starting: {message}")]
    DaemonFailed { message: String },
    /// The installed systemd user unit would not start (the CLI spawns no daemon beside it).
    #[error("cannot start codarisd through its systemd unit: {message}")]
    UnitStart { message: String },
    #[error("codarisd did not answer on {} within {seconds} s; see `codaris daemon logs`", socket.display())]
    StartTimeout { socket: PathBuf, seconds: u64 },
    #[error("codarisd did not stop within {seconds} s (pid {pid})")]
    StopTimeout { pid: u32, seconds: u64 },
    #[error("no session `{id}`; `codaris sessions --all` lists them")]
    NoSession { id: String },
    /// The ACP connection with the editor failed (`codaris acp`).
    #[error("the editor's ACP connection failed: {message}")]
    Acp { message: String },
    #[error("{}", status_line(.0))]
    Rpc(#[from] tonic::Status),
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("terminal error: {message}")]
    Terminal { message: String },
    #[error("no input: expected {what} on standard input")]
    NoInput { what: &'static str },
    /// A `--context` file or piped standard input that cannot be a prompt's context (binary,
    /// or too large for one).
    #[error("cannot use `{name}` as context: {reason}")]
    BadContext { name: String, reason: String },
    #[error("no ledger at {}: no daemon has run with this state directory (pass --state-dir, or --from FILE)", path.display())]
    NoLedger { path: PathBuf },
    #[error(transparent)]
    Ledger(#[from] codaris_ledger::LedgerError),
    #[error("cannot encode JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("output error: {0}")]
    Output(std::io::Error),
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    #[error("invalid {flag}: {reason}")]
    InvalidFlag { flag: &'static str, reason: String },
    #[error("`{variable}` holds a control character (`{}`), which a service unit cannot carry", crate::output::one_line(&value.display().to_string()))]
    UnitValue {
        variable: &'static str,
        value: PathBuf,
    },
    #[error("invalid {what} {}{}: {reason}", path.display(), line.map(|l| format!(" line {l}")).unwrap_or_default())]
    BadLine {
        what: &'static str,
        path: PathBuf,
        line: Option<usize>,
        reason: String,
    },
    /// `codaris tools eval --from-ledger` on a state directory no daemon has used.
    #[error("no ledger at {}: no daemon has run with this state directory (pass --state-dir)", path.display())]
    NoLedgerToMine { path: PathBuf },
    #[error("no query in {} has acceptable answers (`relevant`), so there is nothing to measure", path.display())]
    NothingToMeasure { path: PathBuf },
    /// `--json` given to a command that has no JSON output: refused, never silently ignored.
    #[error("`codaris {command}` has no --json output ({why}); run it without --json")]
    JsonUnsupported {
        command: &'static str,
        why: &'static str,
    },
    /// The reader of our output went away (`codaris … | head`): exit quietly.
    #[error("broken pipe")]
    BrokenPipe,
}

impl CliError {
    /// The exit code this error ends the program with: 2 for a command line that asks for
    /// something the command does not do (as clap's own usage errors), else 1.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::JsonUnsupported { .. } => 2,
            _ => 1,
        }
    }
}

impl From<std::io::Error> for CliError {
    fn from(err: std::io::Error) -> Self {
        if err.kind() == std::io::ErrorKind::BrokenPipe {
            Self::BrokenPipe
        } else {
            Self::Output(err)
        }
    }
}

fn status_line(status: &tonic::Status) -> String {
    let message = status.message().lines().next().unwrap_or_default();
    match status.code() {
        tonic::Code::Unimplemented => format!("not available in this codarisd: {message}"),
        tonic::Code::Unavailable => format!("codarisd is unavailable: {message}"),
        code => format!("codarisd refused the request ({code:?}): {message}"),
    }
}
