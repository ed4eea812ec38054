//! A command's own mount namespace: `.git` read-only, the session's services out of reach.
//!
//! Landlock grants whole hierarchies and cannot take `.git` out of a writable root, and
//! `connect()` to a named unix socket is not a Landlock right at all: with a writable root a
//! command could plant a hook that runs at the person's next `git commit`, and through the
//! session bus (`systemd-run --user`) start a program outside the sandbox. So, between fork
//! and exec, the child enters a mount namespace of its own (directly as root; otherwise inside
//! a user namespace that maps only its own uid and gid, `setgroups` denied), makes every mount
//! in it private (nothing it does propagates out), and then
//!
//! - binds each `.git` (directory or file, any case) found under the roots onto itself
//!   read-only, keeping the flags the kernel locks in a user namespace (`nosuid`, `nodev`,
//!   `noexec`, atime) as `statvfs` saw them before the fork;
//! - binds the person's startup files under `$HOME` ([`HOME_STARTUP`]: `.bashrc`, `.profile`,
//!   `.gitconfig`, …) onto themselves read-only where a root holds them (a root of `$HOME`):
//!   like a hook in `.git`, a line planted there runs at the person's next shell or `git`,
//!   outside any sandbox;
//! - mounts an empty read-only tmpfs over the runtime directories (`/run/user/<uid>`,
//!   `$XDG_RUNTIME_DIR`) and the system bus directory (`/run/dbus`), and binds `/dev/null`
//!   over the buses' sockets elsewhere and systemd's private socket;
//! - hides the machine's secrets under `/etc` ([`super::sandbox::etc_secrets`]: password
//!   hashes, sudo rules, host keys): an empty file of mode 0 bound over each file, an empty
//!   tmpfs of mode 0 over each directory, so a read fails with "Permission denied" even as
//!   root (the command holds no capability). Landlock could carve `/etc` around them too, but
//!   that turns `/etc` into some 140 rules opened for every command (+1.3 ms a command,
//!   measured), where these few mounts cost microseconds;
//! - changes into the command's directory again, so a command started inside `.git` works
//!   through the read-only mount rather than the one beneath it.
//!
//! Every path and flag is built in the parent ([`MountPlan`]); the child only makes system
//! calls. Where the kernel refuses the mechanism (user namespaces disabled, a security module
//! denying mounts in them), [`mount_status`] says why and commands are refused, not run open.
//!
//! Finding `.git` at any depth costs a walk of the roots, too much for every command: each
//! session keeps the list ([`GitDirs`]), walked when the roots change and again after each
//! command ends (off the command's path; a command that starts before that walk finished waits
//! for it). A `.git` a command creates is read-only from the next command on, not in the
//! command that created it nor in one already running beside it. The walk does not descend into
//! `.git` or through symlinks and stops after [`WALK_LIMIT`] entries; what an earlier walk found
//! stays listed while it exists, so a tree grown past the limit cannot push a known `.git` out.

use std::collections::VecDeque;
use std::ffi::CString;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// Beneath `$HOME`, files a login shell, an interactive shell or git reads code or commands from
/// later, outside any sandbox: read-only to commands where a root holds them. (`~/.config` is
/// carved out of such a root by Landlock already, `~/.ssh` hidden.)
pub const HOME_STARTUP: [&str; 13] = [
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".inputrc",
    ".pam_environment",
    ".gitconfig",
];

/// Entries a walk of the roots looks at before it stops.
pub const WALK_LIMIT: usize = 200_000;

/// Whether commands run in a mount namespace of their own, for `codaris status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MountStatus {
    /// Commands get their namespace; `user_namespace` when the daemon needs one to mount.
    Active { user_namespace: bool },
    /// The kernel refuses it: commands are refused with this reason.
    Refused(String),
    /// Not a Linux kernel: commands run without it.
    Unsupported(String),
}

impl MountStatus {
    /// Whether commands must be refused.
    pub fn refuses(&self) -> bool {
        matches!(self, Self::Refused(_))
    }
}

impl fmt::Display for MountStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Active { user_namespace } => write!(
                f,
                "mount namespace{}: `.git` read-only, runtime dir and session buses hidden",
                if *user_namespace {
                    " (in a user namespace)"
                } else {
                    ""
                }
            ),
            Self::Refused(reason) => write!(
                f,
                "mount namespace refused by the kernel ({reason}): commands are refused"
            ),
            Self::Unsupported(reason) => write!(f, "mount namespace unavailable: {reason}"),
        }
    }
}

/// What one mount in the child does to its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    /// Bind onto itself, read-only, with these flags of the mount it lies in kept.
    ReadOnly(u64),
    /// An empty read-only tmpfs over a directory.
    HideDir,
    /// `/dev/null` bound over a file (a socket).
    HideFile,
    /// An empty tmpfs of mode 0 over a directory of secrets: not even listed.
    DenyDir,
    /// An empty file of mode 0 bound over a secret file: every open fails.
    DenyFile,
}

/// One path the child mounts over, as the system call takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    path: CString,
    action: Action,
}

impl Target {
    fn new(path: &Path, action: Action) -> Option<Self> {
        let path = CString::new(path.as_os_str().as_bytes()).ok()?;
        Some(Self { path, action })
    }

    fn path(&self) -> &Path {
        Path::new(std::ffi::OsStr::from_bytes(self.path.as_bytes()))
    }
}

/// The uid and gid maps a child in a user namespace writes for itself: itself only.
#[derive(Debug, Clone)]
struct IdMaps {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

/// Everything the child does, built before the fork.
#[derive(Debug, Clone)]
pub(crate) struct MountPlan {
    user: Option<Arc<IdMaps>>,
    git: Arc<[Target]>,
    /// The person's startup files under a root ([`HOME_STARTUP`]), bound read-only.
    startup: Arc<[Target]>,
    hidden: Arc<[Target]>,
    /// The machine's secrets ([`machine_secrets`]), hidden whatever the roots.
    secrets: &'static Secrets,
    cwd: CString,
}

impl MountPlan {
    /// The plan for a command in `cwd` under `roots`, with the session's `.git` list.
    /// A hidden location that holds a root (a root beneath `/run/user/<uid>`) stays.
    pub(crate) fn new(cwd: &Path, roots: &[PathBuf], git: Arc<[Target]>) -> Option<Self> {
        let hidden: Vec<Target> = session_services()
            .iter()
            .filter(|target| !roots.iter().any(|root| root.starts_with(target.path())))
            .cloned()
            .collect();
        let startup: Vec<Target> = home_startup()
            .iter()
            .filter(|target| roots.iter().any(|root| target.path().starts_with(root)))
            .cloned()
            .collect();
        Some(Self {
            user: needs_user_namespace().then(id_maps),
            git,
            startup: startup.into(),
            hidden: hidden.into(),
            secrets: machine_secrets(),
            cwd: CString::new(cwd.as_os_str().as_bytes()).ok()?,
        })
    }
}

/// The startup files under the daemon's `$HOME` that exist (links followed: the file a shell
/// reads is the one bound), as found at its start.
fn home_startup() -> &'static [Target] {
    static STARTUP: OnceLock<Vec<Target>> = OnceLock::new();
    STARTUP.get_or_init(|| {
        std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|home| home.is_absolute())
            .map(|home| startup_targets(&home))
            .unwrap_or_default()
    })
}

/// [`HOME_STARTUP`] beneath `home` that exist, each as a read-only bind of where it really is.
fn startup_targets(home: &Path) -> Vec<Target> {
    HOME_STARTUP
        .iter()
        .filter_map(|name| std::fs::canonicalize(home.join(name)).ok())
        .filter_map(|path| {
            let flags = rustix::fs::statvfs(&path).ok()?.f_flag.bits();
            Target::new(&path, Action::ReadOnly(flags))
        })
        .collect()
}

/// Paths denied to every command, and where the child makes the empty file of mode 0 it binds
/// over the files among them.
#[derive(Debug, Default)]
pub(crate) struct Secrets {
    targets: Vec<Target>,
    /// A directory holding none of the targets, on which the child mounts a scratch tmpfs
    /// for the moment it takes to make that file (then detached: the command sees the real
    /// one), and the file's path in it. `None` (no such directory): `/dev/null` is bound
    /// over the files instead, which reads as empty rather than refused.
    scratch: Option<(CString, CString)>,
}

impl Secrets {
    /// `paths` (links followed) as targets: an empty tmpfs of mode 0 over each directory,
    /// an empty file of mode 0 over each file.
    fn new(paths: &[PathBuf]) -> Self {
        let mut targets: Vec<Target> = Vec::new();
        for secret in paths {
            let Ok(real) = std::fs::canonicalize(secret) else {
                continue;
            };
            let action = if real.is_dir() {
                Action::DenyDir
            } else {
                Action::DenyFile
            };
            if real != Path::new("/") && !targets.iter().any(|target| target.path() == real) {
                targets.extend(Target::new(&real, action));
            }
        }
        let scratch = SCRATCH_CANDIDATES
            .iter()
            .map(Path::new)
            .filter(|dir| dir.is_dir() && !dir.is_symlink())
            .find(|dir| !targets.iter().any(|target| target.path().starts_with(dir)))
            .and_then(|dir| {
                let dir_c = CString::new(dir.as_os_str().as_bytes()).ok()?;
                let file = CString::new(dir.join(".codaris-denied").as_os_str().as_bytes()).ok()?;
                Some((dir_c, file))
            });
        Self { targets, scratch }
    }
}

/// Where the scratch tmpfs may go: directories every system has that hold no `/etc` secret.
const SCRATCH_CANDIDATES: [&str; 5] = ["/tmp", "/mnt", "/var/tmp", "/media", "/srv"];

/// The secrets under `/etc` as the daemon found them at its start, each where it really is
/// (a link followed), denied to every command.
fn machine_secrets() -> &'static Secrets {
    static SECRETS: OnceLock<Secrets> = OnceLock::new();
    SECRETS.get_or_init(|| Secrets::new(&super::sandbox::etc_secrets(Path::new("/etc"))))
}

/// Mounting needs `CAP_SYS_ADMIN`; without it, a user namespace gives it.
fn needs_user_namespace() -> bool {
    !rustix::thread::capabilities(None).is_ok_and(|sets| {
        sets.effective
            .contains(rustix::thread::CapabilitySet::SYS_ADMIN)
    })
}

fn id_maps() -> Arc<IdMaps> {
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    Arc::new(IdMaps {
        uid_map: format!("{uid} {uid} 1\n").into_bytes(),
        gid_map: format!("{gid} {gid} 1\n").into_bytes(),
    })
}

/// The runtime directories and buses of the person's session and the machine's, as the
/// daemon found them at its start: hidden from every command.
fn session_services() -> &'static [Target] {
    static SERVICES: OnceLock<Vec<Target>> = OnceLock::new();
    SERVICES.get_or_init(|| {
        let uid = rustix::process::getuid().as_raw();
        let env = |name: &str| std::env::var_os(name).map(PathBuf::from);
        let mut dirs: Vec<PathBuf> = vec![
            PathBuf::from(format!("/run/user/{uid}")),
            PathBuf::from("/run/dbus"),
        ];
        dirs.extend(env("XDG_RUNTIME_DIR").filter(|dir| dir.is_absolute()));
        let mut files = vec![PathBuf::from("/run/systemd/private")];
        for name in ["DBUS_SESSION_BUS_ADDRESS", "DBUS_SYSTEM_BUS_ADDRESS"] {
            if let Ok(address) = std::env::var(name) {
                files.extend(bus_paths(&address));
            }
        }
        let dirs: Vec<PathBuf> = dirs
            .iter()
            .filter_map(|dir| std::fs::canonicalize(dir).ok())
            .filter(|dir| dir.is_dir() && dir != Path::new("/"))
            .collect();
        let files: Vec<PathBuf> = files
            .iter()
            .filter_map(|file| std::fs::canonicalize(file).ok())
            .filter(|file| !file.is_dir() && !dirs.iter().any(|dir| file.starts_with(dir)))
            .collect();
        let mut targets: Vec<Target> = Vec::new();
        for (path, action) in dirs
            .into_iter()
            .map(|dir| (dir, Action::HideDir))
            .chain(files.into_iter().map(|file| (file, Action::HideFile)))
        {
            if !targets.iter().any(|target| target.path() == path) {
                targets.extend(Target::new(&path, action));
            }
        }
        targets
    })
}

/// The socket paths of a D-Bus address (`unix:path=/run/user/1000/bus;unix:abstract=…`).
/// Abstract sockets have no path: Landlock's scoping (ABI 6) keeps commands from them.
fn bus_paths(address: &str) -> Vec<PathBuf> {
    address
        .split(';')
        .filter_map(|one| one.strip_prefix("unix:"))
        .flat_map(|keys| keys.split(','))
        .filter_map(|pair| pair.strip_prefix("path="))
        .map(PathBuf::from)
        .collect()
}

/// A session's `.git` list, walked again when its roots change or a command ended.
#[derive(Debug, Default)]
pub(crate) struct GitDirs {
    walked: Mutex<Walked>,
    /// Commands ended so far; a list walked before the last of them is stale.
    ended: AtomicU64,
}

#[derive(Debug, Default)]
struct Walked {
    roots: Vec<PathBuf>,
    /// `ended` when the walk began.
    generation: u64,
    found: Option<Arc<[Target]>>,
}

impl GitDirs {
    /// The `.git` paths under `roots`, walked now if the list is stale.
    pub(crate) fn current(&self, roots: &[PathBuf]) -> Arc<[Target]> {
        let generation = self.ended.load(Ordering::Acquire);
        let mut walked = self.walked.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = &walked.found
            && walked.roots == roots
            && walked.generation >= generation
        {
            return found.clone();
        }
        let earlier: &[Target] = match &walked.found {
            Some(found) if walked.roots == roots => found,
            _ => &[],
        };
        let found: Arc<[Target]> = find_git(roots, earlier).into();
        *walked = Walked {
            roots: roots.to_vec(),
            generation,
            found: Some(found.clone()),
        };
        found
    }

    /// A command ended: the list is stale, and is walked again on a blocking thread.
    pub(crate) fn command_ended(self: &Arc<Self>, roots: Vec<PathBuf>) {
        self.ended.fetch_add(1, Ordering::AcqRel);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let dirs = self.clone();
            drop(runtime.spawn_blocking(move || dirs.current(&roots)));
        }
    }
}

/// Every `.git` (any case, directory, file or link) beneath `roots`, breadth first, and
/// those of `earlier` that still exist; each with the flags of the mount it lies in.
fn find_git(roots: &[PathBuf], earlier: &[Target]) -> Vec<Target> {
    let mut paths: Vec<PathBuf> = Vec::new();
    let mut queue: VecDeque<PathBuf> = roots.iter().cloned().collect();
    let mut seen = 0usize;
    'walk: while let Some(dir) = queue.pop_front() {
        let Ok(entries) = crate::files::fence::system::list_own(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > WALK_LIMIT {
                break 'walk;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if entry.file_name().eq_ignore_ascii_case(".git") {
                paths.push(entry.path());
            } else if kind.is_dir() && !is_kernel(&entry.path()) {
                queue.push_back(entry.path());
            }
        }
    }
    for target in earlier {
        let path = target.path();
        if !paths.iter().any(|known| known == path) && path.symlink_metadata().is_ok() {
            paths.push(path.to_path_buf());
        }
    }
    paths
        .iter()
        .filter_map(|path| {
            // The mount a `.git` link leads to is the one bound (mount(2) follows it).
            let flags = rustix::fs::statvfs(path).ok()?.f_flag.bits();
            Target::new(path, Action::ReadOnly(flags))
        })
        .collect()
}

/// The kernel's views under a root of `/`: no `.git` there, and walking them is costly.
fn is_kernel(path: &Path) -> bool {
    ["/proc", "/sys", "/dev"]
        .iter()
        .any(|kernel| path == Path::new(kernel))
}

#[cfg(target_os = "linux")]
mod imp {
    use std::ffi::CStr;
    use std::io;

    use rustix::fs::{Mode, OFlags, StatVfsMountFlags};
    use rustix::mount::{MountFlags, MountPropagationFlags};
    use rustix::process::{DumpableBehavior, set_dumpable_behavior};
    use rustix::thread::UnshareFlags;

    use super::{Action, MountPlan, MountStatus, Secrets, Target};

    /// Asks the kernel once, by a child that builds an empty namespace the way a command's is
    /// built; the answer holds for the daemon's life.
    pub fn mount_status() -> MountStatus {
        static STATUS: std::sync::OnceLock<MountStatus> = std::sync::OnceLock::new();
        STATUS.get_or_init(probe).clone()
    }

    #[expect(
        unsafe_code,
        reason = "the probe must unshare in a child, between fork and exec"
    )]
    fn probe() -> MountStatus {
        use std::os::unix::process::CommandExt;
        let Some(plan) = MountPlan::new(std::path::Path::new("/"), &[], Vec::new().into()) else {
            return MountStatus::Refused("no plan for `/`".to_owned());
        };
        let user_namespace = plan.user.is_some();
        let mut command = std::process::Command::new("/bin/true");
        command
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        // SAFETY: as in `spawn.rs`: only system calls on values built before the fork.
        unsafe {
            command.pre_exec(move || plan.apply());
        }
        match command.status() {
            Ok(status) if status.success() => MountStatus::Active { user_namespace },
            Ok(status) => MountStatus::Refused(format!("the probe ended with {status}")),
            Err(error) => MountStatus::Refused(error.to_string()),
        }
    }

    impl MountPlan {
        /// In the child, between fork and exec: system calls only, nothing allocated.
        #[expect(
            unsafe_code,
            reason = "unshare is unsafe only with CLONE_FILES, which is not asked for"
        )]
        pub(crate) fn apply(&self) -> io::Result<()> {
            let mut flags = UnshareFlags::NEWNS;
            if self.user.is_some() {
                flags |= UnshareFlags::NEWUSER;
            }
            // SAFETY: no `CLONE_FILES`: the descriptor table stays as it is.
            unsafe { rustix::thread::unshare_unsafe(flags) }?;
            if let Some(maps) = &self.user {
                // The daemon makes itself non-dumpable (`keys.rs`), and a non-dumpable process's
                // `/proc/self` files belong to root: without this its own uid could not write its
                // maps (EACCES), and every command of a daemon not run as root would be refused.
                // Dumpable again only for these three writes (exec would make it dumpable anyway);
                // a command, Landlocked, cannot trace a process outside its domain meanwhile.
                set_dumpable_behavior(DumpableBehavior::Dumpable)?;
                write_to(c"/proc/self/setgroups", b"deny")?;
                write_to(c"/proc/self/uid_map", &maps.uid_map)?;
                write_to(c"/proc/self/gid_map", &maps.gid_map)?;
                set_dumpable_behavior(DumpableBehavior::NotDumpable)?;
            }
            rustix::mount::mount_change(
                c"/",
                MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
            )?;
            deny_files(self.secrets)?;
            for target in self
                .git
                .iter()
                .chain(self.startup.iter())
                .chain(self.hidden.iter())
                .chain(self.secrets.targets.iter())
            {
                match mount_one(target) {
                    // Gone since it was found: nothing to protect there.
                    Ok(()) | Err(rustix::io::Errno::NOENT) => {}
                    Err(errno) => return Err(errno.into()),
                }
            }
            rustix::process::chdir(self.cwd.as_c_str())?;
            Ok(())
        }
    }

    /// Binds an empty file of mode 0 over every secret file: without capabilities (dropped
    /// next) not even root may open it. The file is made on a scratch tmpfs, detached once
    /// bound, so it lives on only beneath the binds.
    fn deny_files(secrets: &Secrets) -> io::Result<()> {
        let mut files = secrets
            .targets
            .iter()
            .filter(|target| target.action == Action::DenyFile)
            .peekable();
        if files.peek().is_none() {
            return Ok(());
        }
        let Some((scratch, denied)) = &secrets.scratch else {
            for target in files {
                bind_unless_gone(c"/dev/null", &target.path)?;
            }
            return Ok(());
        };
        rustix::mount::mount(
            c"tmpfs",
            scratch.as_c_str(),
            c"tmpfs",
            MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
            c"mode=0700,size=4k",
        )?;
        let file = rustix::fs::open(
            denied.as_c_str(),
            OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        drop(file);
        for target in files {
            bind_unless_gone(denied, &target.path)?;
        }
        rustix::mount::unmount(scratch.as_c_str(), rustix::mount::UnmountFlags::DETACH)?;
        Ok(())
    }

    /// Binds `source` over `target`; a target gone since it was found needs nothing.
    fn bind_unless_gone(source: &CStr, target: &CStr) -> io::Result<()> {
        match rustix::mount::mount_bind(source, target) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(errno) => Err(errno.into()),
        }
    }

    fn write_to(path: &CStr, bytes: &[u8]) -> io::Result<()> {
        let fd = rustix::fs::open(path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())?;
        rustix::io::write(&fd, bytes)?;
        Ok(())
    }

    fn mount_one(target: &Target) -> rustix::io::Result<()> {
        let path = target.path.as_c_str();
        match target.action {
            Action::ReadOnly(found) => {
                rustix::mount::mount_bind(path, path)?;
                rustix::mount::mount_remount(
                    path,
                    MountFlags::BIND | MountFlags::RDONLY | kept(found),
                    c"",
                )
            }
            Action::HideDir => rustix::mount::mount(
                c"tmpfs",
                path,
                c"tmpfs",
                MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
                c"mode=0555,size=4k",
            ),
            Action::HideFile => rustix::mount::mount_bind(c"/dev/null", path),
            Action::DenyDir => rustix::mount::mount(
                c"tmpfs",
                path,
                c"tmpfs",
                MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
                c"mode=0000,size=4k",
            ),
            // Bound already, by `deny_files`.
            Action::DenyFile => Ok(()),
        }
    }

    /// The flags of the mount a bind came from that a remount must repeat: in a user
    /// namespace the kernel refuses to clear them, and as root clearing them would loosen it.
    pub(super) fn kept(found: u64) -> MountFlags {
        let found = StatVfsMountFlags::from_bits_retain(found);
        [
            (StatVfsMountFlags::NOSUID, MountFlags::NOSUID),
            (StatVfsMountFlags::NODEV, MountFlags::NODEV),
            (StatVfsMountFlags::NOEXEC, MountFlags::NOEXEC),
            (StatVfsMountFlags::NOATIME, MountFlags::NOATIME),
            (StatVfsMountFlags::NODIRATIME, MountFlags::NODIRATIME),
            (StatVfsMountFlags::RELATIME, MountFlags::RELATIME),
        ]
        .into_iter()
        .filter(|(seen, _)| found.contains(*seen))
        .fold(MountFlags::empty(), |flags, (_, flag)| flags | flag)
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::{MountPlan, MountStatus};

    pub fn mount_status() -> MountStatus {
        MountStatus::Unsupported("mount namespaces are a Linux feature".to_owned())
    }

    impl MountPlan {
        pub(crate) fn apply(&self) -> std::io::Result<()> {
            Ok(())
        }
    }
}

pub use imp::mount_status;

#[cfg(test)]
mod tests;
