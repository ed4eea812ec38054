//! A session cannot exhaust the machine: at most `tools.session_pids_max` processes and
//! `tools.session_memory_max` bytes of memory (swap included) for everything its commands run.
//!
//! Each limit is kept by the strongest mechanism the machine offers, chosen per controller:
//!
//! - **cgroup v2**: `pids.max`, `memory.max` and `memory.swap.max = 0` on the session's own
//!   cgroup (`contain.rs`), where the controller can be enabled in the daemon's subtree.
//! - **cgroup v1**: a session cgroup `s-<n>` beneath `codaris-<owner>-<pid>/` in the `pids`
//!   or `memory` hierarchy (`pids.max`; `memory.limit_in_bytes` and, where swap accounting
//!   is on, `memory.memsw.limit_in_bytes`), joined between fork and exec like the v2 one:
//!   its `cgroup.procs` is opened before the fork and the child makes one `write`. A hybrid
//!   machine mounts the controllers there and leaves the cgroup2 mount without them.
//! - **rlimits** in the child, where neither is delegated: `RLIMIT_NPROC` counts every
//!   process of the *user*, not the session, and the kernel does not apply it to root at
//!   all; `RLIMIT_DATA` bounds each process's heap, not the session's sum. `RLIMIT_AS` is
//!   not used: a JVM (Nextflow) reserves far more address space than it touches.
//!
//! When a command ends, the session's counters (`pids.events` `max`, `memory.events` or
//! `memory.oom_control` `oom_kill`) say whether it hit a limit; if so the result says which,
//! and the processes its group left running (a fork bomb's) are killed so that the
//! session's next command can start.

use std::fmt;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::process::{Resource, Rlimit};

use super::contain::SessionCgroup;
use super::limits_cgroup::{Controller, V1Root, V1Session, enable_v2};

/// `tools.session_pids_max` when unset: far above what a Nextflow run on one machine forks
/// (each task is a handful of processes), far below what takes a machine down.
pub const DEFAULT_PIDS_MAX: u64 = 4096;
/// `tools.session_memory_max` when unset: this share (in quarters) of physical memory, so a
/// session can use most of the machine but leaves the daemon and the desktop room.
pub const DEFAULT_MEMORY_QUARTERS: u64 = 3;

/// The limits every session gets, as configured (`memory_max: None`: the default share).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// `tools.session_pids_max`.
    pub pids_max: u64,
    /// `tools.session_memory_max`, in bytes.
    pub memory_max: Option<u64>,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            pids_max: DEFAULT_PIDS_MAX,
            memory_max: None,
        }
    }
}

/// [`DEFAULT_MEMORY_QUARTERS`] of this machine's physical memory.
pub fn default_memory_max() -> u64 {
    let info = rustix::system::sysinfo();
    let total = u64::from(info.mem_unit).saturating_mul(info.totalram as u64);
    total / 4 * DEFAULT_MEMORY_QUARTERS
}

/// What keeps one limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitMechanism {
    CgroupV2,
    CgroupV1,
    Rlimit,
}

impl LimitMechanism {
    /// The name `codaris status --json` reports: `cgroup_v2`, `cgroup_v1`, `rlimit`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CgroupV2 => "cgroup_v2",
            Self::CgroupV1 => "cgroup_v1",
            Self::Rlimit => "rlimit",
        }
    }
}

/// The limits in force and what keeps them, for `codaris status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitStatus {
    pub pids_max: u64,
    pub pids: LimitMechanism,
    pub memory_max: u64,
    pub memory: LimitMechanism,
    /// Why a weaker mechanism than cgroup v2 keeps a limit; empty when none is.
    pub reasons: Vec<String>,
}

impl fmt::Display for LimitStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let describe = |mechanism: LimitMechanism, what: &str| match mechanism {
            LimitMechanism::CgroupV2 => format!("cgroup v2 {what}"),
            LimitMechanism::CgroupV1 => format!("cgroup v1 {what}"),
            LimitMechanism::Rlimit if what == "pids" => {
                "RLIMIT_NPROC, per user and not applied to root".to_owned()
            }
            LimitMechanism::Rlimit => "RLIMIT_DATA, per process".to_owned(),
        };
        write!(
            f,
            "{} processes ({}), {} of memory ({}) per session",
            self.pids_max,
            describe(self.pids, "pids"),
            bytes(self.memory_max),
            describe(self.memory, "memory"),
        )?;
        if !self.reasons.is_empty() {
            write!(f, " ({})", self.reasons.join("; "))?;
        }
        Ok(())
    }
}

/// `1 GiB`, `512 MiB`, `1.5 GiB`.
pub fn bytes(value: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    const GIB: u64 = 1024 * MIB;
    if value >= GIB {
        let tenths = value * 10 / GIB;
        if tenths.is_multiple_of(10) {
            format!("{} GiB", tenths / 10)
        } else {
            format!("{}.{} GiB", tenths / 10, tenths % 10)
        }
    } else {
        format!("{} MiB", value / MIB)
    }
}

/// Where one controller's limit is kept for every session.
#[derive(Debug)]
enum Place {
    V2,
    V1(V1Root),
    Rlimit,
}

impl Place {
    fn mechanism(&self) -> LimitMechanism {
        match self {
            Self::V2 => LimitMechanism::CgroupV2,
            Self::V1(_) => LimitMechanism::CgroupV1,
            Self::Rlimit => LimitMechanism::Rlimit,
        }
    }
}

/// The daemon's choice of mechanism per controller, made once, and the sessions' limits.
#[derive(Debug)]
pub(crate) struct Limiter {
    pids_max: u64,
    memory_max: u64,
    pids: Place,
    memory: Place,
    reasons: Vec<String>,
}

impl Limiter {
    /// Picks each controller's place: cgroup v2 beneath `v2_root` (the daemon's subtree,
    /// when it has one), else a v1 hierarchy, else rlimits.
    pub(crate) fn new(
        limits: SessionLimits,
        owner: &str,
        cgroups: bool,
        v2_root: Option<&Path>,
    ) -> Self {
        let mut reasons = Vec::new();
        let mut place = |controller: Controller| {
            if !cgroups {
                reasons.push(format!(
                    "{}: cgroups switched off (PoolConfig::cgroups)",
                    controller.name()
                ));
                return Place::Rlimit;
            }
            let v2 = match v2_root {
                Some(root) => enable_v2(root, controller),
                None => Err("no cgroup v2 subtree".to_owned()),
            };
            let v2_error = match v2 {
                Ok(()) => return Place::V2,
                Err(error) => error,
            };
            match V1Root::create(controller, owner) {
                Ok(root) => {
                    reasons.push(format!("{}: {v2_error}", controller.name()));
                    Place::V1(root)
                }
                Err(v1_error) => {
                    reasons.push(format!("{}: {v2_error}; {v1_error}", controller.name()));
                    Place::Rlimit
                }
            }
        };
        let pids = place(Controller::Pids);
        let memory = place(Controller::Memory);
        Self {
            pids_max: limits.pids_max,
            memory_max: limits.memory_max.unwrap_or_else(default_memory_max),
            pids,
            memory,
            reasons,
        }
    }

    pub(crate) fn status(&self) -> LimitStatus {
        LimitStatus {
            pids_max: self.pids_max,
            pids: self.pids.mechanism(),
            memory_max: self.memory_max,
            memory: self.memory.mechanism(),
            reasons: self.reasons.clone(),
        }
    }

    /// Session `number`'s limits: written into its v2 cgroup (`v2`, when it has one) or its
    /// own v1 cgroups, else carried as rlimits for its commands. A limit that cannot be set
    /// falls back to the rlimit, so a session is never left without one.
    pub(crate) fn session(&self, number: u64, v2: Option<&SessionCgroup>) -> SessionLimit {
        let mut session = SessionLimit {
            pids_max: self.pids_max,
            memory_max: self.memory_max,
            v2: v2.map(|cgroup| cgroup.path().to_path_buf()),
            pids: Kept::Rlimit,
            memory: Kept::Rlimit,
            child: ChildLimits::default(),
        };
        session.pids = match (&self.pids, v2) {
            (Place::V2, Some(cgroup))
                if write_all(cgroup.path(), &[("pids.max", self.pids_max)]).is_ok() =>
            {
                Kept::V2
            }
            (Place::V1(root), _) => root
                .session(number, &[("pids.max", self.pids_max)])
                .map_or(Kept::Rlimit, Kept::V1),
            _ => Kept::Rlimit,
        };
        let memory_files = [
            ("memory.limit_in_bytes", self.memory_max),
            ("memory.memsw.limit_in_bytes", self.memory_max),
        ];
        session.memory = match (&self.memory, v2) {
            (Place::V2, Some(cgroup))
                if write_all(
                    cgroup.path(),
                    &[("memory.max", self.memory_max), ("memory.swap.max", 0)],
                )
                .is_ok() =>
            {
                Kept::V2
            }
            (Place::V1(root), _) => root
                .session(number, &memory_files)
                .map_or(Kept::Rlimit, Kept::V1),
            _ => Kept::Rlimit,
        };
        session.child = session.child_limits();
        session
    }
}

/// Writes each `(file, value)` beneath `dir`; `memory.swap.max` is absent without swap
/// accounting, which is no failure.
fn write_all(dir: &Path, files: &[(&str, u64)]) -> io::Result<()> {
    for (file, value) in files {
        match std::fs::write(dir.join(file), value.to_string()) {
            Ok(()) => {}
            Err(error) if *file == "memory.swap.max" && error.kind() == io::ErrorKind::NotFound => {
            }
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// How one of a session's limits is kept.
#[derive(Debug)]
enum Kept {
    /// In the session's v2 cgroup.
    V2,
    /// In the session's own cgroup of a v1 hierarchy.
    V1(V1Session),
    /// By an rlimit each command sets on itself.
    Rlimit,
}

/// One session's limits: its v1 cgroups (killed and removed with it), what each command
/// applies to itself, and the counters that say whether a limit was hit.
#[derive(Debug)]
pub(crate) struct SessionLimit {
    pids_max: u64,
    memory_max: u64,
    v2: Option<PathBuf>,
    pids: Kept,
    memory: Kept,
    child: ChildLimits,
}

/// How often the session hit each limit so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Hits {
    pids: u64,
    oom_kills: u64,
}

/// What a command that hit a limit is told, and whether what it left must be killed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub(crate) note: String,
    /// The process limit was hit: what the command's group left running would keep the
    /// session from forking its next command.
    pub(crate) kill_group: bool,
}

impl SessionLimit {
    /// The `cgroup.procs` listing every process of the session, for a liveness check that
    /// reads only the session's processes.
    pub(crate) fn members(&self) -> Option<PathBuf> {
        match (&self.v2, &self.pids) {
            (Some(path), _) => Some(path.join("cgroup.procs")),
            (None, Kept::V1(session)) => Some(session.path.join("cgroup.procs")),
            (None, _) => None,
        }
    }

    /// Kills every process of the session kept in its v1 cgroups (with v2, `contain.rs`
    /// kills the session's cgroup).
    pub(crate) fn kill(&self) {
        for kept in [&self.pids, &self.memory] {
            if let Kept::V1(session) = kept {
                session.kill();
            }
        }
    }

    /// The counters now.
    pub(crate) fn hits(&self) -> Hits {
        let pids = match (&self.pids, &self.v2) {
            (Kept::V2, Some(path)) => counter(&path.join("pids.events"), "max"),
            (Kept::V1(session), _) => counter(&session.path.join("pids.events"), "max"),
            _ => 0,
        };
        let oom_kills = match (&self.memory, &self.v2) {
            (Kept::V2, Some(path)) => counter(&path.join("memory.events"), "oom_kill"),
            (Kept::V1(session), _) => counter(&session.path.join("memory.oom_control"), "oom_kill"),
            _ => 0,
        };
        Hits { pids, oom_kills }
    }

    /// What to tell about a command that ran while the counters went from `before` to
    /// `after`; `None` when it hit no limit.
    pub(crate) fn verdict(&self, before: Hits, after: Hits) -> Option<Verdict> {
        let mut notes = Vec::new();
        let kill_group = after.pids > before.pids;
        if kill_group {
            notes.push(format!(
                "codaris: the command hit the session's process limit ({}, `tools.session_pids_max`); the processes it left running were killed",
                self.pids_max
            ));
        }
        if after.oom_kills > before.oom_kills {
            notes.push(format!(
                "codaris: the command hit the session's memory limit ({}, `tools.session_memory_max`); the kernel killed its largest process",
                bytes(self.memory_max)
            ));
        }
        (!notes.is_empty()).then(|| Verdict {
            note: notes.join("\n"),
            kill_group,
        })
    }

    /// What each command applies to itself between fork and exec.
    pub(crate) fn child(&self) -> &ChildLimits {
        &self.child
    }

    fn child_limits(&self) -> ChildLimits {
        let mut child = ChildLimits::default();
        for (index, kept) in [&self.pids, &self.memory].into_iter().enumerate() {
            match kept {
                Kept::V1(session) => {
                    if let Some(procs) = &session.procs
                        && let Ok(procs) = procs.try_clone()
                    {
                        child.procs.push(procs);
                    }
                }
                Kept::Rlimit if index == 0 => {
                    child.nproc = Some(lowered(Resource::Nproc, self.pids_max))
                }
                Kept::Rlimit => child.data = Some(lowered(Resource::Data, self.memory_max)),
                Kept::V2 => {}
            }
        }
        child
    }
}

/// `value` as a soft and hard limit, never above the daemon's own hard limit (raising that
/// needs a capability the child no longer has by then, and the spawn would fail).
fn lowered(resource: Resource, value: u64) -> Rlimit {
    let current = rustix::process::getrlimit(resource);
    let value = current.maximum.map_or(value, |hard| hard.min(value));
    Rlimit {
        current: Some(value),
        maximum: Some(value),
    }
}

/// The number after `key` in a flat-keyed cgroup file (`max 3`), 0 when absent.
fn counter(file: &Path, key: &str) -> u64 {
    // The session cgroup's own file (a stand-in in the tests): no link followed.
    crate::files::fence::system::read_own(file)
        .ok()
        .flatten()
        .and_then(|text| {
            text.lines().find_map(|line| {
                let (name, value) = line.split_once(' ')?;
                (name == key).then(|| value.trim().parse().ok()).flatten()
            })
        })
        .unwrap_or(0)
}

/// Everything a command applies to itself, prepared before the fork.
#[derive(Debug, Default)]
pub(crate) struct ChildLimits {
    /// The session's v1 `cgroup.procs`, one per hierarchy.
    procs: Vec<OwnedFd>,
    nproc: Option<Rlimit>,
    data: Option<Rlimit>,
}

/// In the child, between fork and exec: joins the session's v1 cgroups and sets the
/// rlimits. One system call per step, nothing allocated.
pub(crate) fn apply_in_child(limits: &ChildLimits) -> io::Result<()> {
    for procs in &limits.procs {
        super::contain::join_in_child(procs)?;
    }
    if let Some(limit) = &limits.nproc {
        rustix::process::setrlimit(Resource::Nproc, *limit)?;
    }
    if let Some(limit) = &limits.data {
        rustix::process::setrlimit(Resource::Data, *limit)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[expect(
        unsafe_code,
        reason = "the rlimits are set in the child between fork and exec, as spawn.rs does"
    )]
    fn where_no_cgroup_is_writable_a_command_carries_the_rlimits() -> io::Result<()> {
        use std::os::unix::process::CommandExt;
        let limits = ChildLimits {
            procs: Vec::new(),
            nproc: Some(lowered(Resource::Nproc, 300)),
            data: Some(lowered(Resource::Data, 256 << 20)),
        };
        let mut command = std::process::Command::new("/bin/sh");
        command.args([
            "-c",
            "grep -E '^Max (processes|data size)' /proc/self/limits",
        ]);
        // SAFETY: `apply_in_child` makes two `prlimit` system calls and allocates nothing.
        unsafe {
            command.pre_exec(move || apply_in_child(&limits));
        }
        let output = command.output()?;
        let shown = String::from_utf8_lossy(&output.stdout);
        let limit = |name: &str| {
            shown
                .lines()
                .find(|line| line.starts_with(name))
                .map(|line| {
                    line.split_whitespace()
                        .rev()
                        .skip(1)
                        .take(2)
                        .collect::<Vec<_>>()
                })
        };
        // `Max processes  300  300  processes`: soft and hard, then the unit.
        assert_eq!(limit("Max processes"), Some(vec!["300", "300"]), "{shown}");
        assert_eq!(
            limit("Max data size"),
            Some(vec!["268435456", "268435456"]),
            "{shown}"
        );
        Ok(())
    }

    #[test]
    fn without_cgroups_every_session_falls_back_to_rlimits_and_says_why() {
        let limits = SessionLimits {
            pids_max: 300,
            memory_max: Some(1 << 30),
        };
        let limiter = Limiter::new(limits, "t", false, None);
        let status = limiter.status();
        assert_eq!(
            (status.pids, status.memory),
            (LimitMechanism::Rlimit, LimitMechanism::Rlimit)
        );
        assert_eq!(status.reasons.len(), 2, "{status}");
        let session = limiter.session(1, None);
        let child = session.child();
        assert!(child.procs.is_empty());
        assert!(child.nproc.is_some_and(|limit| limit.current <= Some(300)));
        assert!(
            child
                .data
                .is_some_and(|limit| limit.current <= Some(1 << 30))
        );
        assert_eq!(session.members(), None);
    }

    #[test]
    fn sizes_read_as_a_person_writes_them() {
        assert_eq!(bytes(1 << 30), "1 GiB");
        assert_eq!(bytes(3 << 29), "1.5 GiB");
        assert_eq!(bytes(512 << 20), "512 MiB");
    }

    #[test]
    fn a_counter_is_read_by_its_key() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let file = dir.path().join("memory.oom_control");
        std::fs::write(&file, "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")?;
        assert_eq!(counter(&file, "oom_kill"), 3);
        assert_eq!(counter(&file, "max"), 0);
        assert_eq!(counter(&dir.path().join("absent"), "max"), 0);
        Ok(())
    }

    #[test]
    fn the_status_names_each_mechanism_and_why() {
        let status = LimitStatus {
            pids_max: 4096,
            pids: LimitMechanism::CgroupV1,
            memory_max: 8 << 30,
            memory: LimitMechanism::Rlimit,
            reasons: vec!["memory: not delegated".to_owned()],
        };
        assert_eq!(
            status.to_string(),
            "4096 processes (cgroup v1 pids), 8 GiB of memory (RLIMIT_DATA, per process) per session (memory: not delegated)"
        );
    }
}
