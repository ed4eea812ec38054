//! Running one hook: the operator's program, started by the daemon itself (outside the
//! sandbox the model's commands run in: it is the operator's code, not the model's), in the
//! session's working directory, with the environment commands get (never a provider's key),
//! the call on its standard input, killed with everything it started when it runs too long.

use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::answer::{Answer, Ended, HookFailure, MAX_OUTPUT_BYTES, read};
use crate::config::hooks::PreToolUseHook;

/// The variables of the daemon's environment a hook gets: those a command gets
/// (`tools.env_passthrough` included; the providers' keys never), and the session's directory
/// as `CODARIS_PROJECT_DIR` and, for a script written for Claude Code, `CLAUDE_PROJECT_DIR`.
pub fn environment(passthrough: &[String], cwd: &str) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(name, _)| {
            name.to_str()
                .is_some_and(|name| codaris_tools::shell::passes(name, passthrough))
        })
        .collect();
    for name in ["CODARIS_PROJECT_DIR", "CLAUDE_PROJECT_DIR"] {
        env.push((OsString::from(name), OsString::from(cwd)));
    }
    env
}

/// Runs `hook` on `input` in `cwd` with `env`, and reads its answer; a hook that does not
/// start, fails, runs past its timeout or prints what is not an answer counts as `deny`.
pub async fn run(
    hook: &PreToolUseHook,
    tool: &str,
    input: &[u8],
    cwd: &Path,
    env: &[(OsString, OsString)],
) -> Answer {
    let program = hook.command.first().map_or("", String::as_str);
    let mut command = tokio::process::Command::new(program);
    command
        .args(hook.command.iter().skip(1))
        .env_clear()
        .envs(env.iter().map(|(name, value)| (name, value)))
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group, so a timeout stops whatever it started too.
        .process_group(0)
        .kill_on_drop(true);
    // Registered with the daemon's orphan reaper, which would otherwise take the exit status
    // of a child outside the daemon's process group before this wait could.
    let mut child = match codaris_tools::shell::spawn_registered(&mut command) {
        Ok(child) => child,
        Err(source) => {
            return HookFailure::Start {
                program: program.to_owned(),
                source,
            }
            .answer();
        }
    };
    // Armed until the hook is waited for: a hook cut short (its timeout, or the turn dropped
    // while it ran) is stopped with everything it started. Until then its pid is not reaped,
    // so the group id still names its group.
    let pid = child.id().and_then(|pid| i32::try_from(pid).ok());
    let _registered = Registered(pid);
    let mut group = Group(pid);
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let work = async {
        let write = async move {
            if let Some(mut stdin) = stdin {
                // A hook that does not read its input is no failure: its answer says.
                let _ = stdin.write_all(input).await;
            }
        };
        let ((), out, err, status) = tokio::join!(
            write,
            read_capped(stdout),
            read_capped(stderr),
            child.wait()
        );
        (out, err, status)
    };
    let finished = tokio::time::timeout(hook.timeout, work).await;
    let (out, err, status) = match finished {
        Ok(done) => done,
        Err(_) => {
            // The group first: the hook's children hold its pipes as much as it does.
            group.kill();
            let _ = child.kill().await;
            tracing::warn!(hook.program = %program, tool.name = %tool, "a pre_tool_use hook ran past its timeout and was killed");
            return HookFailure::TimedOut {
                program: program.to_owned(),
                seconds: hook.timeout.as_secs_f64(),
            }
            .answer();
        }
    };
    group.disarm();
    let io = |source| {
        HookFailure::Io {
            program: program.to_owned(),
            source,
        }
        .answer()
    };
    let too_much = || {
        HookFailure::TooMuch {
            program: program.to_owned(),
        }
        .answer()
    };
    let status = match status {
        Ok(status) => status,
        Err(source) => return io(source),
    };
    let err = match err {
        Ok(Some(err)) => err,
        Ok(None) => return too_much(),
        Err(source) => return io(source),
    };
    if !err.is_empty() {
        // Into the daemon's log under a target of its own, which the telemetry export
        // (`codaris*` targets only) leaves out: a hook's words may repeat the arguments.
        tracing::info!(
            target: "pre_tool_use_hook",
            hook = %program,
            tool = %tool,
            stderr = %String::from_utf8_lossy(&err).trim_end(),
            "a pre_tool_use hook wrote to its standard error"
        );
    }
    let out = match out {
        Ok(Some(out)) => out,
        Ok(None) => return too_much(),
        Err(source) => return io(source),
    };
    let ended = match (
        status.code(),
        std::os::unix::process::ExitStatusExt::signal(&status),
    ) {
        (Some(code), _) => Ended::Code(code),
        (None, Some(signal)) => Ended::Signal(signal),
        (None, None) => Ended::Code(-1),
    };
    read(program, ended, &out, &err)
}

/// A hook's entry in the orphan reaper's registry, taken out when its run is over.
struct Registered(Option<i32>);

impl Drop for Registered {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            codaris_tools::shell::unregister(pid);
        }
    }
}

/// A running hook's process group, killed when dropped armed.
struct Group(Option<i32>);

impl Group {
    fn kill(&mut self) {
        if let Some(pid) = self.0.take().and_then(rustix::process::Pid::from_raw) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }

    /// The hook was waited for: its pid may be reused, so its group is never signalled.
    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

/// All of `pipe`, or `None` when it holds more than [`MAX_OUTPUT_BYTES`].
async fn read_capped(
    pipe: Option<impl AsyncRead + Unpin>,
) -> Result<Option<Vec<u8>>, std::io::Error> {
    let Some(pipe) = pipe else {
        return Ok(Some(Vec::new()));
    };
    let mut bytes = Vec::new();
    pipe.take(MAX_OUTPUT_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .await?;
    Ok((bytes.len() <= MAX_OUTPUT_BYTES).then_some(bytes))
}
