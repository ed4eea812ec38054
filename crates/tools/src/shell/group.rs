//! Process groups: each command leads its own, so stopping a task reaches everything it
//! spawned (a build's compilers, a `sleep` put in the background by the script).

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};

use super::proc_stat::ProcStat;

/// Sends `signal` to the whole group; a group that is already gone is not an error.
pub(crate) fn signal_group(pgid: i32, signal: Signal) -> io::Result<()> {
    let Some(pid) = Pid::from_raw(pgid) else {
        return Ok(());
    };
    match kill_process_group(pid, signal) {
        Ok(()) | Err(rustix::io::Errno::SRCH) => Ok(()),
        Err(errno) => Err(errno.into()),
    }
}

/// Where the processes of a command's group can be: the session's `cgroup.procs`, or, with
/// no cgroup, the daemon's descendants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Scope {
    /// The session cgroup's `cgroup.procs`: every process any of its commands started.
    pub(crate) members: Option<PathBuf>,
}

/// Whether any process of the group still runs. A zombie does not count: in a container
/// without an init that reaps orphans, an exited grandchild stays a zombie forever, and it
/// holds no resources and cannot be killed any further.
///
/// The cost does not grow with the machine: `kill(-pgid, 0)` answers "no process at all" in
/// one system call, which is the usual case once a command ended. Only when some member
/// exists are processes read, to tell a live one from a zombie: those of the session's
/// cgroup, else the daemon's descendants (every process a command starts is one: the daemon
/// is their subreaper), never every process on the machine, unless the daemon is no
/// subreaper and has no cgroup (an orphan could then be anyone's child).
pub(crate) fn group_alive(pgid: i32, scope: &Scope) -> bool {
    let Some(pid) = Pid::from_raw(pgid) else {
        return false;
    };
    match test_kill_process_group(pid) {
        Err(rustix::io::Errno::SRCH) => return false,
        Ok(()) => {}
        // It exists, but this process may not signal it (not ours): alive as far as we know.
        Err(_) => return true,
    }
    #[cfg(target_os = "linux")]
    {
        if let Some(members) = &scope.members
            // The session cgroup's own file (a stand-in in the tests): no link followed.
            && let Some(list) = crate::files::fence::system::read_own(members).ok().flatten()
        {
            return list
                .lines()
                .filter_map(|line| line.trim().parse::<i32>().ok())
                .any(|pid| is_live_member(pid, pgid));
        }
        if is_subreaper() {
            return live_descendant(pgid);
        }
        if let Ok(entries) = crate::files::fence::system::list_kernel(std::path::Path::new("/proc"))
        {
            return entries.flatten().any(|entry| {
                entry
                    .file_name()
                    .to_str()
                    .and_then(|name| name.parse::<i32>().ok())
                    .is_some_and(|pid| is_live_member(pid, pgid))
            });
        }
    }
    true
}

/// Whether `pid` is a live (not zombie) member of group `pgid`.
fn is_live_member(pid: i32, pgid: i32) -> bool {
    crate::files::fence::system::read_kernel(std::path::Path::new(&format!("/proc/{pid}/stat")))
        .ok()
        .and_then(|stat| live_member_of(&stat))
        == Some(pgid)
}

/// Whether this process adopts its descendants' orphans (`codarisd` is one; a test is not).
fn is_subreaper() -> bool {
    // The kernel answers a flag (non-zero when set), which rustix reads as a pid.
    rustix::process::child_subreaper().is_ok_and(|flag| flag.is_some())
}

/// Walks this process's descendants (`/proc/<pid>/task/<tid>/children`) for a live member
/// of `pgid`. A zombie has no children, so the walk below it ends there.
fn live_descendant(pgid: i32) -> bool {
    let mut pending = vec![rustix::process::getpid().as_raw_nonzero().get()];
    let mut first = true;
    while let Some(pid) = pending.pop() {
        if !first && is_live_member(pid, pgid) {
            return true;
        }
        first = false;
        let Ok(threads) = crate::files::fence::system::list_kernel(std::path::Path::new(&format!(
            "/proc/{pid}/task"
        ))) else {
            continue;
        };
        for thread in threads.flatten() {
            if let Ok(children) =
                crate::files::fence::system::read_kernel(&thread.path().join("children"))
            {
                pending.extend(
                    children
                        .split_ascii_whitespace()
                        .filter_map(|child| child.parse::<i32>().ok()),
                );
            }
        }
    }
    false
}

/// The group of a `/proc/<pid>/stat` line, unless the process is a zombie or dead.
fn live_member_of(stat: &str) -> Option<i32> {
    ProcStat::parse(stat)
        .filter(ProcStat::is_live)
        .map(|stat| stat.group)
}

/// Polls until the group has no live process or `limit` passes; whether it is gone.
pub(crate) async fn wait_group_gone(pgid: i32, scope: &Scope, limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if !group_alive(pgid, scope) {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// SIGTERM, a grace period to exit cleanly, then SIGKILL for whatever is left.
pub(crate) async fn terminate_group(pgid: i32, scope: &Scope, grace: Duration) -> io::Result<()> {
    signal_group(pgid, Signal::TERM)?;
    if wait_group_gone(pgid, scope, grace).await {
        return Ok(());
    }
    signal_group(pgid, Signal::KILL)?;
    wait_group_gone(pgid, scope, Duration::from_secs(5)).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child leading its own group, not waited for yet.
    fn leader(program: &str) -> std::io::Result<(std::process::Child, i32)> {
        use std::os::unix::process::CommandExt;
        let child = std::process::Command::new(program)
            .arg("30")
            .process_group(0)
            .spawn()?;
        let pgid = i32::try_from(child.id()).map_err(std::io::Error::other)?;
        Ok((child, pgid))
    }

    #[test]
    fn liveness_reads_only_the_scope_and_a_zombie_is_not_alive() -> std::io::Result<()> {
        let temp = tempfile::tempdir()?;
        let members = temp.path().join("cgroup.procs");
        let scope = Scope {
            members: Some(members.clone()),
        };
        let (mut live, pgid) = leader("sleep")?;
        std::fs::write(&members, format!("{pgid}\n"))?;
        assert!(group_alive(pgid, &scope), "a live member in the scope");
        // A process outside the scope's list is not looked for: the check reads the
        // session's processes, never the machine's.
        std::fs::write(&members, "")?;
        assert!(!group_alive(pgid, &scope), "read beyond the scope");
        live.kill()?;
        // Killed but not waited for: a zombie, which `kill(-pgid, 0)` still finds.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while super::ProcStat::read(pgid).is_ok_and(|stat| !stat.is_zombie())
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(super::ProcStat::read(pgid)?.is_zombie());
        std::fs::write(&members, format!("{pgid}\n"))?;
        assert!(!group_alive(pgid, &scope), "a zombie counted as alive");
        assert!(
            !group_alive(pgid, &Scope::default()),
            "a zombie counted as alive"
        );
        live.wait()?;
        assert!(!group_alive(pgid, &scope), "a gone group counted as alive");
        Ok(())
    }

    #[test]
    fn reads_the_group_past_an_awkward_name() {
        assert_eq!(live_member_of("12 (a b) c) S 1 4242 4242 0"), Some(4242));
        assert_eq!(live_member_of("12 (sleep) Z 1 4242 4242 0"), None);
        assert_eq!(live_member_of("garbage"), None);
    }
}
