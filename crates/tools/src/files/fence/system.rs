//! The files the daemon opens for itself, never by a path a model named: the kernel's
//! interfaces (`/proc`, `/sys/fs/cgroup`), and its own bookkeeping at a path it made (a
//! session's checklist and shared-file index in its workspace, `.git/info/exclude` of a
//! repository it adds a worktree to, the temp directory it cleans).
//!
//! Kept beside [`super::open`] so the crate has one place that opens files: a kernel read is
//! refused outside `/proc` and `/sys`, and a bookkeeping file is opened without following a
//! symlink anywhere in its path (the file as well as each directory above it), so a link a
//! command planted in a workspace or a repository cannot turn it into a read or a write of
//! something else.

use std::fs::{File, OpenOptions, ReadDir};
use std::io::{self, Read as _};
use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

/// The kernel's interfaces; nothing else is opened by [`read_kernel`] and its kin.
const KERNEL: [&str; 2] = ["/proc", "/sys"];

/// `path` when it lies in the kernel's interfaces (compared component by component, no `..`).
fn kernel(path: &Path) -> io::Result<&Path> {
    let inside = KERNEL.iter().any(|k| path.starts_with(k))
        && !path
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir));
    if inside {
        Ok(path)
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{}` is not a kernel interface", path.display()),
        ))
    }
}

/// A file under `/proc` or `/sys`, as text.
#[expect(clippy::disallowed_methods, reason = "the fence's kernel reads")]
pub(crate) fn read_kernel(path: &Path) -> io::Result<String> {
    std::fs::read_to_string(kernel(path)?)
}

/// A file under `/proc` or `/sys`, as bytes.
#[expect(clippy::disallowed_methods, reason = "the fence's kernel reads")]
pub(crate) fn read_kernel_bytes(path: &Path) -> io::Result<Vec<u8>> {
    std::fs::read(kernel(path)?)
}

/// A directory under `/proc` or `/sys`.
#[expect(clippy::disallowed_methods, reason = "the fence's kernel reads")]
pub(crate) fn list_kernel(path: &Path) -> io::Result<ReadDir> {
    std::fs::read_dir(kernel(path)?)
}

/// A file under `/proc` or `/sys` opened with `options` (a cgroup's `cgroup.procs`).
#[expect(clippy::disallowed_methods, reason = "the fence's kernel opens")]
pub(crate) fn open_kernel(path: &Path, options: &OpenOptions) -> io::Result<File> {
    options.open(kernel(path)?)
}

/// The names in a directory the daemon walks itself (the sandbox's readable set, the temp
/// directory it cleans): a listing, no file's content.
#[expect(
    clippy::disallowed_methods,
    reason = "the fence's listing of the daemon's own walks"
)]
pub(crate) fn list_own(path: &Path) -> io::Result<ReadDir> {
    std::fs::read_dir(path)
}

/// Opens a bookkeeping file at `path` (absolute, as the daemon made it) with `options`,
/// refusing it when the file or any directory above it is a symlink.
#[expect(clippy::disallowed_methods, reason = "the fence's no-follow open")]
pub(crate) fn open_own(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    let file = options
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits().cast_signed())
        .open(path)?;
    // The last component was not followed; the kernel's name for what was opened says
    // whether a directory above it was a symlink.
    let real = super::open::real_path(&file)?;
    if crate::context::normalize(path).as_deref() != Some(real.as_path()) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "`{}` leads to `{}` through a symlink, which is not followed",
                path.display(),
                real.display()
            ),
        ));
    }
    Ok(file)
}

/// A bookkeeping file's text (see [`open_own`]); `Ok(None)` when it does not exist.
pub(crate) fn read_own(path: &Path) -> io::Result<Option<String>> {
    let mut file = match open_own(path, OpenOptions::new().read(true)) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    Ok(Some(text))
}

/// A directory the daemon made for a session (its workspace), opened as a capability: what is
/// opened through it stays beneath it, a symlink leading out refused.
#[expect(
    clippy::disallowed_methods,
    reason = "the fence opens the daemon's own directories"
)]
pub(crate) fn own_dir(path: &Path) -> io::Result<cap_std::fs::Dir> {
    cap_std::fs::Dir::open_ambient_dir(path, cap_std::ambient_authority())
}

/// A directory opened as a capability only when its path, as given, is where it really is:
/// an allowed root a checkpoint is restored beneath, or a turn's checkpoint store. A symlink
/// swapped in anywhere along the path since is refused rather than followed.
pub(crate) fn exact_dir(path: &Path) -> io::Result<cap_std::fs::Dir> {
    let dir = own_dir(path)?;
    let real = super::open::real_path(&dir)?;
    if crate::context::normalize(path).as_deref() != Some(real.as_path()) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "`{}` leads to `{}` through a symlink, which is not followed",
                path.display(),
                real.display()
            ),
        ));
    }
    Ok(dir)
}

/// Creates (mode 0700, parents included) and opens a directory the daemon keeps its own files
/// in: a turn's checkpoint store under the state directory (see [`exact_dir`]).
pub(crate) fn private_dir(path: &Path) -> io::Result<cap_std::fs::Dir> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)?;
    exact_dir(path)
}

/// The text of `rel` beneath the daemon's own directory `base` (see [`own_dir`]); `Ok(None)`
/// when it does not exist.
pub(crate) fn read_beneath(base: &Path, rel: &Path) -> io::Result<Option<String>> {
    match own_dir(base)?.read_to_string(rel) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// A directory `name` directly inside the daemon's own directory `base` (a session's
/// `plans/`), opened without following a symlink at `name`, so a link a command planted there
/// cannot lead a bookkeeping read or write out of the workspace; made first (mode 0700) when
/// `create`. `Ok(None)` when it does not exist and is not to be made.
pub(crate) fn own_subdir(base: &Path, name: &str, create: bool) -> io::Result<Option<OwnedFd>> {
    use rustix::fs::{Mode, OFlags};
    let base = own_dir(base)?;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::openat(&base, name, flags, Mode::empty()) {
        Ok(fd) => return Ok(Some(fd)),
        Err(rustix::io::Errno::NOENT) if create => {}
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    match rustix::fs::mkdirat(&base, name, Mode::from_raw_mode(0o700)) {
        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
        Err(e) => return Err(e.into()),
    }
    Ok(Some(rustix::fs::openat(&base, name, flags, Mode::empty())?))
}

/// The names of the regular files directly in `dir`, as the directory lists them (a symlink
/// is not a regular file here: it is never followed to find out what it leads to).
pub(crate) fn regular_names(dir: &OwnedFd) -> io::Result<Vec<String>> {
    let listing = cap_std::fs::Dir::from_std_file(File::from(dir.try_clone()?));
    let mut names = Vec::new();
    for entry in listing.entries()? {
        let entry = entry?;
        if entry.file_type()?.is_file()
            && let Ok(name) = entry.file_name().into_string()
        {
            names.push(name);
        }
    }
    Ok(names)
}

/// The text of `name` directly in `dir`, read without following a symlink, refused unless it
/// is a regular file with one link (a hard link planted to a file elsewhere is not read), and
/// at most `limit` bytes: `Ok(None)` when it does not exist.
pub(crate) fn read_own_at(dir: &OwnedFd, name: &str, limit: u64) -> io::Result<Option<Vec<u8>>> {
    use rustix::fs::{Mode, OFlags};
    // Non-blocking, so a FIFO planted under the name cannot hold the open.
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let fd = match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let stat = rustix::fs::fstat(&fd)?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{name}` is not a regular file"),
        ));
    }
    if stat.st_nlink > 1 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("`{name}` has other hard links, which are not read"),
        ));
    }
    let size = u64::try_from(stat.st_size).unwrap_or(u64::MAX);
    if size > limit {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!("`{name}` is {size} bytes; at most {limit}"),
        ));
    }
    let mut bytes = Vec::new();
    File::from(fd).take(limit).read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

/// Replaces `name` directly in `dir` with `bytes`: written to a new file beside it (created
/// exclusively, so nothing planted is opened) and renamed over it, which replaces a symlink
/// there instead of writing where it leads. `true` when the name existed before.
pub(crate) fn replace_own_at(dir: &OwnedFd, name: &str, bytes: &[u8]) -> io::Result<bool> {
    use rustix::fs::{AtFlags, Mode, OFlags};
    use std::io::Write as _;
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let temp = format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(dir, temp.as_str(), flags, Mode::from_raw_mode(0o600))?;
    let written = File::from(fd).write_all(bytes);
    let existed = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(_) => true,
        Err(rustix::io::Errno::NOENT) => false,
        Err(e) => return Err(e.into()),
    };
    let renamed = written.and_then(|()| Ok(rustix::fs::renameat(dir, temp.as_str(), dir, name)?));
    if let Err(e) = renamed {
        // Best effort: the half-written file is ours, and the error is what matters.
        let _ = rustix::fs::unlinkat(dir, temp.as_str(), AtFlags::empty());
        return Err(e);
    }
    Ok(existed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_kernels_interfaces_are_kernel_paths() {
        for ok in [
            "/proc",
            "/proc/1/stat",
            "/sys/fs/cgroup/x/cgroup.procs",
            "/sys",
        ] {
            assert!(kernel(Path::new(ok)).is_ok(), "{ok}");
        }
        for refused in [
            "/procfs/x",
            "/home/u/.ssh/id_rsa",
            "/proc/../etc/shadow",
            "proc/1",
            "/system",
        ] {
            assert!(kernel(Path::new(refused)).is_err(), "{refused}");
        }
    }
}
