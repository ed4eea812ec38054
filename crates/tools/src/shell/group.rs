//! Process groups: each command leads its own, so stopping a task reaches everything it
//! spawned (a build's compilers, a `sleep` put in the background by the script).

use std::io;
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

/// Whether any process of the group still runs. A zombie does not count: in a container
/// without an init that reaps orphans, an exited grandchild stays a zombie forever, and it
/// holds no resources and cannot be killed any further.
pub(crate) fn group_alive(pgid: i32) -> bool {
    #[cfg(target_os = "linux")]
    if let Ok(entries) = crate::files::fence::system::list_kernel(std::path::Path::new("/proc")) {
        return entries.flatten().any(|entry| {
            let name = entry.file_name();
            let is_pid = name
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()));
            is_pid
                && crate::files::fence::system::read_kernel(&entry.path().join("stat"))
                    .ok()
                    .and_then(|stat| live_member_of(&stat))
                    == Some(pgid)
        });
    }
    Pid::from_raw(pgid).is_some_and(|pid| test_kill_process_group(pid).is_ok())
}

/// The group of a `/proc/<pid>/stat` line, unless the process is a zombie or dead.
fn live_member_of(stat: &str) -> Option<i32> {
    ProcStat::parse(stat)
        .filter(ProcStat::is_live)
        .map(|stat| stat.group)
}

/// Polls until the group has no live process or `limit` passes; whether it is gone.
pub(crate) async fn wait_group_gone(pgid: i32, limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if !group_alive(pgid) {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// SIGTERM, a grace period to exit cleanly, then SIGKILL for whatever is left.
pub(crate) async fn terminate_group(pgid: i32, grace: Duration) -> io::Result<()> {
    signal_group(pgid, Signal::TERM)?;
    if wait_group_gone(pgid, grace).await {
        return Ok(());
    }
    signal_group(pgid, Signal::KILL)?;
    wait_group_gone(pgid, Duration::from_secs(5)).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_group_past_an_awkward_name() {
        assert_eq!(live_member_of("12 (a b) c) S 1 4242 4242 0"), Some(4242));
        assert_eq!(live_member_of("12 (sleep) Z 1 4242 4242 0"), None);
        assert_eq!(live_member_of("garbage"), None);
    }
}
