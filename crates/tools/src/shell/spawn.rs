//! Starting a command: the host shell, its own process group, a private TMPDIR, and between
//! fork and exec, in this order: the session's cgroup, the parent-death signal, the
//! command's own mount namespace (`mounts.rs`), no capabilities and `no_new_privs`, Landlock.
//! Its environment is built from an allowlist (`env.rs`), not inherited.

use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use tokio::process::{Child, Command};

use super::limits::SessionLimit;
use super::mounts::MountPlan;
use super::privileges::Privileges;
use super::sandbox::Grant;
use super::spawner::Spawner;

/// What to start and where.
#[derive(Debug)]
pub(crate) struct Launch<'a> {
    pub(crate) command: &'a str,
    pub(crate) cwd: &'a Path,
    pub(crate) temp_dir: &'a Path,
    /// What Landlock lets it read and write; `None` runs unconfined.
    pub(crate) confine_to: Option<Arc<[Grant]>>,
    /// The session cgroup's open `cgroup.procs`, to join before exec.
    pub(crate) cgroup: Option<Arc<OwnedFd>>,
    /// The session's process and memory limits (`limits.rs`).
    pub(crate) limits: Option<Arc<SessionLimit>>,
    /// The session's `CODARIS_TASK` value (see `contain.rs`).
    pub(crate) mark: &'a str,
    /// Its mount namespace (`.git` read-only, the session's services hidden); `None` runs in
    /// the daemon's.
    pub(crate) mounts: Option<MountPlan>,
    /// The names `tools.env_passthrough` adds to the allowlist.
    pub(crate) passthrough: &'a [String],
}

/// A started command and what holds it.
#[derive(Debug)]
pub(crate) struct Spawned {
    pub(crate) child: Child,
    /// Landlock confines its reads and writes.
    pub(crate) confined: bool,
}

/// Starts `/bin/sh -c <command>` leading a new process group, stdin closed, output piped,
/// forked on the spawner thread (see `spawner.rs`).
pub(crate) fn spawn(launch: &Launch<'_>, spawner: &Spawner) -> io::Result<Spawned> {
    let mut command = shell(launch);
    let ruleset = launch
        .confine_to
        .as_deref()
        .and_then(super::landlock::prepare);
    let confined = ruleset.is_some();
    prepare_child(
        &mut command,
        InChild {
            cgroup: launch.cgroup.clone(),
            limits: launch.limits.clone(),
            mounts: launch.mounts.clone(),
            privileges: Privileges::of_daemon(),
            ruleset,
        },
    );
    let child = fork_on(spawner, command)?;
    Ok(Spawned { child, confined })
}

/// Starts another program (the OpenSSH client) as a session's command is started, but for
/// Landlock: in the session's cgroup, carrying its `mark`, with the parent-death signal,
/// `no_new_privs` and no capabilities, forked on the spawner thread.
pub(crate) fn spawn_program(
    mut command: Command,
    cgroup: Option<Arc<OwnedFd>>,
    limits: Option<Arc<SessionLimit>>,
    mark: &str,
    spawner: &Spawner,
) -> io::Result<Child> {
    command.env(super::contain::MARK, mark);
    prepare_child(
        &mut command,
        InChild {
            cgroup,
            limits,
            mounts: None,
            privileges: Privileges::of_daemon(),
            ruleset: None,
        },
    );
    fork_on(spawner, command)
}

/// What holds a program beside Landlock: the session's cgroup, its limits, and a mount
/// namespace (for git: the session's services and the machine's secrets hidden, but not
/// `.git` made read-only, which git must write).
#[derive(Debug, Default)]
pub(crate) struct Contained {
    pub(crate) cgroup: Option<Arc<OwnedFd>>,
    pub(crate) limits: Option<Arc<SessionLimit>>,
    pub(crate) mounts: Option<MountPlan>,
}

/// Starts another program (git for `worktree_create`) as [`spawn_program`] does, and where
/// `confine_to` is given and the kernel has Landlock, confined to it as a command is: a
/// repository hook or filter that slips past git's own switches still runs in the sandbox.
pub(crate) fn spawn_program_confined(
    mut command: Command,
    confine_to: Option<&[Grant]>,
    contained: Contained,
    mark: &str,
    spawner: &Spawner,
) -> io::Result<Spawned> {
    let Contained {
        cgroup,
        limits,
        mounts,
    } = contained;
    command.env(super::contain::MARK, mark);
    let ruleset = confine_to.and_then(super::landlock::prepare);
    let confined = ruleset.is_some();
    prepare_child(
        &mut command,
        InChild {
            cgroup,
            limits,
            mounts,
            privileges: Privileges::of_daemon(),
            ruleset,
        },
    );
    let child = fork_on(spawner, command)?;
    Ok(Spawned { child, confined })
}

/// Forks `command` on the spawner thread, for the caller's runtime to watch.
fn fork_on(spawner: &Spawner, mut command: Command) -> io::Result<Child> {
    let runtime = tokio::runtime::Handle::try_current().map_err(io::Error::other)?;
    spawner
        .run(move || {
            // The child is watched by the caller's runtime; only the fork happens here.
            let _entered = runtime.enter();
            super::reaper::spawn_registered(&mut command)
        })
        .ok_or_else(|| io::Error::other("the spawner thread is gone"))?
}

fn shell(launch: &Launch<'_>) -> Command {
    let mut command = Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(launch.command)
        .current_dir(launch.cwd)
        .env_clear()
        .envs(super::env::allowed(std::env::vars_os(), launch.passthrough))
        .env("TMPDIR", launch.temp_dir)
        .env(super::contain::MARK, launch.mark)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group, so a stop reaches the grandchildren too; and not killed when the
        // handle drops, because a timed-out command lives on in the pool.
        .process_group(0)
        .kill_on_drop(false);
    command
}

/// Everything the child applies to itself, built before the fork.
struct InChild {
    cgroup: Option<Arc<OwnedFd>>,
    limits: Option<Arc<SessionLimit>>,
    mounts: Option<MountPlan>,
    privileges: Privileges,
    #[cfg(target_os = "linux")]
    ruleset: Option<landlock::RulesetCreated>,
    #[cfg(not(target_os = "linux"))]
    ruleset: Option<std::convert::Infallible>,
}

#[cfg(target_os = "linux")]
#[expect(
    unsafe_code,
    reason = "a process can only confine itself, so this must run in the child between fork and exec"
)]
fn prepare_child(command: &mut Command, child: InChild) {
    let InChild {
        cgroup,
        limits,
        mounts,
        privileges,
        ruleset,
    } = child;
    let daemon = rustix::process::getpid();
    let mut ruleset = ruleset;
    // SAFETY: the closure runs in the forked child, where only async-signal-safe work is
    // sound. Everything it uses was built before the fork (the cgroup descriptor, the
    // privileges to drop, the mount plan's paths, the Landlock ruleset with all its rules);
    // each step is a few system calls (write, prctl, getppid, unshare, mount, chdir, capset,
    // landlock_restrict_self, close), and
    // `Option::take` moves a value already built. Errors are `io::Error`s from an errno (no
    // allocation) and make the spawn fail rather than run the command less confined.
    unsafe {
        command.pre_exec(move || {
            if let Some(procs) = &cgroup {
                super::contain::join_in_child(procs.as_ref())?;
            }
            if let Some(limits) = &limits {
                super::limits::apply_in_child(limits.child())?;
            }
            // Dies with the daemon even where no cgroup reaches it. If the daemon died
            // before this line, the parent is already someone else: do not run at all.
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
            if rustix::process::getppid() != Some(daemon) {
                return Err(io::ErrorKind::BrokenPipe.into());
            }
            // Mounting needs the capabilities the next step drops.
            if let Some(mounts) = &mounts {
                mounts.apply()?;
            }
            privileges.apply()?;
            if let Some(ruleset) = ruleset.take() {
                ruleset
                    .restrict_self()
                    .map_err(|_| io::Error::from(io::ErrorKind::PermissionDenied))?;
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn prepare_child(_command: &mut Command, _child: InChild) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_is_cleared_and_tmpdir_is_private() {
        let launch = Launch {
            command: "true",
            cwd: Path::new("/w"),
            temp_dir: Path::new("/t"),
            confine_to: None,
            cgroup: None,
            limits: None,
            mark: "o/1",
            mounts: None,
            passthrough: &[],
        };
        let command = shell(&launch);
        let envs: Vec<_> = command.as_std().get_envs().collect();
        for name in super::super::env::WITHHELD {
            assert!(
                !envs.iter().any(|(key, _)| *key == name),
                "{name} reaches the command"
            );
        }
        assert!(envs.contains(&("TMPDIR".as_ref(), Some("/t".as_ref()))));
        assert!(envs.contains(&("CODARIS_TASK".as_ref(), Some("o/1".as_ref()))));
    }
}
