//! `ssh_run_command`: one command on a remote host through the system's OpenSSH client.
//!
//! OpenSSH already authenticates the way the catalogue asks (the agent socket, then the key
//! files) and reads the user's `~/.ssh/config`; Codaris adds batch mode (never a password
//! prompt: stdin is closed), a bounded run and bounded output. The host is checked so it can
//! never be read as an option.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::process::Command;

use super::args::{count, required_string};
use super::pools::ShellPools;
use super::run::{DEFAULT_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS, RESULT_STREAM_BYTES, status_line};
use super::task::BackgroundTask;
use crate::context::ToolContext;
use crate::tool::{Tool, ToolError, ToolOutput};

const NAME: &str = codaris_catalogue::SSH_RUN_COMMAND.name;
/// Output kept of each stream while the command runs (the result shows the last 32 KiB).
const BUFFER_BYTES: usize = 256 * 1024;

/// `ssh_run_command`, running `program` (the OpenSSH client, `ssh` on `PATH` by default).
#[derive(Debug, Clone)]
pub struct SshRunCommand {
    program: PathBuf,
    /// Where the client is started as one of the session's processes (its cgroup, its mark,
    /// dying with the daemon); without, it is a plain child of the daemon.
    pools: Option<Arc<ShellPools>>,
}

impl Default for SshRunCommand {
    fn default() -> Self {
        Self {
            program: PathBuf::from("ssh"),
            pools: None,
        }
    }
}

impl SshRunCommand {
    /// With another client binary (tests use a fake that prints its arguments).
    pub fn with_program(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            pools: None,
        }
    }

    /// The client started as one of the session's processes of `pools`.
    #[must_use]
    pub fn with_pools(mut self, pools: Arc<ShellPools>) -> Self {
        self.pools = Some(pools);
        self
    }
}

/// Kills the client if the call is dropped while waiting (the turn cancelled): nobody could
/// read or stop it afterwards.
struct Abandon<'a> {
    task: &'a BackgroundTask,
    armed: bool,
}

impl Drop for Abandon<'_> {
    fn drop(&mut self) {
        if self.armed && self.task.status().is_running() {
            self.task.kill_now();
        }
    }
}

/// `[user@]host`: no leading `-` (it would be an option), no whitespace or control characters.
fn check_host(host: &str) -> Result<(), ToolError> {
    let bad = host.starts_with('-')
        || host
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '\0');
    if bad {
        return Err(ToolError::model(format!(
            "`host` `{host}` is not a host name (expected `host` or `user@host`)"
        )));
    }
    Ok(())
}

/// The daemon's variables the client keeps: what it needs to find itself, its agent and its
/// terminal settings. Everything else (the providers' keys, `NOTIFY_SOCKET`, whatever secret
/// the service manager put in the daemon's environment) is dropped.
const PASSED_ENV: [&str; 7] = [
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "TERM",
    "SSH_AUTH_SOCK",
];

/// `ssh` with batch mode, `port`, then `--`, `host` and `command`, a clean environment
/// ([`PASSED_ENV`] and `LC_*`), stdin closed, output piped, leading its own group.
fn client(program: &Path, host: &str, command: &str, port: Option<u16>) -> Command {
    let mut ssh = Command::new(program);
    ssh.args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=20"]);
    if let Some(port) = port {
        ssh.arg("-p").arg(port.to_string());
    }
    // `--` ends the options: neither the host nor the command can add one.
    ssh.arg("--").arg(host).arg(command);
    ssh.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(false)
        .env_clear();
    for (key, value) in std::env::vars_os() {
        let name = key.to_string_lossy();
        if PASSED_ENV.contains(&name.as_ref()) || name.starts_with("LC_") {
            ssh.env(&key, &value);
        }
    }
    ssh
}

#[async_trait::async_trait]
impl Tool for SshRunCommand {
    fn entry(&self) -> &'static codaris_catalogue::CatalogueEntry {
        &codaris_catalogue::SSH_RUN_COMMAND
    }

    async fn call(&self, ctx: &ToolContext, args: &Value) -> Result<ToolOutput, ToolError> {
        let host = required_string(args, "host")?;
        check_host(host)?;
        let command = required_string(args, "command")?;
        let port = match count(args, "port")? {
            None => None,
            Some(port) => Some(
                u16::try_from(port)
                    .ok()
                    .filter(|port| *port > 0)
                    .ok_or_else(|| ToolError::model("`port` must be between 1 and 65535"))?,
            ),
        };
        let timeout = count(args, "timeout_seconds")?
            .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
            .clamp(1, MAX_TIMEOUT_SECONDS);
        let mut ssh = client(&self.program, host, command, port);
        let started = match &self.pools {
            Some(pools) => pools
                .pool(&ctx.session_id)
                .map_err(|error| error.into_tool_error(NAME))?
                .spawn_program(ssh),
            None => super::reaper::spawn_registered(&mut ssh),
        };
        let child = started.map_err(|error| {
            ToolError::model(format!(
                "could not start `{}`: {error}",
                self.program.display()
            ))
        })?;
        let task = BackgroundTask::watch(child, format!("ssh {host}"), None, BUFFER_BYTES);
        let mut abandon = Abandon {
            task: &task,
            armed: true,
        };
        let mut status = task.wait(Duration::from_secs(timeout)).await;
        abandon.armed = false;
        let mut head = String::new();
        if status.is_running() {
            status = task
                .stop(Duration::from_secs(2))
                .await
                .map_err(|source| ToolError::Fatal { tool: NAME, source })?;
            head = format!("timed out after {timeout}s and was stopped\n");
        }
        let output = task.output(RESULT_STREAM_BYTES, None).render();
        Ok(ToolOutput::text(format!(
            "{head}{}\n{output}",
            status_line(status)
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_cannot_be_an_option() {
        assert!(check_host("build@example.org").is_ok());
        assert!(check_host("-oProxyCommand=touch x").is_err());
        assert!(check_host("a b").is_err());
        assert!(check_host("a\nb").is_err());
    }

    #[tokio::test]
    async fn the_client_gets_an_allowlisted_environment() -> Result<(), Box<dyn std::error::Error>>
    {
        // A stand-in client printing its environment (the test runner's own has `CARGO*`).
        let temp = tempfile::tempdir()?;
        let fake = temp.path().join("ssh");
        std::fs::write(&fake, "#!/bin/sh\nenv\n")?;
        let mut perms = std::fs::metadata(&fake)?.permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&fake, perms)?;
        let output = client(&fake, "h", "true", Some(2222)).output().await?;
        let printed = String::from_utf8_lossy(&output.stdout);
        assert!(std::env::vars().any(|(key, _)| key.starts_with("CARGO")));
        for line in printed.lines() {
            let key = line.split('=').next().unwrap_or_default();
            // What the shell sets itself.
            let shell = ["PWD", "SHLVL", "_", "OLDPWD"].contains(&key);
            assert!(
                shell || PASSED_ENV.contains(&key) || key.starts_with("LC_"),
                "`{key}` reaches ssh"
            );
        }
        let args: Vec<_> = client(Path::new("ssh"), "h", "true", Some(2222))
            .as_std()
            .get_args()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "-o",
                "BatchMode=yes",
                "-o",
                "ConnectTimeout=20",
                "-p",
                "2222",
                "--",
                "h",
                "true"
            ]
        );
        Ok(())
    }
}
