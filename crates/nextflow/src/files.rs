//! The file system as the run readers see it ([`Files`]): the caller decides where a path may
//! lead. This crate parses; it does not decide which files a reader may open. The tools crate
//! passes one that opens beneath the allowed roots and refuses a symlink leading out of them or
//! into Codaris's secrets; [`Ambient`] opens what it is given, for callers with no fence (this
//! crate's tests and benchmarks, the offline CLI).

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
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
