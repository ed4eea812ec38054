//! Landlock: a command's writes confined to the fence, where the kernel supports it.
//!
//! Only write accesses are handled, so a command still reads what the user could read (the
//! policy decided that); it may create, change or remove files only beneath the allowed roots,
//! the session workspace and the session's private temp dir. The ruleset is built in the
//! parent, before the fork, so the child only calls `restrict_self` (see `spawn.rs`).

use std::fmt;
use std::path::PathBuf;

/// Whether commands run confined, for `codaris status` and the `run_command` result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LandlockStatus {
    /// The kernel enforces Landlock at this ABI version (the highest both it and Codaris know).
    Active(u32),
    /// Commands run unconfined; the sentence says why.
    Unsupported(String),
}

impl fmt::Display for LandlockStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Active(abi) => write!(f, "landlock active (ABI v{abi})"),
            Self::Unsupported(reason) => write!(f, "landlock unavailable: {reason}"),
        }
    }
}

/// Device files every command may write to (discarding output, a terminal).
const DEVICES: [&str; 5] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/pts",
];

#[cfg(target_os = "linux")]
mod imp {
    use landlock::{
        ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
        RulesetCreated, RulesetCreatedAttr, path_beneath_rules,
    };

    use super::{DEVICES, LandlockStatus, PathBuf};

    /// The ABIs probed, newest first. V5 is the last one adding file-system rights.
    const PROBED: [(ABI, u32); 5] = [
        (ABI::V5, 5),
        (ABI::V4, 4),
        (ABI::V3, 3),
        (ABI::V2, 2),
        (ABI::V1, 1),
    ];

    /// Asks the kernel without restricting anything: a ruleset that hard-requires every
    /// file-system right of an ABI can only be created where that ABI is supported.
    pub fn landlock_status() -> LandlockStatus {
        let mut last = String::from("no Landlock ABI accepted");
        for (abi, number) in PROBED {
            let created = Ruleset::default()
                .set_compatibility(CompatLevel::HardRequirement)
                .handle_access(AccessFs::from_all(abi))
                .and_then(Ruleset::create);
            match created {
                Ok(_) => return LandlockStatus::Active(number),
                Err(error) => last = error.to_string(),
            }
        }
        LandlockStatus::Unsupported(last)
    }

    /// A ruleset allowing writes only beneath `writable` (and to a few devices), ready for
    /// `restrict_self` in the child. `None` where the kernel has no Landlock.
    pub fn prepare(writable: &[PathBuf]) -> Option<RulesetCreated> {
        // A best-effort ruleset is "created" even where the kernel has no Landlock, and the
        // result would then claim a confinement that does not exist: ask first.
        if !matches!(landlock_status(), LandlockStatus::Active(_)) {
            return None;
        }
        let abi = ABI::V5;
        let write = AccessFs::from_write(abi);
        let dirs = writable.iter().filter_map(|path| PathFd::new(path).ok());
        let ruleset = Ruleset::default()
            .handle_access(write)
            .ok()?
            .create()
            .ok()?
            .add_rules(dirs.map(|fd| Ok::<_, landlock::RulesetError>(PathBeneath::new(fd, write))))
            .ok()?
            .add_rules(path_beneath_rules(DEVICES, write))
            .ok()?;
        Some(ruleset)
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::{LandlockStatus, PathBuf};

    pub fn landlock_status() -> LandlockStatus {
        LandlockStatus::Unsupported("Landlock is a Linux feature".to_owned())
    }

    pub fn prepare(_writable: &[PathBuf]) -> Option<std::convert::Infallible> {
        None
    }
}

pub use imp::landlock_status;
pub(crate) use imp::prepare;
