//! Opening a file a tool reads by its path (a run's log, trace, history, a schema, a config, a
//! samplesheet): the one place in this crate that opens one.
//!
//! A path is located under the allowed root it lies in, the root opened as a capability and the
//! file opened relative to it: cap-std follows a symlink that stays beneath the root and refuses
//! one (or a `..`) leading out, at every step. Where the file really is, read back from the open
//! descriptor, is checked against the secrets (the state directory, the configuration, the
//! credentials) as well: a symlink inside a root that leads into the state directory is refused
//! by where it leads. A path derived from another (`.nextflow.log` of a launch directory) is
//! judged the same as one the model named.
//!
//! The rest of the crate cannot open a file by path any other way: `clippy.toml` disallows the
//! standard library's and tokio's opening functions outside this module, and
//! `tests::no_open_outside_the_fence` fails naming the file and line of one that slips in.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read as _};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt};
use codaris_nextflow::files::{Entry, Files, Kind, Stat};

use crate::context::{Fence, normalize};

/// Why the fence did not open a path. Each says which path, in one line.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("`{path}` is outside every allowed root")]
    Outside { path: PathBuf },
    #[error("`{path}` holds Codaris's credentials or state, which no tool may read")]
    Secret { path: PathBuf },
    #[error(
        "`{path}` leads to `{real}`, which holds Codaris's credentials or state, which no tool may read"
    )]
    LeadsToSecret { path: PathBuf, real: PathBuf },
    #[error(
        "`{path}` leads outside its allowed root through a symlink or `..`, which no tool follows"
    )]
    LeadsOut { path: PathBuf },
    #[error("`{path}` does not exist")]
    NotFound { path: PathBuf },
    #[error("`{path}` is not a regular file")]
    NotAFile { path: PathBuf },
    #[error("`{path}` is larger than {limit} bytes")]
    TooLarge { path: PathBuf, limit: u64 },
    #[error("cannot read `{path}`: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl OpenError {
    fn io(path: &Path, source: io::Error) -> OpenError {
        let path = path.to_path_buf();
        match source.kind() {
            io::ErrorKind::NotFound => OpenError::NotFound { path },
            // cap-std reports a symlink or `..` leading out of the root as permission denied.
            io::ErrorKind::PermissionDenied => OpenError::LeadsOut { path },
            _ if source.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
                OpenError::LeadsOut { path }
            }
            _ => OpenError::Io { path, source },
        }
    }

    /// As an I/O error of the same kind, for readers that speak `io::Result`.
    pub fn into_io(self) -> io::Error {
        let kind = match &self {
            OpenError::NotFound { .. } => io::ErrorKind::NotFound,
            OpenError::Io { source, .. } => source.kind(),
            _ => io::ErrorKind::PermissionDenied,
        };
        io::Error::new(kind, self)
    }
}

/// `path` located beneath its root: the root open, the path relative to it.
struct Located {
    dir: Dir,
    rel: PathBuf,
    abs: PathBuf,
}

fn locate(fence: &Fence, path: &Path) -> Result<Located, OpenError> {
    let abs = normalize(path).ok_or_else(|| OpenError::Outside {
        path: path.to_path_buf(),
    })?;
    if fence.is_secret(&abs) {
        return Err(OpenError::Secret { path: abs });
    }
    let Some((root, rel)) = fence.locate(&abs) else {
        return Err(OpenError::Outside { path: abs });
    };
    #[expect(
        clippy::disallowed_methods,
        reason = "the fence opens the allowed root itself; every other open is relative to it"
    )]
    let dir = Dir::open_ambient_dir(root, cap_std::ambient_authority())
        .map_err(|e| OpenError::io(root, e))?;
    let rel = if rel.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        rel
    };
    Ok(Located { dir, rel, abs })
}

/// Where an open descriptor really is (the kernel's name for it), refused when secret.
fn check_real(fence: &Fence, asked: &Path, fd: impl AsFd) -> Result<PathBuf, OpenError> {
    let real = real_path(fd).map_err(|e| OpenError::io(asked, e))?;
    if fence.is_secret(&real) {
        return Err(OpenError::LeadsToSecret {
            path: asked.to_path_buf(),
            real,
        });
    }
    if fence.locate(&real).is_none() {
        return Err(OpenError::LeadsOut {
            path: asked.to_path_buf(),
        });
    }
    Ok(real)
}

#[cfg(target_os = "linux")]
pub(crate) fn real_path(fd: impl AsFd) -> io::Result<PathBuf> {
    use std::os::fd::AsRawFd as _;
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd()))
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn real_path(fd: impl AsFd) -> io::Result<PathBuf> {
    use std::os::unix::ffi::OsStringExt as _;
    let name = rustix::fs::getpath(fd)?;
    Ok(PathBuf::from(OsString::from_vec(name.into_bytes())))
}

/// Opens the regular file at `path` (absolute) for reading, beneath its root.
pub(crate) fn open(fence: &Fence, path: &Path) -> Result<File, OpenError> {
    let at = locate(fence, path)?;
    // Non-blocking, so a FIFO swapped in cannot hang the reader; it is refused below.
    let mut options = OpenOptions::new();
    options
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits().cast_signed());
    let file = at
        .dir
        .open_with(&at.rel, &options)
        .map_err(|e| OpenError::io(&at.abs, e))?
        .into_std();
    check_real(fence, &at.abs, &file)?;
    let meta = file.metadata().map_err(|e| OpenError::io(&at.abs, e))?;
    if !meta.is_file() {
        return Err(OpenError::NotAFile { path: at.abs });
    }
    Ok(file)
}

/// The whole file at `path`, at most `limit` bytes.
pub(crate) fn read(fence: &Fence, path: &Path, limit: u64) -> Result<Vec<u8>, OpenError> {
    let file = open(fence, path)?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| OpenError::io(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(OpenError::TooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    Ok(bytes)
}

/// The whole file at `path` as text (invalid UTF-8 replaced), at most `limit` bytes.
pub(crate) fn read_text(fence: &Fence, path: &Path, limit: u64) -> Result<String, OpenError> {
    read(fence, path, limit).map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// Opens the directory at `path` beneath its root, with where it really is.
pub(crate) fn open_dir(fence: &Fence, path: &Path) -> Result<(OwnedFd, PathBuf), OpenError> {
    let at = locate(fence, path)?;
    let dir = at
        .dir
        .open_dir(&at.rel)
        .map_err(|e| OpenError::io(&at.abs, e))?;
    let fd = OwnedFd::from(dir.into_std_file());
    let real = check_real(fence, &at.abs, &fd)?;
    Ok((fd, real))
}

/// The entries of the directory at `path`, beneath its root; each one's [`Stat`] is of the
/// entry itself (a symlink is not followed) and its path is beneath where the directory really
/// is. Secret entries (the state directory inside a root) are left out.
pub(crate) fn list(fence: &Fence, path: &Path) -> Result<Vec<Entry>, OpenError> {
    let at = locate(fence, path)?;
    let dir = at
        .dir
        .open_dir(&at.rel)
        .map_err(|e| OpenError::io(&at.abs, e))?;
    let real = {
        let probe = dir.try_clone().map_err(|e| OpenError::io(&at.abs, e))?;
        check_real(fence, &at.abs, OwnedFd::from(probe.into_std_file()))?
    };
    let mut out = Vec::new();
    for entry in dir.entries().map_err(|e| OpenError::io(&at.abs, e))? {
        let Ok(entry) = entry else { continue };
        let Ok(meta) = entry.metadata() else { continue };
        let name: OsString = entry.file_name();
        let path = real.join(&name);
        if fence.is_secret(&path) {
            continue;
        }
        out.push(Entry {
            name,
            path,
            stat: stat_of(&meta),
        });
    }
    Ok(out)
}

/// What `path` is, symlinks followed beneath its root (one leading out is refused).
pub(crate) fn stat(fence: &Fence, path: &Path) -> Result<Stat, OpenError> {
    let at = locate(fence, path)?;
    let real = at
        .dir
        .canonicalize(&at.rel)
        .map_err(|e| OpenError::io(&at.abs, e))?;
    let root_real = fence.locate(&at.abs).map(|(root, _)| root.join(&real));
    if root_real.as_deref().is_some_and(|r| fence.is_secret(r)) {
        return Err(OpenError::Secret { path: at.abs });
    }
    let meta = at
        .dir
        .metadata(&at.rel)
        .map_err(|e| OpenError::io(&at.abs, e))?;
    Ok(stat_of(&meta))
}

fn stat_of(meta: &cap_std::fs::Metadata) -> Stat {
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
        modified: meta
            .modified()
            .ok()
            .map(cap_std::time::SystemTime::into_std),
        created: meta.created().ok().map(cap_std::time::SystemTime::into_std),
    }
}

/// The fence as the run readers of `codaris-nextflow` open files through it.
#[derive(Debug, Clone)]
pub(crate) struct Fenced(pub Fence);

impl Fenced {
    pub(crate) fn shared(fence: &Fence) -> Arc<dyn Files> {
        Arc::new(Fenced(fence.clone()))
    }
}

impl Files for Fenced {
    fn open(&self, path: &Path) -> io::Result<File> {
        open(&self.0, path).map_err(OpenError::into_io)
    }

    fn open_dir(&self, path: &Path) -> io::Result<(OwnedFd, PathBuf)> {
        open_dir(&self.0, path).map_err(OpenError::into_io)
    }

    fn list(&self, path: &Path) -> io::Result<Vec<Entry>> {
        list(&self.0, path).map_err(OpenError::into_io)
    }

    fn stat(&self, path: &Path) -> io::Result<Stat> {
        stat(&self.0, path).map_err(OpenError::into_io)
    }
}
