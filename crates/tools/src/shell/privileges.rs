//! `no_new_privs` for every command and, when the daemon has any, no capabilities.
//!
//! A root daemon's commands would otherwise run with every capability: read any file despite
//! its mode, trace the daemon, load modules. They lose them between fork and exec: securebits
//! first (so that root cannot regain them at exec, which needs `CAP_SETPCAP`, dropped next),
//! then the bounding set, the ambient and inheritable sets, and last the effective and
//! permitted sets. Everything here is one system call each, async-signal-safe, allocating
//! nothing (see `spawn.rs`).

use std::io;

use rustix::thread::{CapabilitiesSecureBits, CapabilitySet, CapabilitySets};

/// What the child must shed, decided in the parent before the fork.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Privileges {
    /// The daemon has capabilities (root, or granted to its binary): drop them all.
    drop_capabilities: bool,
    /// It may change securebits and the bounding set (`CAP_SETPCAP` is effective).
    setpcap: bool,
}

/// The bits that keep a root process without capabilities across exec, locked.
const SECURE: CapabilitiesSecureBits = CapabilitiesSecureBits::NO_ROOT
    .union(CapabilitiesSecureBits::NO_ROOT_LOCKED)
    .union(CapabilitiesSecureBits::NO_SETUID_FIXUP)
    .union(CapabilitiesSecureBits::NO_SETUID_FIXUP_LOCKED)
    .union(CapabilitiesSecureBits::KEEP_CAPS_LOCKED)
    .union(CapabilitiesSecureBits::NO_CAP_AMBIENT_RAISE)
    .union(CapabilitiesSecureBits::NO_CAP_AMBIENT_RAISE_LOCKED);

impl Privileges {
    /// Looks at the daemon's own credentials.
    pub(crate) fn of_daemon() -> Self {
        let sets = rustix::thread::capabilities(None).ok();
        let root = rustix::process::geteuid().is_root();
        let held = sets.is_none_or(|sets| !(sets.effective | sets.permitted).is_empty());
        Self {
            drop_capabilities: root || held,
            setpcap: sets.is_some_and(|sets| sets.effective.contains(CapabilitySet::SETPCAP)),
        }
    }

    /// In the child, between fork and exec: one system call per step, nothing allocated.
    pub(crate) fn apply(self) -> io::Result<()> {
        if self.drop_capabilities {
            if self.setpcap {
                rustix::thread::set_capabilities_secure_bits(SECURE)?;
                for bit in 0..u64::BITS {
                    let capability = CapabilitySet::from_bits_retain(1 << bit);
                    match rustix::thread::remove_capability_from_bounding_set(capability) {
                        // EINVAL: past the last capability this kernel knows.
                        Ok(()) | Err(rustix::io::Errno::INVAL) => {}
                        Err(errno) => return Err(errno.into()),
                    }
                }
            }
            rustix::thread::clear_ambient_capability_set()?;
            rustix::thread::set_capabilities(
                None,
                CapabilitySets {
                    effective: CapabilitySet::empty(),
                    permitted: CapabilitySet::empty(),
                    inheritable: CapabilitySet::empty(),
                },
            )?;
        }
        // Also where Landlock is unavailable: no setuid program or file capability can raise
        // what the command runs with.
        rustix::thread::set_no_new_privs(true)?;
        Ok(())
    }
}
