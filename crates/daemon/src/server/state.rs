//! The state directory: created private, claimed by one daemon at a time, cleaned on exit.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use codaris_paths::StateLayout;
use rustix::fs::{FlockOperation, flock};

use crate::error::StartError;

/// The exit status of a `codarisd` that finds its state directory held by another daemon
/// (`EX_TEMPFAIL`): not a failure a service manager should restart for.
pub const EXIT_ALREADY_RUNNING: u8 = 75;

/// The exit status when the ledger cannot record any more until the daemon starts again (74,
/// `EX_IOERR`): a failure the systemd unit restarts for (`Restart=on-failure`), unlike 1 and 75.
pub const EXIT_LEDGER_WEDGED: u8 = 74;

/// Proof that this process is the one daemon of a state directory.
///
/// Holds an exclusive `flock` on the pid file for as long as it lives; the kernel drops the lock
/// when the process dies, however it dies, so a crashed daemon never blocks the next one.
#[derive(Debug)]
pub struct StateClaim {
    layout: StateLayout,
    pid_file: File,
}

impl StateClaim {
    /// Creates the directory 0700 if needed and claims it, or names the daemon that holds it.
    ///
    /// A second daemon fails here before it writes anything: it opens the pid file without
    /// truncating it, and only truncates after the lock is its own.
    pub fn acquire(layout: StateLayout) -> Result<Self, StartError> {
        let dir = layout.dir().to_path_buf();
        let state_err = |source| StartError::StateDir {
            path: dir.clone(),
            source,
        };
        check_parents(&dir)?;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(state_err)?;
        // Not `metadata`: a symlink planted where the directory should be must not be followed.
        let meta = fs::symlink_metadata(&dir).map_err(state_err)?;
        if meta.file_type().is_symlink() {
            return Err(StartError::SymlinkStateDir { path: dir });
        }
        if meta.uid() != rustix::process::getuid().as_raw() {
            return Err(StartError::ForeignStateDir { path: dir });
        }
        if meta.permissions().mode() & 0o077 != 0 {
            fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).map_err(state_err)?;
        }

        let pid_path = layout.pid_file();
        let mut pid_file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&pid_path)
            .map_err(|source| StartError::StateDir {
                path: pid_path.clone(),
                source,
            })?;
        if flock(&pid_file, FlockOperation::NonBlockingLockExclusive).is_err() {
            let mut pid = String::new();
            let _ = pid_file.read_to_string(&mut pid);
            let pid = pid.trim();
            return Err(StartError::AlreadyRunning {
                pid: if pid.is_empty() { "unknown" } else { pid }.to_owned(),
                socket: layout.socket(),
            });
        }
        let io_err = |source| StartError::StateDir {
            path: pid_path.clone(),
            source,
        };
        pid_file.set_len(0).map_err(io_err)?;
        writeln!(pid_file, "{}", std::process::id()).map_err(io_err)?;
        pid_file.sync_data().map_err(io_err)?;
        Ok(Self { layout, pid_file })
    }

    pub fn layout(&self) -> &StateLayout {
        &self.layout
    }

    /// Removes a socket file left by a daemon that died. Safe because the claim proves no live
    /// daemon of this directory is listening on it.
    pub fn remove_stale_socket(&self) -> Result<bool, StartError> {
        let socket = self.layout.socket();
        match fs::remove_file(&socket) {
            Ok(()) => Ok(true),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(StartError::StateDir {
                path: socket,
                source,
            }),
        }
    }

    /// Writes a fresh random bearer token, 0600, and returns it.
    pub fn write_token(&self) -> Result<String, StartError> {
        let path = self.layout.token();
        let io_err = |source| StartError::StateDir {
            path: path.clone(),
            source,
        };
        let token = crate::secret::random_hex(32).map_err(io_err)?;
        let _ = fs::remove_file(&path);
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(io_err)?;
        file.write_all(token.as_bytes()).map_err(io_err)?;
        file.sync_data().map_err(io_err)?;
        Ok(token)
    }

    /// Removes what only a running daemon should leave: the socket, the token, the pid file.
    pub fn release(self) {
        for path in [
            self.layout.socket(),
            self.layout.token(),
            self.layout.pid_file(),
        ] {
            remove_if_present(&path);
        }
        drop(self.pid_file);
    }
}

/// Refuses a state directory that another user could replace: one of its existing parents is
/// a symlink owned by someone else, owned by another user (root aside), or writable by group or
/// others without the sticky bit (a sticky `/tmp` lets nobody rename what is ours). A group the
/// user alone stands for (their primary group) does not count as others.
fn check_parents(state: &Path) -> Result<(), StartError> {
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    let mut parent = state.parent();
    while let Some(dir) = parent {
        parent = dir.parent();
        let meta = match fs::symlink_metadata(dir) {
            Ok(meta) => meta,
            // Created below with mode 0700, by us.
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => {
                return Err(StartError::StateDir {
                    path: dir.to_path_buf(),
                    source,
                });
            }
        };
        let unsafe_parent = |why| StartError::UnsafeStateParent {
            state: state.to_path_buf(),
            parent: dir.to_path_buf(),
            why,
        };
        let owner_ok = meta.uid() == uid || meta.uid() == 0;
        if !owner_ok {
            return Err(unsafe_parent("belongs to another user"));
        }
        if meta.file_type().is_symlink() {
            // A link the user or root made (`/var -> private/var` on macOS) is theirs to trust;
            // its target is checked when the walk reaches the directories it resolves to.
            let target = fs::canonicalize(dir).map_err(|source| StartError::StateDir {
                path: dir.to_path_buf(),
                source,
            })?;
            check_parents(&target.join("x"))?;
            continue;
        }
        let mode = meta.mode();
        let sticky = mode & 0o1000 != 0;
        if mode & 0o002 != 0 && !sticky {
            return Err(unsafe_parent("is writable by every user"));
        }
        if mode & 0o020 != 0 && !sticky && meta.gid() != gid {
            return Err(unsafe_parent("is writable by its group"));
        }
    }
    Ok(())
}

fn remove_if_present(path: &Path) {
    if let Err(err) = fs::remove_file(path)
        && err.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(path = %path.display(), %err, "could not remove file on shutdown");
    }
}

/// Creates `dir` (and parents) with mode 0700.
pub fn create_private_dir(dir: &Path) -> std::io::Result<PathBuf> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    Ok(dir.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_claim_is_refused_and_names_the_pid() -> Result<(), Box<dyn std::error::Error>> {
        let temp = tempfile::tempdir()?;
        let layout = StateLayout::new(temp.path().join("state"));
        let first = StateClaim::acquire(layout.clone())?;
        let pid_before = fs::read_to_string(layout.pid_file())?;
        let second = StateClaim::acquire(layout.clone());
        match second {
            Err(StartError::AlreadyRunning { pid, socket }) => {
                assert_eq!(pid, std::process::id().to_string());
                assert_eq!(socket, layout.socket());
            }
            other => return Err(format!("expected AlreadyRunning, got {other:?}").into()),
        }
        assert_eq!(fs::read_to_string(layout.pid_file())?, pid_before);
        first.release();
        assert!(!layout.pid_file().exists());
        let third = StateClaim::acquire(layout)?;
        third.release();
        Ok(())
    }

    #[test]
    fn a_symlinked_state_dir_is_refused_and_its_target_untouched()
    -> Result<(), Box<dyn std::error::Error>> {
        let temp = tempfile::tempdir()?;
        let target = temp.path().join("victim");
        fs::create_dir(&target)?;
        let link = temp.path().join("state");
        std::os::unix::fs::symlink(&target, &link)?;
        match StateClaim::acquire(StateLayout::new(&link)) {
            Err(StartError::SymlinkStateDir { path }) => assert_eq!(path, link),
            other => return Err(format!("expected SymlinkStateDir, got {other:?}").into()),
        }
        assert_eq!(
            fs::read_dir(&target)?.count(),
            0,
            "nothing written through it"
        );
        Ok(())
    }

    #[test]
    fn a_parent_writable_by_others_is_refused() -> Result<(), Box<dyn std::error::Error>> {
        let temp = tempfile::tempdir()?;
        let open = temp.path().join("open");
        fs::create_dir(&open)?;
        fs::set_permissions(&open, fs::Permissions::from_mode(0o777))?;
        let state = open.join("deeper/state");
        match StateClaim::acquire(StateLayout::new(&state)) {
            Err(StartError::UnsafeStateParent { parent, .. }) => assert_eq!(parent, open),
            other => return Err(format!("expected UnsafeStateParent, got {other:?}").into()),
        }
        assert!(
            !open.join("deeper").exists(),
            "refused before anything is created"
        );
        // The sticky bit (as on /tmp) makes the same directory safe.
        fs::set_permissions(&open, fs::Permissions::from_mode(0o1777))?;
        StateClaim::acquire(StateLayout::new(&state))?.release();
        Ok(())
    }

    #[test]
    fn state_dir_is_private() -> Result<(), Box<dyn std::error::Error>> {
        let temp = tempfile::tempdir()?;
        let layout = StateLayout::new(temp.path().join("a/b"));
        let claim = StateClaim::acquire(layout.clone())?;
        let mode = fs::metadata(layout.dir())?.permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        let token = claim.write_token()?;
        assert_eq!(token.len(), 64);
        let mode = fs::metadata(layout.token())?.permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        claim.release();
        assert!(!layout.token().exists());
        Ok(())
    }
}
