//! Where a session's process and memory limits live: the cgroup v2 controllers of the
//! daemon's subtree where they are enabled, else the cgroup v1 `pids` and `memory`
//! hierarchies (a hybrid machine mounts those beside a controller-less cgroup2), found from
//! `/proc/self/mountinfo` and `/proc/self/cgroup`.

use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use super::contain::{end_cgroup, kill_cgroup, remove_when_empty};

/// A resource controller a limit needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Controller {
    Pids,
    Memory,
}

impl Controller {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Pids => "pids",
            Self::Memory => "memory",
        }
    }
}

/// Switches `controller` on for the sessions beneath the daemon's cgroup v2 subtree `root`
/// (whose parent is the daemon's own cgroup): in the parent's `cgroup.subtree_control` if it
/// is not on there yet (refused where the parent holds processes and is not the root, or is
/// not delegated), then in `root`'s. Whether the sessions get it.
pub(crate) fn enable_v2(root: &Path, controller: Controller) -> Result<(), String> {
    let name = controller.name();
    let listed = |dir: &Path| {
        crate::files::fence::system::read_kernel(&dir.join("cgroup.controllers"))
            .is_ok_and(|list| list.split_whitespace().any(|c| c == name))
    };
    if !listed(root)
        && let Some(parent) = root.parent()
    {
        if !listed(parent) {
            return Err(format!(
                "the cgroup2 mount has no {name} controller at {}",
                parent.display()
            ));
        }
        std::fs::write(parent.join("cgroup.subtree_control"), format!("+{name}")).map_err(
            |error| {
                format!(
                    "cannot enable {name} in {}/cgroup.subtree_control: {error}",
                    parent.display()
                )
            },
        )?;
    }
    std::fs::write(root.join("cgroup.subtree_control"), format!("+{name}")).map_err(|error| {
        format!(
            "cannot enable {name} in {}/cgroup.subtree_control: {error}",
            root.display()
        )
    })
}

/// `codaris-<owner>-<pid>/` in one cgroup v1 hierarchy, beneath the daemon's own cgroup there.
#[derive(Debug)]
pub(crate) struct V1Root {
    path: PathBuf,
    /// The write end of its watchdog's pipe (see [`V1_WATCHDOG`]).
    _watchdog: OwnedFd,
}

/// What a v1 subtree's watchdog runs once the daemon exits in any way (its pipe closes):
/// kill what is left in it (the cgroup v2 watchdog or the parent-death signal usually did)
/// and remove it, so that a killed daemon whose state is never used again leaves no cgroup.
const V1_WATCHDOG: &str = r#"read -r _
for round in 1 2 3 4 5 6 7 8 9 10; do
  for p in $(cat "$0"/*/cgroup.procs "$0"/cgroup.procs 2>/dev/null); do
    kill -9 "$p" 2>/dev/null
  done
  for d in "$0"/*/; do rmdir "$d" 2>/dev/null; done
  rmdir "$0" 2>/dev/null && exit 0
  [ -d "$0" ] || exit 0
  sleep 0.2
done
exit 0"#;

impl V1Root {
    /// Creates the subtree, first killing and removing any `codaris-<owner>-*` a killed daemon
    /// of the same owner left there.
    pub(crate) fn create(controller: Controller, owner: &str) -> Result<Self, String> {
        let name = controller.name();
        let mounts = crate::files::fence::system::read_kernel(Path::new("/proc/self/mountinfo"))
            .map_err(|error| format!("cannot read /proc/self/mountinfo: {error}"))?;
        let own = crate::files::fence::system::read_kernel(Path::new("/proc/self/cgroup"))
            .map_err(|error| format!("cannot read /proc/self/cgroup: {error}"))?;
        let parent = v1_dir(&mounts, &own, name)
            .ok_or_else(|| format!("no cgroup v1 {name} hierarchy is mounted"))?;
        let prefix = format!("codaris-{owner}-");
        if let Ok(entries) = crate::files::fence::system::list_kernel(&parent) {
            for entry in entries.flatten() {
                if entry.file_name().to_string_lossy().starts_with(&prefix) {
                    remove_v1_tree(&entry.path());
                }
            }
        }
        let path = parent.join(format!("{prefix}{}", std::process::id()));
        std::fs::create_dir(&path)
            .map_err(|error| format!("cannot create {}: {error}", path.display()))?;
        match super::contain::spawn_watchdog(V1_WATCHDOG, path.as_os_str()) {
            Ok(watchdog) => Ok(Self {
                path,
                _watchdog: watchdog,
            }),
            Err(reason) => {
                remove_v1_tree(&path);
                Err(reason)
            }
        }
    }

    /// A session's cgroup `s-<number>` here, its limit written (`files`, in order: a file
    /// that does not exist on this kernel is skipped), its `cgroup.procs` open for the child.
    pub(crate) fn session(&self, number: u64, files: &[(&str, u64)]) -> io::Result<V1Session> {
        let path = self.path.join(format!("s-{number}"));
        std::fs::create_dir(&path)?;
        // Dropped on an error below: killed and removed again.
        let mut made = V1Session {
            procs: None,
            path: path.clone(),
        };
        for (file, value) in files {
            match std::fs::write(path.join(file), value.to_string()) {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(error),
            }
        }
        let procs = crate::files::fence::system::open_kernel(
            &path.join("cgroup.procs"),
            std::fs::OpenOptions::new().write(true),
        )?;
        made.procs = Some(procs.into());
        Ok(made)
    }
}

impl Drop for V1Root {
    fn drop(&mut self) {
        remove_v1_tree(&self.path);
    }
}

/// One session's cgroup in a v1 hierarchy: killed and removed when dropped.
#[derive(Debug)]
pub(crate) struct V1Session {
    pub(crate) procs: Option<OwnedFd>,
    pub(crate) path: PathBuf,
}

impl V1Session {
    pub(crate) fn kill(&self) {
        kill_cgroup(&self.path);
    }
}

impl Drop for V1Session {
    fn drop(&mut self) {
        end_cgroup(&self.path);
    }
}

/// Kills what is left in a v1 subtree (v1 has no `cgroup.kill`: each listed process) and
/// removes its session cgroups and itself.
fn remove_v1_tree(path: &Path) {
    if let Ok(entries) = crate::files::fence::system::list_kernel(path) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                kill_cgroup(&entry.path());
                remove_when_empty(&entry.path(), std::time::Duration::from_secs(5));
            }
        }
    }
    kill_cgroup(path);
    remove_when_empty(path, std::time::Duration::from_secs(5));
}

/// The daemon's own directory in the v1 hierarchy of `controller`: the mount whose super
/// options name it, joined with this process's path there (`N:<controllers>:/path` in
/// `/proc/self/cgroup`) taken beneath the mount's root.
fn v1_dir(mountinfo: &str, own: &str, controller: &str) -> Option<PathBuf> {
    let (root, point) = mountinfo.lines().find_map(|line| {
        let (mount, tail) = line.split_once(" - ")?;
        let mut tail = tail.split_whitespace();
        if tail.next()? != "cgroup" {
            return None;
        }
        let options = tail.nth(1)?;
        if !options.split(',').any(|option| option == controller) {
            return None;
        }
        let mut fields = mount.split_whitespace().skip(3);
        Some((
            PathBuf::from(super::contain::unescape(fields.next()?)),
            PathBuf::from(super::contain::unescape(fields.next()?)),
        ))
    })?;
    let path = own.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let _number = parts.next()?;
        let controllers = parts.next()?;
        let path = parts.next()?;
        controllers
            .split(',')
            .any(|c| c == controller)
            .then(|| PathBuf::from(path))
    })?;
    let relative = path.strip_prefix(&root).ok()?;
    Some(point.join(relative))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "30 25 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n\
        35 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
        36 30 0:32 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n\
        37 30 0:33 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n\
        40 30 0:36 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";

    #[test]
    fn finds_the_daemons_v1_directory_of_each_controller() {
        let own = "8:pids:/\n4:memory:/process_api/abc\n1:cpu,cpuacct:/x\n0::/\n";
        assert_eq!(
            v1_dir(MOUNTINFO, own, "memory"),
            Some(PathBuf::from("/sys/fs/cgroup/memory/process_api/abc"))
        );
        assert_eq!(
            v1_dir(MOUNTINFO, own, "pids"),
            Some(PathBuf::from("/sys/fs/cgroup/pids"))
        );
        assert_eq!(
            v1_dir(MOUNTINFO, own, "cpu"),
            Some(PathBuf::from("/sys/fs/cgroup/cpu,cpuacct/x"))
        );
        assert_eq!(v1_dir(MOUNTINFO, own, "blkio"), None);
    }

    #[test]
    fn a_container_mount_root_is_taken_off_the_own_path() {
        let mountinfo = "35 30 0:31 /docker/c1 /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n";
        assert_eq!(
            v1_dir(mountinfo, "3:pids:/docker/c1/sub\n", "pids"),
            Some(PathBuf::from("/sys/fs/cgroup/pids/sub"))
        );
        assert_eq!(v1_dir(mountinfo, "3:pids:/elsewhere\n", "pids"), None);
    }
}
