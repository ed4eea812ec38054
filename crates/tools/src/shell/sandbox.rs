//! What a confined command may read and write: the plan Landlock enforces.
//!
//! A command reads (and executes) only the allowed roots, the session workspace, its private
//! temp dir, a fixed set of system locations ([`SYSTEM_READABLE`]) and what the configuration
//! adds (`tools.sandbox_readable`, default [`default_readable`]); it writes only the roots, the
//! workspace, the temp dir, `tools.sandbox_writable` and a few devices. Writable implies
//! readable.
//!
//! Landlock grants whole hierarchies and cannot deny a path beneath a granted one. So a grant
//! that contains a protected path (the state directory, the configuration, `~/.ssh`, …: a root
//! of `$HOME`) is replaced by grants of its entries except the one leading there, recursively
//! along the path ("carving"). Entries created later directly in a carved level are not
//! readable, and symlinks there are not followed (a link planted beside the carved path must
//! not open what the carve hides). A grant that lies inside a hidden path is dropped, except
//! the session workspace and temp dir, which the pool names explicitly.

use std::path::{Path, PathBuf};

/// System locations every confined command may read and execute: the shell, its libraries,
/// the usual tools and their configuration, and the kernel's views. `/run`, `/var`, `/home`,
/// `/root`, `/tmp` and `/mnt` are not in it, and of `/dev` only [`DEVICES_READABLE`].
pub const SYSTEM_READABLE: [&str; 11] = [
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc", "/sys",
];

/// The devices a command may read. Not the rest of `/dev`: opening a block device needs no
/// capability, only its mode, so a root command could read the raw disk (`/dev/vda`) and in
/// it the state directory and the configuration. `/dev/fd` and `/dev/stdin`… lead into
/// `/proc/self`, readable already.
pub const DEVICES_READABLE: [&str; 9] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/pts",
    "/dev/ptmx",
    "/dev/shm",
];

/// The kernel's interfaces: never writable through a grant (a root of `/`, a card for `/`).
/// Writing `/sys/fs/cgroup` would let a command leave its session's cgroup, and `/proc/sys`
/// retune the machine; a write grant that contains them is carved around them (they stay
/// readable, as system locations), one inside `/proc` or `/sys` only reads, and devices are
/// writable only as [`DEVICES`] lists (or a grant inside `/dev` names).
const KERNEL: [&str; 3] = ["/proc", "/sys", "/dev"];

/// Device files every command may write to (discarding output, a terminal).
pub(crate) const DEVICES: [&str; 5] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/pts",
];

/// Beneath `/etc`, never readable by a command, even where configured or as root: password
/// hashes, sudo rules, private keys of the machine, and the SSH host keys ([`etc_secrets`]).
/// The command's mount namespace denies them (`mounts.rs`): carving `/etc` around them here
/// would cost some 140 Landlock rules a command.
pub const ETC_SECRETS: [&str; 11] = [
    "shadow",
    "shadow-",
    "gshadow",
    "gshadow-",
    "sudoers",
    "sudoers.d",
    "security/opasswd",
    "ssl/private",
    "krb5.keytab",
    "NetworkManager/system-connections",
    "wireguard",
];

/// The secrets of `etc` (the system's `/etc`) that exist: [`ETC_SECRETS`] and the SSH host
/// keys (`ssh/ssh_host_*_key`; their `.pub` halves stay readable).
pub fn etc_secrets(etc: &Path) -> Vec<PathBuf> {
    let mut secrets: Vec<PathBuf> = ETC_SECRETS
        .iter()
        .map(|name| etc.join(name))
        .filter(|path| path.symlink_metadata().is_ok())
        .collect();
    if let Ok(entries) = crate::files::fence::system::list_own(&etc.join("ssh")) {
        secrets.extend(
            entries
                .flatten()
                .filter(|entry| {
                    entry
                        .file_name()
                        .to_str()
                        .is_some_and(|name| name.starts_with("ssh_host_") && name.ends_with("_key"))
                })
                .map(|entry| entry.path()),
        );
    }
    secrets
}

/// Beneath `$HOME`, never readable by a command, even where configured: keys and the usual
/// credential stores.
pub const HOME_SECRETS: [&str; 5] = [".ssh", ".aws", ".gnupg", ".git-credentials", ".netrc"];

/// Beneath `$HOME`, cut out of any grant that contains it (a root of `$HOME`): every
/// program's configuration, Codaris's own by default included. A location inside it that is
/// configured on purpose (or git's own files, by default) stays readable; Codaris's
/// configuration file is hidden by name as well.
pub const HOME_CARVED: [&str; 1] = [".config"];

/// Beneath `$HOME`, toolchains commands commonly need to read, the default of
/// `tools.sandbox_readable` (those that exist).
pub const HOME_TOOLCHAINS: [&str; 16] = [
    ".cargo",
    ".rustup",
    ".nextflow",
    // pyenv's shims and Pythons, SDKMAN's Javas (`toolchains.rs` finds the ones in use).
    ".pyenv",
    ".sdkman",
    ".conda",
    ".condarc",
    "miniconda3",
    "anaconda3",
    "miniforge3",
    "mambaforge",
    "micromamba",
    // git stops at a configuration file it may not read ("unknown error occurred while
    // reading the configuration files"), so its own files are readable when they exist.
    ".gitconfig",
    ".config/git/config",
    ".config/git/ignore",
    ".config/git/attributes",
];

/// `tools.sandbox_readable` when the configuration does not set it: the toolchains under
/// `home` that exist on this machine.
pub fn default_readable(home: &Path) -> Vec<PathBuf> {
    HOME_TOOLCHAINS
        .iter()
        .map(|name| home.join(name))
        .filter(|path| path.exists())
        .collect()
}

/// The secrets beneath `home` ([`HOME_SECRETS`]), as paths to hide.
pub fn home_secrets(home: &Path) -> Vec<PathBuf> {
    HOME_SECRETS.iter().map(|name| home.join(name)).collect()
}

/// The configuration beneath `home` ([`HOME_CARVED`]), as paths to carve out.
pub fn home_carved(home: &Path) -> Vec<PathBuf> {
    HOME_CARVED.iter().map(|name| home.join(name)).collect()
}

/// What the daemon protects and what the configuration opens, for every session's commands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxPaths {
    /// Never readable or writable, even beneath an allowed root: the state directory, the
    /// configuration file, [`home_secrets`]. A grant inside one is dropped (the session
    /// workspace excepted).
    pub hidden: Vec<PathBuf>,
    /// Cut out of any grant that strictly contains it, but a grant inside it stands: the
    /// configuration directory (a project may keep its configuration beside it).
    pub carved: Vec<PathBuf>,
    /// Readable and executable beyond the roots (`tools.sandbox_readable`).
    pub readable: Vec<PathBuf>,
    /// Writable (and readable) beyond the roots (`tools.sandbox_writable`).
    pub writable: Vec<PathBuf>,
    /// Variables of the daemon's environment commands get beyond the allowlist
    /// (`tools.env_passthrough`; see `env.rs`).
    pub env_passthrough: Vec<String>,
}

/// How much of a hierarchy a grant opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Access {
    /// Read files, list directories, execute.
    Read,
    /// Everything `Read` allows, and create, change, remove.
    Write,
}

/// One path beneath which `access` is granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Grant {
    pub(crate) path: PathBuf,
    pub(crate) access: Access,
}

/// What one command asks for: the fence (roots, workspace), the pool's temp dir and the
/// daemon's [`SandboxPaths`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Request<'a> {
    /// The allowed roots: writable, or readable only for a program a read-only tool runs.
    pub(crate) roots: &'a [PathBuf],
    pub(crate) roots_access: Access,
    /// The session workspace and the private temp dir: writable, never dropped as hidden.
    pub(crate) own: &'a [PathBuf],
    pub(crate) paths: &'a SandboxPaths,
}

/// The grants for `request`, carved around the protected paths. Paths that do not exist
/// are left out (Landlock needs an open file to grant).
pub(crate) fn plan(request: Request<'_>) -> Vec<Grant> {
    let paths = request.paths;
    let hidden: Vec<PathBuf> = paths
        .hidden
        .iter()
        .map(|p| crate::context::resolve_existing(p))
        .collect();
    let mut cut = hidden.clone();
    cut.extend(
        paths
            .carved
            .iter()
            .map(|p| crate::context::resolve_existing(p)),
    );
    let system = SYSTEM_READABLE
        .iter()
        .chain(DEVICES_READABLE.iter())
        .map(PathBuf::from)
        .chain(resolver_config());
    let wanted = request
        .roots
        .iter()
        .map(|path| (path.clone(), request.roots_access))
        .chain(
            paths
                .writable
                .iter()
                .map(|path| (path.clone(), Access::Write)),
        )
        .map(|(path, access)| (path, access, false))
        .chain(request.own.iter().map(|p| (p.clone(), Access::Write, true)))
        .chain(system.map(|path| (path, Access::Read, false)))
        .chain(
            paths
                .readable
                .iter()
                .map(|p| (p.clone(), Access::Read, false)),
        );
    let mut cut_for_writes = cut.clone();
    cut_for_writes.extend(KERNEL.iter().map(PathBuf::from));
    let mut grants = Vec::new();
    for (path, access, own) in wanted {
        let Ok(path) = std::fs::canonicalize(&path) else {
            continue;
        };
        if !own && hidden.iter().any(|secret| path.starts_with(secret)) {
            continue;
        }
        let interface = ["/proc", "/sys"].iter().any(|dir| path.starts_with(dir));
        match access {
            Access::Write if interface => carve(&path, Access::Read, &cut, &mut grants),
            Access::Write => carve(&path, access, &cut_for_writes, &mut grants),
            Access::Read => carve(&path, access, &cut, &mut grants),
        }
    }
    grants
}

/// Grants `path` whole, or, when a protected path lies strictly beneath it, each of its
/// entries but the protected one, descending along the way to it.
fn carve(path: &Path, access: Access, cut: &[PathBuf], grants: &mut Vec<Grant>) {
    let beneath: Vec<&PathBuf> = cut
        .iter()
        .filter(|protected| protected.starts_with(path) && protected.as_path() != path)
        .collect();
    if beneath.is_empty() {
        grants.push(Grant {
            path: path.to_path_buf(),
            access,
        });
        return;
    }
    // Unreadable: grant nothing of it rather than guess.
    let Ok(entries) = crate::files::fence::system::list_own(path) else {
        return;
    };
    for entry in entries.flatten() {
        let entry_path = entry.path();
        if cut.contains(&entry_path) {
            continue;
        }
        // A symlink here could point at what is being hidden; real entries only.
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() {
            continue;
        }
        if beneath
            .iter()
            .any(|protected| protected.starts_with(&entry_path))
        {
            if kind.is_dir() {
                carve(&entry_path, access, cut, grants);
            }
            continue;
        }
        grants.push(Grant {
            path: entry_path,
            access,
        });
    }
}

/// Where `/etc/resolv.conf` leads when it is a link out of `/etc` (systemd-resolved keeps it
/// under `/run`): name resolution needs that one file, not the rest of `/run`.
fn resolver_config() -> Option<PathBuf> {
    let target = std::fs::canonicalize("/etc/resolv.conf").ok()?;
    (!target.starts_with("/etc")).then_some(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn granted(grants: &[Grant], path: &Path) -> Option<Access> {
        grants
            .iter()
            .filter(|grant| path.starts_with(&grant.path))
            .map(|grant| grant.access)
            .max()
    }

    #[test]
    fn a_root_holding_the_state_dir_is_carved_around_it() -> TestResult {
        let temp = tempfile::tempdir()?;
        let home = temp.path().canonicalize()?;
        for dir in [
            "proj/src",
            "state/sessions/s1",
            "state/ledger",
            ".ssh",
            "deep/a/b",
        ] {
            std::fs::create_dir_all(home.join(dir))?;
        }
        std::fs::write(home.join("state/token"), "t")?;
        std::fs::write(home.join("notes.txt"), "n")?;
        std::os::unix::fs::symlink(home.join("state"), home.join("link"))?;
        let paths = SandboxPaths {
            hidden: vec![home.join("state"), home.join(".ssh"), home.join("deep/a/b")],
            ..SandboxPaths::default()
        };
        let workspace = home.join("state/sessions/s1");
        let grants = plan(Request {
            roots: &[home.clone(), home.join("state")],
            own: std::slice::from_ref(&workspace),
            roots_access: Access::Write,
            paths: &paths,
        });
        assert_eq!(
            granted(&grants, &home.join("proj/src")),
            Some(Access::Write)
        );
        assert_eq!(
            granted(&grants, &home.join("notes.txt")),
            Some(Access::Write)
        );
        assert_eq!(granted(&grants, &workspace), Some(Access::Write));
        assert_eq!(
            granted(&grants, &home.join("deep/a/c")),
            None,
            "created later"
        );
        for hidden in [
            "state/token",
            "state/ledger",
            ".ssh/id",
            "deep/a/b",
            "link",
            "",
        ] {
            assert_eq!(granted(&grants, &home.join(hidden)), None, "`{hidden}`");
        }
        assert_eq!(granted(&grants, Path::new("/usr/bin")), Some(Access::Read));
        Ok(())
    }

    #[test]
    fn a_root_of_slash_writes_neither_the_kernel_nor_the_protected() -> TestResult {
        let temp = tempfile::tempdir()?;
        let state = temp.path().canonicalize()?.join("state");
        std::fs::create_dir(&state)?;
        let paths = SandboxPaths {
            hidden: vec![state.clone()],
            ..SandboxPaths::default()
        };
        let grants = plan(Request {
            roots: &[PathBuf::from("/"), PathBuf::from("/sys/fs/cgroup")],
            own: &[],
            roots_access: Access::Write,
            paths: &paths,
        });
        assert_eq!(granted(&grants, Path::new("/usr/bin")), Some(Access::Write));
        assert_eq!(granted(&grants, &state.join("token")), None);
        for interface in ["/sys/fs/cgroup/cgroup.procs", "/proc/sys/kernel"] {
            assert_eq!(
                granted(&grants, Path::new(interface)),
                Some(Access::Read),
                "{interface}"
            );
        }
        // Not even readable: a raw disk holds everything the carve hides.
        assert_eq!(granted(&grants, Path::new("/dev/vda")), None);
        // (Its writes the ruleset adds itself: `DEVICES`.)
        assert_eq!(granted(&grants, Path::new("/dev/null")), Some(Access::Read));
        Ok(())
    }

    #[test]
    fn a_carved_dir_stands_when_it_is_the_root_but_its_hidden_file_does_not() -> TestResult {
        let temp = tempfile::tempdir()?;
        let root = temp.path().canonicalize()?;
        std::fs::write(root.join("config.toml"), "key")?;
        std::fs::write(root.join("main.nf"), "x")?;
        let paths = SandboxPaths {
            hidden: vec![root.join("config.toml")],
            carved: vec![root.clone()],
            readable: vec![root.join("missing")],
            ..SandboxPaths::default()
        };
        let grants = plan(Request {
            roots: std::slice::from_ref(&root),
            own: &[],
            roots_access: Access::Write,
            paths: &paths,
        });
        assert_eq!(granted(&grants, &root.join("main.nf")), Some(Access::Write));
        assert_eq!(granted(&grants, &root.join("config.toml")), None);
        Ok(())
    }

    #[test]
    fn a_protected_path_that_does_not_exist_yet_still_matches() -> TestResult {
        let temp = tempfile::tempdir()?;
        let real = temp.path().canonicalize()?;
        std::os::unix::fs::symlink(&real, real.join("alias"))?;
        assert_eq!(
            crate::context::resolve_existing(&real.join("alias/not/yet")),
            real.join("not/yet")
        );
        Ok(())
    }

    #[test]
    fn etc_secrets_are_listed_and_etc_is_one_grant() -> TestResult {
        let temp = tempfile::tempdir()?;
        let etc = temp.path().canonicalize()?;
        std::fs::create_dir_all(etc.join("ssh"))?;
        std::fs::create_dir_all(etc.join("sudoers.d"))?;
        for file in [
            "shadow",
            "passwd",
            "ssh/ssh_host_ed25519_key",
            "ssh/ssh_host_ed25519_key.pub",
            "ssh/ssh_config",
        ] {
            std::fs::write(etc.join(file), "x")?;
        }
        let mut secrets = etc_secrets(&etc);
        secrets.sort();
        assert_eq!(
            secrets,
            vec![
                etc.join("shadow"),
                etc.join("ssh/ssh_host_ed25519_key"),
                etc.join("sudoers.d"),
            ]
        );
        // Landlock grants `/etc` whole (the mount namespace denies the secrets, `mounts.rs`):
        // one rule, not one per entry.
        let grants = plan(Request {
            roots: &[],
            own: &[],
            roots_access: Access::Write,
            paths: &SandboxPaths::default(),
        });
        assert!(
            grants
                .iter()
                .any(|grant| grant.path == Path::new("/etc") && grant.access == Access::Read)
        );
        let inside: Vec<_> = grants
            .iter()
            .filter(|grant| grant.path.starts_with("/etc") && grant.path != Path::new("/etc"))
            .collect();
        assert!(inside.is_empty(), "{inside:?}");
        Ok(())
    }

    #[test]
    fn the_defaults_name_only_what_exists() -> TestResult {
        let temp = tempfile::tempdir()?;
        std::fs::create_dir(temp.path().join(".cargo"))?;
        std::fs::write(temp.path().join(".gitconfig"), "")?;
        assert_eq!(
            default_readable(temp.path()),
            vec![temp.path().join(".cargo"), temp.path().join(".gitconfig")]
        );
        assert!(home_secrets(temp.path()).contains(&temp.path().join(".ssh")));
        Ok(())
    }
}
