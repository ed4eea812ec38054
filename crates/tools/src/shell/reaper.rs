//! Reaping the orphans a child subreaper adopts, without stealing anyone's exit status.
//!
//! `codarisd` is a child subreaper (`PR_SET_CHILD_SUBREAPER`): a process its commands leave
//! behind, once its parent exits, becomes the daemon's child rather than init's, so that it
//! still counts as one of the daemon's descendants. Nobody waits for such a child, so each
//! would stay a zombie. [`reap_orphans`] waits for them — only for them: a child the daemon
//! started itself is waited for by tokio (or `std`), and reaping it here would turn that
//! wait into an error. So a zombie child is reaped only if it is neither
//!
//! - in the daemon's own process group (what other crates spawn stays there), nor
//! - registered here by the shell tools (and the daemon's PreToolUse hooks, which run in a
//!   process group of their own too), which register each child they spawn, under the
//!   registry's lock, before it can exit, and unregister it once its wait returned.

use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rustix::process::{Pid, WaitOptions};

use super::proc_stat::ProcStat;

/// The shell tools' children that someone waits for. Process-wide because the adopted
/// orphans are the process's, whichever pool's commands left them.
static WAITED: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

fn waited() -> MutexGuard<'static, BTreeSet<i32>> {
    WAITED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Spawns `command` as a child someone will wait for: registered before it can exit.
pub fn spawn_registered(
    command: &mut tokio::process::Command,
) -> std::io::Result<tokio::process::Child> {
    let mut registry = waited();
    let child = command.spawn()?;
    if let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) {
        registry.insert(pid);
    }
    Ok(child)
}

/// The wait for `pid` returned: from now on a zombie of that number is nobody's.
pub fn unregister(pid: i32) {
    waited().remove(&pid);
}

/// Reaps adopted orphans whenever a child changes state, and every few seconds in case a
/// signal was coalesced. Runs until the runtime ends; where SIGCHLD cannot be watched, only
/// the periodic sweep runs.
pub async fn reap_orphans() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut children = signal(SignalKind::child()).ok();
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    loop {
        match children.as_mut() {
            Some(children) => {
                tokio::select! {
                    _ = children.recv() => {}
                    _ = tick.tick() => {}
                }
            }
            None => {
                tick.tick().await;
            }
        }
        sweep();
    }
}

/// One pass: every zombie child of this process that nobody else waits for. How many.
fn sweep() -> usize {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let own_group = rustix::process::getpgrp().as_raw_nonzero().get();
    let Ok(entries) = crate::files::fence::system::list_kernel(std::path::Path::new("/proc"))
    else {
        return 0;
    };
    // Held across the pass: a child spawned meanwhile is registered before it can be seen.
    let registry = waited();
    let mut reaped = 0;
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = crate::files::fence::system::read_kernel(&entry.path().join("stat")) else {
            continue;
        };
        let Some(zombie) = ProcStat::parse(&stat).filter(ProcStat::is_zombie) else {
            continue;
        };
        if zombie.parent != me || zombie.group == own_group || registry.contains(&pid) {
            continue;
        }
        if let Some(pid) = Pid::from_raw(pid)
            && matches!(
                rustix::process::waitpid(Some(pid), WaitOptions::NOHANG),
                Ok(Some(_))
            )
        {
            reaped += 1;
        }
    }
    reaped
}
