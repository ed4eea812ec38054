//! Landlock: a command's reads and writes confined to the plan of `sandbox.rs`, where the
//! kernel supports it.
//!
//! The ruleset handles every file-system right, so whatever no grant opens is denied: reading
//! the state directory, the configuration or `~/.ssh` as much as writing outside the roots.
//! From ABI 6 it also scopes signals (a command cannot signal the daemon or any process
//! outside its own sandbox) and abstract unix sockets (it cannot connect to one created
//! outside). The ruleset is built in the parent, before the fork, so the child only calls
//! `restrict_self` (see `spawn.rs`).

use std::fmt;

/// Whether commands run confined, for `codaris status` and the `run_command` result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LandlockStatus {
    /// The kernel enforces Landlock at this ABI version (the highest both it and Codaris use).
    Active(u32),
    /// Commands run unconfined; the sentence says why.
    Unsupported(String),
}

impl LandlockStatus {
    /// Whether signals and abstract unix sockets are scoped too (ABI 6 and later).
    pub fn scopes(&self) -> bool {
        matches!(self, Self::Active(abi) if *abi >= 6)
    }
}

impl fmt::Display for LandlockStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Active(abi) if *abi >= 6 => write!(
                f,
                "landlock active (ABI v{abi}): reads and writes confined, signals and abstract sockets scoped"
            ),
            Self::Active(abi) => {
                write!(f, "landlock active (ABI v{abi}): reads and writes confined")
            }
            Self::Unsupported(reason) => write!(f, "landlock unavailable: {reason}"),
        }
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use std::os::fd::OwnedFd;
    use std::path::Path;

    use landlock::{
        ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, Ruleset, RulesetAttr,
        RulesetCreated, RulesetCreatedAttr, RulesetError, Scope, path_beneath_rules,
    };
    use rustix::fs::{CWD, FileType, Mode, OFlags, ResolveFlags};

    use super::super::sandbox::{Access as Wanted, DEVICES, Grant};
    use super::LandlockStatus;

    /// The ABI the rulesets are written for: V6 adds the scopes; V7 adds only audit flags.
    const TARGET: ABI = ABI::V6;

    /// The ABIs probed, newest first.
    const PROBED: [(ABI, u32); 6] = [
        (ABI::V6, 6),
        (ABI::V5, 5),
        (ABI::V4, 4),
        (ABI::V3, 3),
        (ABI::V2, 2),
        (ABI::V1, 1),
    ];

    /// Asks the kernel without restricting anything: a ruleset that hard-requires every
    /// right of an ABI (its scopes included) can only be created where that ABI is supported.
    pub fn landlock_status() -> LandlockStatus {
        let mut last = String::from("no Landlock ABI accepted");
        for (abi, number) in PROBED {
            let mut ruleset = Ruleset::default()
                .set_compatibility(CompatLevel::HardRequirement)
                .handle_access(AccessFs::from_all(abi));
            if number >= 6 {
                ruleset = ruleset.and_then(|r| r.scope(Scope::from_all(abi)));
            }
            match ruleset.and_then(Ruleset::create) {
                Ok(_) => return LandlockStatus::Active(number),
                Err(error) => last = error.to_string(),
            }
        }
        LandlockStatus::Unsupported(last)
    }

    /// A ruleset handling every file-system right and granting exactly `grants` (and writes
    /// to a few devices), ready for `restrict_self` in the child. `None` where the kernel has
    /// no Landlock.
    pub fn prepare(grants: &[Grant]) -> Option<RulesetCreated> {
        // A best-effort ruleset is "created" even where the kernel has no Landlock, and the
        // result would then claim a confinement that does not exist: ask first.
        let status = landlock_status();
        if !matches!(status, LandlockStatus::Active(_)) {
            return None;
        }
        let mut ruleset = Ruleset::default()
            .handle_access(AccessFs::from_all(TARGET))
            .ok()?;
        if status.scopes() {
            ruleset = ruleset.scope(Scope::from_all(TARGET)).ok()?;
        }
        let rules = grants.iter().filter_map(|grant| {
            let (fd, is_dir) = open_beneath(&grant.path)?;
            let rights = match grant.access {
                Wanted::Read => AccessFs::from_read(TARGET),
                Wanted::Write => AccessFs::from_all(TARGET),
            };
            let rights = if is_dir {
                rights
            } else {
                rights & AccessFs::from_file(TARGET)
            };
            Some(Ok::<_, RulesetError>(PathBeneath::new(fd, rights)))
        });
        ruleset
            .create()
            .ok()?
            .add_rules(rules)
            .ok()?
            .add_rules(path_beneath_rules(DEVICES, AccessFs::from_write(TARGET)))
            .ok()
    }

    /// An `O_PATH` descriptor of `path` (resolved already) and whether it is a directory.
    /// No symlink is followed anywhere along it: one swapped in since the plan was made
    /// (by a command writing beneath a root) would otherwise widen the grant to its target.
    fn open_beneath(path: &Path) -> Option<(OwnedFd, bool)> {
        let flags = OFlags::PATH | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        let fd =
            match rustix::fs::openat2(CWD, path, flags, Mode::empty(), ResolveFlags::NO_SYMLINKS) {
                Ok(fd) => fd,
                // Before Linux 5.6: the last component at least is not followed.
                Err(rustix::io::Errno::NOSYS) => {
                    rustix::fs::open(path, flags, Mode::empty()).ok()?
                }
                Err(_) => return None,
            };
        let stat = rustix::fs::fstat(&fd).ok()?;
        let kind = FileType::from_raw_mode(stat.st_mode);
        if kind == FileType::Symlink {
            return None;
        }
        Some((fd, kind == FileType::Directory))
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::super::sandbox::Grant;
    use super::LandlockStatus;

    pub fn landlock_status() -> LandlockStatus {
        LandlockStatus::Unsupported("Landlock is a Linux feature".to_owned())
    }

    pub fn prepare(_grants: &[Grant]) -> Option<std::convert::Infallible> {
        None
    }
}

pub use imp::landlock_status;
pub(crate) use imp::prepare;
