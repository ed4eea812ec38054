//! Every process a session's commands start dies with the session and with the daemon.
//!
//! The strongest mechanism the machine allows is used:
//!
//! - **cgroup v2** where the daemon can create one beneath its own cgroup (root, or a
//!   delegated subtree): `codaris-<owner>-<pid>/` for the daemon's pools, `s-<n>/` per
//!   session. Each
//!   command joins its session's cgroup between fork and exec, so nothing it starts can leave
//!   (`setsid`, double forks, daemons included). Ending the session writes `cgroup.kill`. A
//!   watchdog (`/bin/sh` reading a pipe only the daemon holds) writes `cgroup.kill` for the
//!   whole subtree when that pipe closes, that is when the daemon exits in any way, SIGKILL
//!   included. The next start of the same daemon kills and removes a subtree left behind.
//! - else **process groups and a mark**: each command leads its own process group, killed
//!   when the session ends, and carries `CODARIS_TASK=<owner>/<session>` in its environment,
//!   which its descendants inherit: at the session's end every process of this user still
//!   carrying the session's mark is killed too (a `setsid` one included). A watchdog kills
//!   every process carrying the owner's mark when the daemon exits, and the next start
//!   whatever is left. A process that clears its environment escapes this.
//!
//! In both, each command's shell has `PR_SET_PDEATHSIG(SIGKILL)`, so it dies with the daemon
//! even where nothing else reaches it (see `spawner.rs` for why that is sound).
//!
//! A PID namespace per command is not used: its first process is the shell, and a namespace
//! whose first process exits takes every other process with it, so a server a command leaves
//! running (`background_reap`'s business) would die with the command that started it.

use std::fmt;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Which mechanism keeps a session's processes, for `codaris status` and the results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Containment {
    /// A cgroup v2 per session beneath `root`, killed with the daemon by a watchdog.
    Cgroup { root: PathBuf },
    /// Process groups only; the sentence says why no cgroup.
    ProcessGroups { reason: String },
}

impl Containment {
    /// Whether a process that leaves its group is still killed with its session.
    pub fn tracks_every_descendant(&self) -> bool {
        matches!(self, Self::Cgroup { .. })
    }
}

impl fmt::Display for Containment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cgroup { root } => write!(
                f,
                "cgroup v2 per session ({}), killed with the session and the daemon; parent-death signal",
                root.display()
            ),
            Self::ProcessGroups { reason } => write!(
                f,
                "process groups, the {MARK} environment mark and parent-death signal (no cgroup: {reason})"
            ),
        }
    }
}

/// The daemon's cgroup subtree, or why there is none.
#[derive(Debug)]
pub(crate) enum Tracker {
    Cgroup(CgroupRoot),
    ProcessGroups {
        reason: String,
        /// The write end of the mark watchdog's pipe (see [`start_mark_watchdog`]).
        _watchdog: Option<OwnedFd>,
    },
}

impl Tracker {
    /// The subtree `codaris-<owner>-<pid>` beneath the daemon's cgroup, replacing (killing) one a
    /// killed daemon of the same owner left; process groups where that cannot be.
    pub(crate) fn new(owner: &str) -> Self {
        match CgroupRoot::create(owner) {
            Ok(root) => Self::Cgroup(root),
            Err(reason) => Self::without_cgroup(owner, reason),
        }
    }

    /// Process groups and the mark, with a watchdog that kills every process carrying the
    /// owner's mark when the daemon exits.
    pub(crate) fn without_cgroup(owner: &str, reason: String) -> Self {
        Self::ProcessGroups {
            reason,
            _watchdog: start_mark_watchdog(owner).ok(),
        }
    }

    pub(crate) fn containment(&self) -> Containment {
        match self {
            Self::Cgroup(root) => Containment::Cgroup {
                root: root.path.clone(),
            },
            Self::ProcessGroups { reason, .. } => Containment::ProcessGroups {
                reason: reason.clone(),
            },
        }
    }

    /// A session's own cgroup; `None` with process groups (or if it cannot be made, which
    /// the session's commands then report through `containment`).
    pub(crate) fn session(&self) -> Option<SessionCgroup> {
        match self {
            Self::Cgroup(root) => root.session().ok(),
            Self::ProcessGroups { .. } => None,
        }
    }

    /// The daemon's cgroup v2 subtree, where the sessions' limits go when its controllers
    /// can be enabled (see `limits.rs`).
    pub(crate) fn v2_root(&self) -> Option<&Path> {
        match self {
            Self::Cgroup(root) => Some(&root.path),
            Self::ProcessGroups { .. } => None,
        }
    }
}

/// `codaris-<owner>-<pid>/` and its watchdog.
#[derive(Debug)]
pub(crate) struct CgroupRoot {
    path: PathBuf,
    next: AtomicU64,
    /// The write end of the watchdog's pipe: when it closes, the watchdog kills the subtree.
    _watchdog: OwnedFd,
}

impl CgroupRoot {
    fn create(owner: &str) -> Result<Self, String> {
        let parent = own_cgroup_dir()?;
        // One daemon runs per owner (the state claim), so any other subtree of this owner is
        // what a killed one left and its watchdog did not finish. Each run has its own name,
        // so a late watchdog of the last run cannot remove this run's subtree.
        let prefix = format!("codaris-{owner}-");
        if let Ok(entries) = crate::files::fence::system::list_kernel(&parent) {
            for entry in entries.flatten() {
                if entry.file_name().to_string_lossy().starts_with(&prefix) {
                    kill_tree(&entry.path());
                }
            }
        }
        let path = parent.join(format!("{prefix}{}", std::process::id()));
        std::fs::create_dir(&path)
            .map_err(|error| format!("cannot create {}: {error}", path.display()))?;
        let cleanup = |reason: String| {
            remove_tree(&path);
            reason
        };
        probe_join(&path).map_err(cleanup)?;
        let watchdog = start_watchdog(&path).map_err(cleanup)?;
        Ok(Self {
            path,
            next: AtomicU64::new(1),
            _watchdog: watchdog,
        })
    }

    fn session(&self) -> io::Result<SessionCgroup> {
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        let path = self.path.join(format!("s-{number}"));
        std::fs::create_dir(&path)?;
        let procs = crate::files::fence::system::open_kernel(
            &path.join("cgroup.procs"),
            std::fs::OpenOptions::new().write(true),
        )?;
        Ok(SessionCgroup {
            path,
            procs: Arc::new(procs.into()),
        })
    }
}

impl Drop for CgroupRoot {
    fn drop(&mut self) {
        // The watchdog does the same once its pipe closes (just after this); killing here
        // too makes it immediate for the processes.
        kill_cgroup(&self.path);
    }
}

/// One session's cgroup: its commands join it, and it is killed when the session ends.
#[derive(Debug)]
pub(crate) struct SessionCgroup {
    path: PathBuf,
    procs: Arc<OwnedFd>,
}

impl SessionCgroup {
    /// The open `cgroup.procs` a child writes `0` to, to join.
    pub(crate) fn procs(&self) -> Arc<OwnedFd> {
        self.procs.clone()
    }

    /// Its directory, where `limits.rs` writes the session's limits.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Kills every process of the session (every descendant of every command).
    pub(crate) fn kill(&self) {
        kill_cgroup(&self.path);
    }
}

impl Drop for SessionCgroup {
    fn drop(&mut self) {
        end_cgroup(&self.path);
    }
}

/// Kills a session's cgroup (v2, or one v1 hierarchy's) and removes it once it is empty, on a
/// thread of its own: the processes die asynchronously, and a cgroup can only be removed empty.
pub(crate) fn end_cgroup(path: &Path) {
    kill_cgroup(path);
    let path = path.to_path_buf();
    let _ = std::thread::Builder::new()
        .name("codaris-cgroup-rm".to_owned())
        .spawn(move || {
            remove_when_empty(&path, Duration::from_secs(10));
        });
}

/// In the child, between fork and exec: moves the calling process into the cgroup whose
/// `cgroup.procs` is open as `procs`. One `write`, nothing allocated.
pub(crate) fn join_in_child(procs: impl AsFd) -> io::Result<()> {
    rustix::io::write(procs, b"0")?;
    Ok(())
}

/// The daemon's own cgroup v2 directory: the `0::` line of `/proc/self/cgroup` beneath the
/// cgroup2 mount of `/proc/self/mountinfo` (also on a hybrid v1/v2 machine).
fn own_cgroup_dir() -> Result<PathBuf, String> {
    let mounts = crate::files::fence::system::read_kernel(Path::new("/proc/self/mountinfo"))
        .map_err(|error| format!("cannot read /proc/self/mountinfo: {error}"))?;
    let (mount_root, mount_point) =
        cgroup2_mount(&mounts).ok_or_else(|| "no cgroup2 file system is mounted".to_owned())?;
    let own = crate::files::fence::system::read_kernel(Path::new("/proc/self/cgroup"))
        .map_err(|error| format!("cannot read /proc/self/cgroup: {error}"))?;
    let own = own
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .ok_or_else(|| "the daemon is in no cgroup v2".to_owned())?;
    let relative = Path::new(own)
        .strip_prefix(&mount_root)
        .map_err(|_| format!("the daemon's cgroup `{own}` is not beneath the cgroup2 mount"))?;
    let dir = mount_point.join(relative);
    if !dir.join("cgroup.procs").exists() {
        return Err(format!("{} is not a cgroup v2 directory", dir.display()));
    }
    Ok(dir)
}

/// The root and mount point of the first cgroup2 mount in a `mountinfo` text.
fn cgroup2_mount(mountinfo: &str) -> Option<(PathBuf, PathBuf)> {
    mountinfo.lines().find_map(|line| {
        let (mount, tail) = line.split_once(" - ")?;
        if tail.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        let mut fields = mount.split_whitespace().skip(3);
        let root = unescape(fields.next()?);
        let point = unescape(fields.next()?);
        Some((PathBuf::from(root), PathBuf::from(point)))
    })
}

/// `mountinfo` writes space, tab, newline and backslash as octal escapes.
pub(crate) fn unescape(field: &str) -> String {
    field
        .replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

/// Runs `/bin/true` joined to a scratch cgroup beneath `root`: a cgroup that can be created
/// cannot always be joined (a parent not delegated to this user).
#[expect(
    unsafe_code,
    reason = "joining a cgroup must happen in the child between fork and exec"
)]
fn probe_join(root: &Path) -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    let probe = root.join("probe");
    std::fs::create_dir(&probe)
        .map_err(|error| format!("cannot create {}: {error}", probe.display()))?;
    let joined = crate::files::fence::system::open_kernel(
        &probe.join("cgroup.procs"),
        std::fs::OpenOptions::new().write(true),
    )
    .map_err(|error| format!("cannot open {}/cgroup.procs: {error}", probe.display()))
    .and_then(|procs| {
        let procs = OwnedFd::from(procs);
        let mut command = Command::new("/bin/true");
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: the closure runs in the forked child and makes one `write` system call
        // on a descriptor opened before the fork; it allocates nothing.
        unsafe {
            command.pre_exec(move || join_in_child(&procs));
        }
        match command.status() {
            Ok(status) if status.success() => Ok(()),
            Ok(status) => Err(format!("a probe in {} ended {status}", probe.display())),
            Err(error) => Err(format!("cannot join {}: {error}", probe.display())),
        }
    });
    remove_when_empty(&probe, Duration::from_secs(2));
    joined
}

/// What the watchdog runs: wait for the pipe to close, kill the subtree, remove it once empty.
const WATCHDOG: &str = r#"read -r _
echo 1 > "$0/cgroup.kill" 2>/dev/null
n=0
while [ "$n" -lt 100 ] && grep -q '^populated 1' "$0/cgroup.events" 2>/dev/null; do
  sleep 0.1
  n=$((n + 1))
done
for d in "$0"/*/; do rmdir "$d" 2>/dev/null; done
rmdir "$0" 2>/dev/null
exit 0"#;

/// Starts the watchdog of `root`; returns the write end of its pipe, which only the daemon
/// holds (close-on-exec: no command inherits it).
fn start_watchdog(root: &Path) -> Result<OwnedFd, String> {
    spawn_watchdog(WATCHDOG, root.as_os_str())
}

/// `/bin/sh -c <script> <argument>` reading a pipe; the write end comes back.
pub(crate) fn spawn_watchdog(script: &str, argument: &std::ffi::OsStr) -> Result<OwnedFd, String> {
    use std::os::unix::process::CommandExt;
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|error| format!("cannot create the watchdog's pipe: {error}"))?;
    Command::new("/bin/sh")
        .arg("-c")
        .arg(script)
        .arg(argument)
        .stdin(Stdio::from(read))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Not in the daemon's group: a Ctrl-C meant for the daemon must not kill it first.
        .process_group(0)
        .spawn()
        .map_err(|error| format!("cannot start the cgroup watchdog: {error}"))?;
    Ok(write)
}

/// What the mark watchdog runs: wait for the pipe to close, then kill every process whose
/// environment carries `CODARIS_TASK=<owner>/…` (`$0`), a few rounds. It carries no mark
/// itself, nor do the `tr` and `grep` it runs.
const MARK_WATCHDOG: &str = r#"read -r _
for round in 1 2 3 4 5; do
  found=
  for p in /proc/[0-9]*; do
    if tr '\0' '\n' < "$p/environ" 2>/dev/null | grep -q "^CODARIS_TASK=$0/"; then
      kill -9 "${p#/proc/}" 2>/dev/null && found=1
    fi
  done
  [ -n "$found" ] || break
done
exit 0"#;

/// Starts the watchdog that, without a cgroup, kills what still carries `owner`'s mark when
/// the daemon exits in any way; returns the write end of its pipe.
fn start_mark_watchdog(owner: &str) -> Result<OwnedFd, String> {
    spawn_watchdog(MARK_WATCHDOG, owner.as_ref())
}

/// `cgroup.kill` (Linux 5.14), else SIGKILL to every listed process, a few rounds (a
/// process may fork while being listed).
pub(crate) fn kill_cgroup(path: &Path) {
    if std::fs::write(path.join("cgroup.kill"), "1").is_ok() {
        return;
    }
    for _ in 0..10 {
        let Ok(procs) = crate::files::fence::system::read_kernel(&path.join("cgroup.procs")) else {
            return;
        };
        let pids: Vec<_> = procs
            .lines()
            .filter_map(|line| line.trim().parse().ok())
            .filter_map(rustix::process::Pid::from_raw)
            .collect();
        if pids.is_empty() {
            return;
        }
        for pid in pids {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
}

/// Kills a whole subtree (writing `cgroup.kill` at its top kills its descendants) and
/// removes it.
fn kill_tree(path: &Path) {
    kill_cgroup(path);
    if let Ok(entries) = crate::files::fence::system::list_kernel(path) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                kill_cgroup(&entry.path());
            }
        }
    }
    remove_tree(path);
}

/// Removes `path` and the cgroups beneath it, waiting a little for each to empty.
fn remove_tree(path: &Path) {
    if let Ok(entries) = crate::files::fence::system::list_kernel(path) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                remove_tree(&entry.path());
            }
        }
    }
    remove_when_empty(path, Duration::from_secs(5));
}

/// `rmdir` once the cgroup has no process left, trying for at most `limit`.
pub(crate) fn remove_when_empty(path: &Path, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        match std::fs::remove_dir(path) {
            Ok(()) => return true,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return true,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => return false,
        }
    }
}

/// The environment variable every command carries (and its descendants inherit):
/// `<owner>/<session number>`.
pub(crate) const MARK: &str = "CODARIS_TASK";

/// SIGKILLs every process of this user whose environment carries a [`MARK`] value that
/// `matches`, a few rounds (one may fork while the others die). How many were signalled.
/// Environments of other users' processes cannot be read, so they are never touched.
pub(crate) fn kill_marked(matches: impl Fn(&str) -> bool) -> usize {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let mut killed = 0;
    for _ in 0..5 {
        let Ok(entries) = crate::files::fence::system::list_kernel(Path::new("/proc")) else {
            return killed;
        };
        let marked: Vec<rustix::process::Pid> = entries
            .flatten()
            .filter_map(|entry| {
                let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
                let environ =
                    crate::files::fence::system::read_kernel_bytes(&entry.path().join("environ"))
                        .ok()?;
                (pid != me && mark_in(&environ).is_some_and(&matches))
                    .then(|| rustix::process::Pid::from_raw(pid))
                    .flatten()
            })
            .collect();
        if marked.is_empty() {
            break;
        }
        for pid in marked {
            if rustix::process::kill_process(pid, rustix::process::Signal::KILL).is_ok() {
                killed += 1;
            }
        }
    }
    killed
}

/// The [`MARK`] value in a `/proc/<pid>/environ` (NUL-separated `NAME=value` entries).
fn mark_in(environ: &[u8]) -> Option<&str> {
    environ
        .split(|byte| *byte == 0)
        .find_map(|entry| entry.strip_prefix(MARK.as_bytes())?.strip_prefix(b"="))
        .and_then(|value| std::str::from_utf8(value).ok())
}

/// Names the temp dirs of `owner`'s sessions: `codaris-shell-<owner>-XXXXXX`.
pub(crate) fn temp_prefix(owner: &str) -> String {
    format!("codaris-shell-{owner}-")
}

/// Removes the private temp dirs a killed daemon of `owner` left in `temp`: directories of
/// this user only, never following a symlink. How many went.
pub(crate) fn remove_leftover_temp_dirs(temp: &Path, owner: &str) -> usize {
    use std::os::unix::fs::MetadataExt;
    let prefix = temp_prefix(owner);
    let me = rustix::process::geteuid().as_raw();
    let Ok(entries) = crate::files::fence::system::list_own(temp) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(&prefix))
        .filter(|entry| {
            std::fs::symlink_metadata(entry.path())
                .is_ok_and(|meta| meta.is_dir() && meta.uid() == me)
        })
        .filter(|entry| std::fs::remove_dir_all(entry.path()).is_ok())
        .count()
}

/// A short, stable name for a daemon's state directory (FNV-1a, so that it stays the same
/// across builds: the next start must find what the last one left).
pub fn owner_of(state_dir: &Path) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in state_dir.as_os_str().as_encoded_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_cgroup2_mount_of_a_hybrid_machine() {
        let mountinfo = "30 25 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n\
            35 30 0:31 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n\
            40 30 0:36 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            cgroup2_mount(mountinfo),
            Some((PathBuf::from("/"), PathBuf::from("/sys/fs/cgroup/unified")))
        );
        assert_eq!(cgroup2_mount("1 2 0:3 / /x rw - ext4 /dev/sda rw\n"), None);
    }

    #[test]
    fn the_mark_watchdog_kills_the_marked_when_its_pipe_closes()
    -> Result<(), Box<dyn std::error::Error>> {
        use std::os::unix::process::CommandExt;
        let owner = format!("wd{}", std::process::id());
        let spawn = |mark: &str| {
            Command::new("sleep")
                .arg("300")
                .env(MARK, mark)
                .process_group(0)
                .spawn()
        };
        let mut marked = spawn(&format!("{owner}/7"))?;
        let mut other = spawn("someone-else/7")?;
        let watchdog = start_mark_watchdog(&owner)?;
        drop(watchdog);
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = marked.try_wait()? {
                break Some(status);
            }
            if Instant::now() > deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let unmarked_alive = other.try_wait()?.is_none();
        let _ = other.kill();
        let _ = other.wait();
        let _ = marked.kill();
        assert!(
            status.is_some(),
            "the marked sleep outlived the watchdog's pipe"
        );
        assert!(unmarked_alive, "an unmarked process was killed");
        Ok(())
    }

    #[test]
    fn finds_the_mark_among_the_environment() {
        assert_eq!(mark_in(b"A=1\0CODARIS_TASK=ab/3\0B=2\0"), Some("ab/3"));
        assert_eq!(mark_in(b"CODARIS_TASKX=ab/3\0"), None);
        assert_eq!(mark_in(b"XCODARIS_TASK=ab/3\0"), None);
        assert_eq!(mark_in(b""), None);
    }

    #[test]
    fn the_owner_name_is_stable_and_distinct() {
        assert_eq!(owner_of(Path::new("/s")), owner_of(Path::new("/s")));
        assert_ne!(owner_of(Path::new("/s")), owner_of(Path::new("/t")));
        assert_eq!(owner_of(Path::new("/s")).len(), 16);
    }

    #[test]
    fn only_this_owners_leftover_dirs_go() -> Result<(), Box<dyn std::error::Error>> {
        let temp = tempfile::tempdir()?;
        for name in ["codaris-shell-ab-x1", "codaris-shell-abc-x2", "other"] {
            std::fs::create_dir(temp.path().join(name))?;
        }
        std::os::unix::fs::symlink(
            temp.path().join("other"),
            temp.path().join("codaris-shell-ab-l"),
        )?;
        assert_eq!(remove_leftover_temp_dirs(temp.path(), "ab"), 1);
        assert!(!temp.path().join("codaris-shell-ab-x1").exists());
        assert!(temp.path().join("codaris-shell-abc-x2").exists());
        assert!(temp.path().join("other").exists());
        Ok(())
    }
}
