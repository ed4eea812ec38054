//! Starting a command: the host shell, its own process group, a private TMPDIR, Landlock.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::{Child, Command};

/// What to start and where.
#[derive(Debug)]
pub(crate) struct Launch<'a> {
    pub(crate) command: &'a str,
    pub(crate) cwd: &'a Path,
    pub(crate) temp_dir: &'a Path,
    /// Directories writes are confined to; `None` runs unconfined.
    pub(crate) confine_to: Option<Vec<PathBuf>>,
}

/// Codaris's own secrets, in the daemon's environment for the model providers: a command the
/// model wrote has no business reading them (it could print them into the transcript).
pub(crate) const WITHHELD_ENV: [&str; 2] = ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"];

/// Starts `/bin/sh -c <command>` leading a new process group, stdin closed, output piped.
/// Returns the child and whether Landlock confines it.
pub(crate) fn spawn(launch: &Launch<'_>) -> io::Result<(Child, bool)> {
    let mut command = shell(launch);
    let confined = match &launch.confine_to {
        Some(writable) => confine(&mut command, writable),
        None => false,
    };
    Ok((command.spawn()?, confined))
}

fn shell(launch: &Launch<'_>) -> Command {
    let mut command = Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(launch.command)
        .current_dir(launch.cwd)
        .env("TMPDIR", launch.temp_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group, so a stop reaches the grandchildren too; and not killed when the
        // handle drops, because a timed-out command lives on in the pool.
        .process_group(0)
        .kill_on_drop(false);
    for name in WITHHELD_ENV {
        command.env_remove(name);
    }
    command
}

#[cfg(target_os = "linux")]
#[expect(
    unsafe_code,
    reason = "Landlock restricts the calling process, so it must run in the child between fork and exec"
)]
fn confine(command: &mut Command, writable: &[PathBuf]) -> bool {
    let Some(ruleset) = super::landlock::prepare(writable) else {
        return false;
    };
    // The ruleset (its file descriptor, its rules) is complete before the fork; the child only
    // takes it out of the slot and makes two system calls (prctl, landlock_restrict_self).
    let mut slot = Some(ruleset);
    // SAFETY: the closure runs in the forked child, where only async-signal-safe work is
    // sound. It allocates nothing on success: `Option::take` moves a value already built, and
    // `restrict_self` issues `prctl(PR_SET_NO_NEW_PRIVS)` and `landlock_restrict_self` and
    // closes the ruleset descriptor. On failure it returns an error built from an
    // `ErrorKind` (no allocation), which makes the spawn fail rather than run unconfined.
    unsafe {
        command.pre_exec(move || match slot.take() {
            Some(ruleset) => match ruleset.restrict_self() {
                Ok(_) => Ok(()),
                Err(_) => Err(io::ErrorKind::PermissionDenied.into()),
            },
            None => Ok(()),
        });
    }
    true
}

#[cfg(not(target_os = "linux"))]
fn confine(_command: &mut Command, _writable: &[PathBuf]) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_providers_keys_are_withheld_and_tmpdir_is_private() {
        let launch = Launch {
            command: "true",
            cwd: Path::new("/w"),
            temp_dir: Path::new("/t"),
            confine_to: None,
        };
        let command = shell(&launch);
        let envs: Vec<_> = command.as_std().get_envs().collect();
        for name in WITHHELD_ENV {
            assert!(
                envs.contains(&(name.as_ref(), None)),
                "{name} reaches the command"
            );
        }
        assert!(envs.contains(&("TMPDIR".as_ref(), Some("/t".as_ref()))));
    }
}
