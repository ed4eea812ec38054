//! Reaching the daemon: connect to its socket, start it in the background when it is not
//! running, and agree on an API version.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use codaris_paths::StateLayout;
use codaris_proto::v1;
use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;
use tonic::transport::{Channel, Endpoint, Uri};

use crate::error::CliError;

/// `codarisd`'s exit status when another daemon holds the state directory.
const DAEMON_ALREADY_RUNNING: u8 = 75;

/// How long a freshly started daemon has to answer.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the daemon lives, resolved once per invocation.
#[derive(Debug, Clone)]
pub struct Target {
    pub layout: StateLayout,
}

impl Target {
    pub fn resolve(state_dir: Option<PathBuf>) -> Result<Self, CliError> {
        let dir = match state_dir {
            Some(dir) if dir.is_absolute() => dir,
            Some(dir) => std::env::current_dir()
                .map_err(|source| CliError::Read {
                    path: dir.clone(),
                    source,
                })?
                .join(dir),
            None => codaris_paths::resolve_state_dir(&|name: &str| std::env::var_os(name))?,
        };
        Ok(Self {
            layout: StateLayout::new(dir),
        })
    }

    pub fn socket(&self) -> PathBuf {
        self.layout.socket()
    }
}

/// Opens a channel over the Unix socket. Connecting is eager, so a missing daemon fails here.
pub async fn connect(socket: &Path) -> Result<Channel, tonic::transport::Error> {
    let socket = socket.to_path_buf();
    // The URI is required by the API and ignored: every connection goes to the socket.
    Endpoint::from_static("http://codarisd.local")
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let socket = socket.clone();
            async move { Ok::<_, std::io::Error>(TokioIo::new(UnixStream::connect(socket).await?)) }
        }))
        .await
}

/// Whether connecting to `socket` fails for want of permission (tonic's error hides the kind).
fn permission_denied(socket: &Path) -> bool {
    matches!(
        std::os::unix::net::UnixStream::connect(socket),
        Err(err) if err.kind() == std::io::ErrorKind::PermissionDenied
    )
}

/// Connects, agrees on an API version, and returns the channel.
pub async fn open(target: &Target, autostart: bool) -> Result<Channel, CliError> {
    let socket = target.socket();
    let channel = match connect(&socket).await {
        Ok(channel) => channel,
        // A daemon may well be running; starting another would not help.
        Err(_) if permission_denied(&socket) => return Err(CliError::SocketDenied { socket }),
        Err(_) if autostart => start_and_wait(target).await?,
        Err(_) => return Err(CliError::NotRunning { socket }),
    };
    hello(channel.clone()).await?;
    Ok(channel)
}

async fn hello(channel: Channel) -> Result<v1::HelloResponse, CliError> {
    let mut daemon = v1::daemon_client::DaemonClient::new(channel);
    let response = daemon
        .hello(v1::HelloRequest {
            client: concat!("codaris-cli/", env!("CARGO_PKG_VERSION")).to_owned(),
            api_versions: codaris_proto::API_VERSIONS.to_vec(),
        })
        .await?;
    Ok(response.into_inner())
}

/// Who brought the daemon up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartedBy {
    /// This CLI spawned it.
    Cli,
    /// The installed systemd user unit, started with `systemctl --user start`.
    Unit { unit: PathBuf },
}

/// Brings up the daemon (through its systemd user unit when one is installed for this state
/// directory, see [`crate::service`]) and waits until it answers.
pub async fn start_and_wait(target: &Target) -> Result<Channel, CliError> {
    start_and_wait_with(
        target,
        crate::service::default_state_dir().as_deref(),
        &crate::service::SystemdUser,
    )
    .await
    .map(|(channel, _)| channel)
}

/// [`start_and_wait`] with the unit's state directory and the service manager given, saying
/// who started the daemon.
pub async fn start_and_wait_with(
    target: &Target,
    default_dir: Option<&Path>,
    // `Sync`: `codaris acp` reaches the daemon from a task that may move between threads.
    manager: &(dyn crate::service::ServiceManager + Sync),
) -> Result<(Channel, StartedBy), CliError> {
    match crate::service::plan(target.layout.dir(), default_dir, manager) {
        crate::service::StartPlan::Spawn => Ok((spawn_and_wait(target).await?, StartedBy::Cli)),
        crate::service::StartPlan::Unit { unit } => {
            manager
                .start()
                .map_err(|message| CliError::UnitStart { message })?;
            let socket = target.socket();
            let deadline = Instant::now() + START_TIMEOUT;
            loop {
                if let Ok(channel) = connect(&socket).await {
                    return Ok((channel, StartedBy::Unit { unit }));
                }
                if Instant::now() > deadline {
                    return Err(CliError::StartTimeout {
                        socket,
                        seconds: START_TIMEOUT.as_secs(),
                    });
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

/// Spawns `codarisd` detached from this terminal and waits until it answers.
async fn spawn_and_wait(target: &Target) -> Result<Channel, CliError> {
    let mut child = spawn_daemon(target)?;
    let socket = target.socket();
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Ok(channel) = connect(&socket).await {
            return Ok(channel);
        }
        if let Ok(Some(status)) = child.try_wait() {
            // Another daemon won the state directory (a second CLI starting one at the same
            // moment, a service manager): it is the one to wait for.
            let lost_the_race = status.code() == Some(i32::from(DAEMON_ALREADY_RUNNING));
            if !lost_the_race || !target.layout.pid_file().exists() {
                return Err(CliError::DaemonFailed {
                    message: last_error_line(&mut child)
                        .unwrap_or_else(|| format!("codarisd exited with {status}")),
                });
            }
        }
        if Instant::now() > deadline {
            return Err(CliError::StartTimeout {
                socket,
                seconds: START_TIMEOUT.as_secs(),
            });
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn spawn_daemon(target: &Target) -> Result<Child, CliError> {
    let binary = daemon_binary()?;
    Command::new(&binary)
        .arg("--state-dir")
        .arg(target.layout.dir())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        // Kept only to report why a daemon died while starting; it also logs to its file.
        .stderr(Stdio::piped())
        // Its own process group, so a Ctrl-C meant for this CLI does not stop the daemon.
        .process_group(0)
        .spawn()
        .map_err(|source| CliError::Spawn { binary, source })
}

fn last_error_line(child: &mut Child) -> Option<String> {
    use std::io::Read;
    let mut stderr = String::new();
    child.stderr.take()?.read_to_string(&mut stderr).ok()?;
    relayed_line(&stderr)
}

/// The line of a daemon's stderr that says why it stopped: its own `codarisd: …` line, else a
/// panic's message, else the last line; terminal escapes and control characters taken out, so
/// nothing the daemon printed can act on this terminal.
fn relayed_line(stderr: &str) -> Option<String> {
    let lines: Vec<String> = stderr
        .lines()
        .map(strip_escapes)
        .filter(|line| !line.trim().is_empty())
        .collect();
    let own = lines.iter().rev().find(|l| l.starts_with("codarisd: "));
    let panic = lines.iter().rev().find(|l| l.contains("panicked at"));
    own.or(panic)
        .or(lines.last())
        .map(|line| line.trim_start_matches("codarisd: ").trim().to_owned())
}

/// Removes ANSI escape sequences (CSI `ESC [ … final`, OSC `ESC ] … BEL/ST`, two-byte `ESC x`)
/// and every other control character.
fn strip_escapes(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            match chars.next() {
                Some('[') => {
                    for next in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&next) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    while let Some(next) = chars.next() {
                        if next == '\u{7}'
                            || (next == '\u{1b}' && chars.next_if_eq(&'\\').is_some())
                        {
                            break;
                        }
                    }
                }
                _ => {}
            }
        } else if c == '\t' {
            out.push(' ');
        } else if !c.is_control() {
            out.push(c);
        }
    }
    out
}

/// `codarisd` beside this executable (an install puts both in one directory), else on PATH.
pub fn daemon_binary() -> Result<PathBuf, CliError> {
    let cli = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("codaris"));
    if let Some(sibling) = cli.parent().map(|dir| dir.join("codarisd"))
        && sibling.is_file()
    {
        return Ok(sibling);
    }
    on_path("codarisd").ok_or(CliError::DaemonBinaryMissing { cli })
}

/// The first file named `program` in a directory of `PATH`.
pub(crate) fn on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A unit that is installed but fails to start.
    struct FailingUnit;

    impl crate::service::ServiceManager for FailingUnit {
        fn installed_unit(&self) -> Option<PathBuf> {
            Some(PathBuf::from(
                "/home/me/.config/systemd/user/codarisd.service",
            ))
        }
        fn start(&self) -> Result<(), String> {
            Err("`systemctl --user start codarisd.service` failed: unit masked".to_owned())
        }
    }

    #[tokio::test]
    async fn with_a_unit_the_cli_starts_it_and_spawns_no_daemon_of_its_own() {
        let temp = tempfile::tempdir().unwrap();
        let target = Target {
            layout: StateLayout::new(temp.path().join("state")),
        };
        let err = start_and_wait_with(&target, Some(target.layout.dir()), &FailingUnit)
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot start codarisd through its systemd unit: `systemctl --user start codarisd.service` failed: unit masked"
        );
        // Nothing was spawned: no daemon claimed the directory.
        assert!(!target.layout.pid_file().exists());
    }

    #[test]
    fn a_relayed_line_carries_no_escapes_and_prefers_the_daemons_own_words() {
        let stderr = "\u{1b}[2m2026-12-01T08:00:00Z\u{1b}[0m \u{1b}[31mERROR\u{1b}[0m codarisd failed\n\
                      codarisd: cannot open the ledger: \u{1b}]0;owned\u{7}corrupt\u{1b}[1m!\n\
                      \n";
        assert_eq!(
            relayed_line(stderr).as_deref(),
            Some("cannot open the ledger: corrupt!")
        );
        let panic =
            "thread 'main' panicked at src/x.rs:1:1:\nboom\nnote: run with `RUST_BACKTRACE=1`\n";
        assert_eq!(
            relayed_line(panic).as_deref(),
            Some("thread 'main' panicked at src/x.rs:1:1:")
        );
        assert_eq!(relayed_line("\n\n"), None);
    }
}
