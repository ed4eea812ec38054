//! The file system as the run readers see it ([`Files`]): the caller decides where a path may
//! lead. This crate parses; it does not decide which files a reader may open. The tools crate
//! passes one that opens beneath the allowed roots and refuses a symlink leading out of them or
//! into Codaris's secrets; [`Ambient`] opens what it is given, for callers with no fence (this
//! crate's tests and benchmarks, the offline CLI).

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

/// What an entry is; a symlink is reported as one, not followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    Other,
}

/// What a path is, its size and times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub kind: Kind,
    pub len: u64,
    pub modified: Option<SystemTime>,
    pub created: Option<SystemTime>,
}

impl Stat {
    /// From the standard library's metadata.
    pub fn of(meta: &std::fs::Metadata) -> Stat {
        let t = meta.file_type();
        Stat {
            kind: if t.is_symlink() {
                Kind::Symlink
            } else if t.is_dir() {
                Kind::Dir
            } else if t.is_file() {
                Kind::File
            } else {
                Kind::Other
            },
            len: meta.len(),
            modified: meta.modified().ok(),
            created: meta.created().ok(),
        }
    }
}

/// One entry of a directory, its [`Stat`] not following a symlink.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: OsString,
    pub path: PathBuf,
    pub stat: Stat,
}

/// Opens files for the readers. Every path is absolute.
pub trait Files: std::fmt::Debug + Send + Sync {
    /// A regular file, opened for reading (anything else is refused).
    fn open(&self, path: &Path) -> io::Result<File>;
    /// A directory, opened for reading its files relative to it, with where it really is.
    fn open_dir(&self, path: &Path) -> io::Result<(OwnedFd, PathBuf)>;
    /// A directory's entries.
    fn list(&self, path: &Path) -> io::Result<Vec<Entry>>;
    /// What `path` is, symlinks followed (as far as the implementation lets them lead).
    fn stat(&self, path: &Path) -> io::Result<Stat>;
}

/// Opens what it is given: for callers with no fence.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ambient;

impl Ambient {
    /// As the shared handle [`crate::runs::RunQuery`] keeps.
    pub fn shared() -> Arc<dyn Files> {
        Arc::new(Ambient)
    }
}

impl Files for Ambient {
    fn open(&self, path: &Path) -> io::Result<File> {
        let file = File::open(path)?;
        if !file.metadata()?.is_file() {
            return Err(io::Error::other("not a regular file"));
        }
        Ok(file)
    }

    fn open_dir(&self, path: &Path) -> io::Result<(OwnedFd, PathBuf)> {
        let real = std::fs::canonicalize(path)?;
        let fd = rustix::fs::open(
            &real,
            rustix::fs::OFlags::RDONLY
                | rustix::fs::OFlags::DIRECTORY
                | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )?;
        Ok((fd, real))
    }

    fn list(&self, path: &Path) -> io::Result<Vec<Entry>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(path)? {
            let entry = entry?;
            let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
                continue;
            };
            out.push(Entry {
                name: entry.file_name(),
                path: entry.path(),
                stat: Stat::of(&meta),
            });
        }
        Ok(out)
    }

    fn stat(&self, path: &Path) -> io::Result<Stat> {
        std::fs::metadata(path).map(|m| Stat::of(&m))
    }
}

/// Why a file derived from a directory was not opened beneath it.
#[derive(Debug, thiserror::Error)]
pub enum BeneathError {
    /// `rel` (or a symlink on its way) leads out of `base`, or through a `/proc` magic link.
    #[error("`{rel}` leads outside `{base}`")]
    Outside { rel: PathBuf, base: PathBuf },
    /// The kernel has no `openat2` (before Linux 5.6): refused rather than opened unconfined.
    #[error("`{rel}` not opened: this kernel cannot open a file confined beneath `{base}`")]
    Unsupported { rel: PathBuf, base: PathBuf },
    /// A path the caller named is itself a symlink, not followed.
    #[error("`{path}` is a symbolic link, not followed")]
    Symlink { path: PathBuf },
    /// Not a regular file (a FIFO or a device would block or never end).
    #[error("`{rel}` is not a regular file")]
    NotAFile { rel: PathBuf },
}

impl From<BeneathError> for io::Error {
    /// Kept as the error's source so the callers' `Io` variants carry it whole.
    fn from(err: BeneathError) -> io::Error {
        let kind = match err {
            BeneathError::NotAFile { .. } => io::ErrorKind::InvalidInput,
            _ => io::ErrorKind::PermissionDenied,
        };
        io::Error::new(kind, err)
    }
}

/// Opens `rel` beneath `base`, following no symlink out of it (a symlink that stays inside,
/// written relative, is followed). `base` itself is the caller's, already judged; what a
/// cloned pipeline ships under it (`nextflow_schema.json -> ~/.ssh/id_ed25519`) is not, and
/// checking a path and then opening it would race a rename, so the kernel resolves it in one
/// step (`openat2` with `RESOLVE_BENEATH`). An absolute symlink is refused even when it points
/// inside: the kernel cannot tell.
fn openat_beneath(base: &Path, rel: &Path, flags: rustix::fs::OFlags) -> io::Result<OwnedFd> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    let dir = rustix::fs::open(
        base,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let rel_path = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    // EAGAIN: a rename elsewhere raced the lookup; the kernel asks for a retry.
    let mut tries = 0;
    loop {
        match rustix::fs::openat2(&dir, rel_path, flags, Mode::empty(), resolve) {
            Ok(fd) => return Ok(fd),
            Err(rustix::io::Errno::AGAIN) if tries < 8 => tries += 1,
            Err(rustix::io::Errno::XDEV | rustix::io::Errno::LOOP) => {
                return Err(BeneathError::Outside {
                    rel: rel.to_path_buf(),
                    base: base.to_path_buf(),
                }
                .into());
            }
            Err(rustix::io::Errno::NOSYS) => {
                return Err(BeneathError::Unsupported {
                    rel: rel.to_path_buf(),
                    base: base.to_path_buf(),
                }
                .into());
            }
            Err(err) => return Err(err.into()),
        }
    }
}

/// A regular file `rel` beneath `base`, opened for reading with no symlink followed out of
/// `base` (see [`openat_beneath`]).
pub fn open_beneath(base: &Path, rel: &Path) -> io::Result<File> {
    use rustix::fs::OFlags;
    // NONBLOCK: a FIFO planted in place of the file must not hang the reader; it is refused below.
    let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK;
    let file = File::from(openat_beneath(base, rel, flags)?);
    if !file.metadata()?.is_file() {
        return Err(BeneathError::NotAFile {
            rel: rel.to_path_buf(),
        }
        .into());
    }
    Ok(file)
}

/// The whole of the regular file `rel` beneath `base`, if it has at most `limit` bytes
/// (`Ok(None)` when larger, so the caller says so in its own words).
pub fn read_beneath(base: &Path, rel: &Path, limit: u64) -> io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let file = open_beneath(base, rel)?;
    let mut bytes = Vec::new();
    // One past the limit: a file that grew after the stat is still caught.
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Ok(None);
    }
    Ok(Some(bytes))
}

/// Replaces the contents of the existing regular file `rel` beneath `base`, following no
/// symlink out of `base` on the way and none at all in the last component.
pub fn write_beneath(base: &Path, rel: &Path, bytes: &[u8]) -> io::Result<()> {
    use rustix::fs::OFlags;
    use std::io::Write;
    // NONBLOCK: a FIFO in its place fails (ENXIO) rather than waiting for a reader.
    let flags =
        OFlags::WRONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK | OFlags::NOFOLLOW;
    let mut file = File::from(openat_beneath(base, rel, flags)?);
    if !file.metadata()?.is_file() {
        return Err(BeneathError::NotAFile {
            rel: rel.to_path_buf(),
        }
        .into());
    }
    file.set_len(0)?;
    file.write_all(bytes)
}

/// The entries of the directory `rel` beneath `base` (empty `rel`: `base` itself), sorted by
/// name, with no symlink followed out of `base` to reach it; each entry's [`Stat`] is its own
/// (a symlink is reported as one). `path` is `base/rel/name`.
pub fn list_beneath(base: &Path, rel: &Path) -> io::Result<Vec<Entry>> {
    use rustix::fs::{AtFlags, OFlags};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let fd = openat_beneath(base, rel, flags)?;
    let dir_path = base.join(rel);
    let mut out = Vec::new();
    let mut dir = rustix::fs::Dir::read_from(&fd)?;
    while let Some(entry) = dir.read() {
        let entry = entry?;
        let bytes = entry.file_name().to_bytes();
        if bytes == b"." || bytes == b".." {
            continue;
        }
        let name = OsString::from(std::ffi::OsStr::from_bytes(bytes));
        // Gone since the listing (or unreadable): left out, as `read_dir` users skip it.
        let Ok(st) = rustix::fs::statat(&fd, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        let file_type = rustix::fs::FileType::from_raw_mode(st.st_mode);
        let kind = match file_type {
            rustix::fs::FileType::Symlink => Kind::Symlink,
            rustix::fs::FileType::Directory => Kind::Dir,
            rustix::fs::FileType::RegularFile => Kind::File,
            _ => Kind::Other,
        };
        // Before 1970 or out of range: no time rather than a wrong one.
        let modified = u64::try_from(st.st_mtime).ok().and_then(|secs| {
            let nanos = u32::try_from(st.st_mtime_nsec).ok()?;
            SystemTime::UNIX_EPOCH.checked_add(std::time::Duration::new(secs, nanos))
        });
        out.push(Entry {
            path: dir_path.join(&name),
            name,
            stat: Stat {
                kind,
                len: u64::try_from(st.st_size).unwrap_or(0),
                modified,
                created: None,
            },
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// A file the caller named itself (a path argument the policy has judged), opened for reading
/// without following a symlink in its last component: the judged path is the file read.
pub fn open_nofollow(path: &Path) -> io::Result<File> {
    use rustix::fs::{Mode, OFlags};
    let flags =
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK | OFlags::NOFOLLOW;
    let fd = match rustix::fs::open(path, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::LOOP) => {
            return Err(BeneathError::Symlink {
                path: path.to_path_buf(),
            }
            .into());
        }
        Err(err) => return Err(err.into()),
    };
    let file = File::from(fd);
    if !file.metadata()?.is_file() {
        return Err(BeneathError::NotAFile {
            rel: path.to_path_buf(),
        }
        .into());
    }
    Ok(file)
}
