//! nf-core run the way a session's commands run: in the session's task pool, under Landlock
//! and in its cgroup where the kernel has them, so a pipeline's `nextflow.config` (which
//! Nextflow evaluates as code when nf-core asks it for the configuration) gets no more than a
//! command would. A read-only tool's run reads the roots and writes only the session's own
//! workspace and temp dir.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use codaris_nextflow::runner::{
    Captured, DEFAULT_OUTPUT_LIMIT, Exit, Invocation, Outcome, RunError, Runner, find_program,
    install_hint,
};

use crate::shell::TaskPool;
use crate::shell::TaskStatus;

/// How long a stopped run gets between SIGTERM and SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// A [`Runner`] on one session's task pool. Its `run` blocks: call it from a blocking task.
#[derive(Debug, Clone)]
pub struct PoolRunner {
    pub(crate) pool: Arc<TaskPool>,
    pub(crate) roots: Vec<PathBuf>,
    pub(crate) workspace: PathBuf,
    /// The roots are writable (a tool that writes, such as `clone_nfcore_base`).
    pub(crate) writes: bool,
    pub(crate) handle: tokio::runtime::Handle,
}

impl PoolRunner {
    /// A runner on `pool`: its programs see `roots` (writable only with `writes`) and write
    /// `workspace` and the pool's temp dir. Must be made within a Tokio runtime.
    pub fn new(pool: Arc<TaskPool>, roots: Vec<PathBuf>, workspace: PathBuf, writes: bool) -> Self {
        Self {
            pool,
            roots,
            workspace,
            writes,
            handle: tokio::runtime::Handle::current(),
        }
    }
}

impl Runner for PoolRunner {
    fn run(&self, invocation: &Invocation) -> Result<Outcome, RunError> {
        let path = invocation
            .env
            .iter()
            .find(|(key, _)| key == "PATH")
            .map(|(_, value)| std::ffi::OsString::from(value))
            .or_else(|| std::env::var_os("PATH"));
        let Some(program) = find_program(&invocation.program, path.as_deref()) else {
            return Err(RunError::NotFound {
                program: invocation.program.clone(),
                install: install_hint(&invocation.program),
            });
        };
        if !invocation.cwd.is_dir() {
            return Err(RunError::NoCwd {
                cwd: invocation.cwd.clone(),
            });
        }
        // The sandbox lets the program write only the roots (when it writes), the workspace and
        // the temp dir, so caches it keeps under the home directory (nf-core's logo cache in
        // `~/.cache`) go to the temp dir instead.
        let mut invocation = invocation.clone();
        if !invocation
            .env
            .iter()
            .any(|(key, _)| key == "XDG_CACHE_HOME")
        {
            let cache = self.pool.temp_dir().join("cache");
            invocation = invocation.with_env("XDG_CACHE_HOME", &cache.to_string_lossy());
        }
        let invocation = &invocation;
        let line = command_line(&program, invocation).map_err(|source| RunError::Spawn {
            program: invocation.program.clone(),
            source,
        })?;
        let started = if self.writes {
            self.pool.start(
                &line,
                &invocation.cwd,
                &self.roots,
                Some(&self.workspace),
                None,
                false,
                false,
            )
        } else {
            self.pool
                .start_read_only(&line, &invocation.cwd, &self.roots, Some(&self.workspace))
        }
        .map_err(|error| RunError::Spawn {
            program: invocation.program.clone(),
            source: std::io::Error::other(error.to_string()),
        })?;
        let status = self.handle.block_on(started.task.wait(invocation.timeout));
        let captured = started.task.output(DEFAULT_OUTPUT_LIMIT, None);
        let stderr = Captured {
            text: captured.stderr,
            truncated: captured.stderr_hidden > 0,
        };
        let exit = match status {
            TaskStatus::Running => {
                let _ = self.handle.block_on(started.task.stop(STOP_GRACE));
                self.pool.retire(&started);
                return Err(RunError::TimedOut {
                    program: invocation.program.clone(),
                    timeout: invocation.timeout,
                    stderr,
                });
            }
            TaskStatus::Exited(code) => Exit::Code(code),
            TaskStatus::Signaled(signal) => Exit::Signal(signal),
            TaskStatus::Stopped => Exit::Signal(rustix::process::Signal::TERM.as_raw()),
            TaskStatus::Lost => {
                return Err(RunError::Wait {
                    program: invocation.program.clone(),
                    source: std::io::Error::other("waiting for it failed"),
                });
            }
        };
        let outcome = Outcome {
            exit,
            stdout: Captured {
                text: captured.stdout,
                truncated: captured.stdout_hidden > 0,
            },
            stderr,
            elapsed: started.task.elapsed(),
        };
        self.pool.retire(&started);
        Ok(outcome)
    }

    fn scratch(&self) -> PathBuf {
        self.pool.temp_dir().to_path_buf()
    }
}

/// `exec env K=V … PROGRAM ARGS…` for `/bin/sh -c`, every word quoted: nothing in an
/// argument is read by the shell. `env` takes the first word without `=` as the program, which
/// the absolute path always is. A NUL byte cannot be passed at all.
pub(super) fn command_line(
    program: &std::path::Path,
    invocation: &Invocation,
) -> std::io::Result<String> {
    let mut words = vec!["exec".to_owned(), "env".to_owned()];
    for (key, value) in &invocation.env {
        words.push(quote(&format!("{key}={value}"))?);
    }
    words.push(quote(&program.to_string_lossy())?);
    for arg in &invocation.args {
        words.push(quote(arg)?);
    }
    Ok(words.join(" "))
}

/// `text` in single quotes, each `'` in it closed, escaped and reopened.
fn quote(text: &str) -> std::io::Result<String> {
    if text.contains('\0') {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "an argument holds a NUL byte",
        ));
    }
    Ok(format!("'{}'", text.replace('\'', r"'\''")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_is_quoted_so_the_shell_reads_nothing_in_it() -> std::io::Result<()> {
        let invocation = Invocation::new(
            "nf-core",
            vec!["--name=$(touch x)".to_owned(), "it's; rm -rf /".to_owned()],
            std::path::Path::new("/"),
        )
        .with_env("NO_COLOR", "1");
        let line = command_line(std::path::Path::new("/opt/bin/nf-core"), &invocation)?;
        assert_eq!(
            line,
            r"exec env 'NO_COLOR=1' '/opt/bin/nf-core' '--name=$(touch x)' 'it'\''s; rm -rf /'"
        );
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(line.replacen("'/opt/bin/nf-core'", "printf '%s\\n'", 1))
            .output()?;
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "--name=$(touch x)\nit's; rm -rf /\n"
        );
        let nul = Invocation::new("x", vec!["a\0b".to_owned()], std::path::Path::new("/"));
        assert!(command_line(std::path::Path::new("/bin/x"), &nul).is_err());
        Ok(())
    }
}
