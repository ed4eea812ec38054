//! Reading files of a task directory without ever following a symlink: each file is opened
//! relative to the directory with `O_NOFOLLOW` (a link is refused, not read), non-blocking (a
//! FIFO cannot hang the reader), and only if it is a regular file; and never more than a bound.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use serde::Serialize;

use crate::files::Files;

/// Part of a file, as text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileText {
    /// The text read (invalid UTF-8 replaced, CRLF made LF).
    pub text: String,
    /// The file's size in bytes.
    pub size: u64,
    /// Whether the file holds more than `text` shows.
    pub truncated: bool,
}

/// Why a file of the task was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unread {
    Missing,
    /// Present but not read, with the reason in a few words.
    Refused(&'static str),
}

/// The task directory, opened once.
#[derive(Debug)]
pub(crate) struct Dir {
    fd: OwnedFd,
}

impl Dir {
    /// The directory at `path`, opened by `files` (which decides where it may lead), with
    /// where it really is.
    pub(crate) fn open(files: &dyn Files, path: &Path) -> std::io::Result<(Dir, PathBuf)> {
        let (fd, real) = files.open_dir(path)?;
        Ok((Dir { fd }, real))
    }

    fn open_file(&self, name: &str) -> Result<(File, u64), Unread> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => return Err(Unread::Missing),
            Err(rustix::io::Errno::LOOP) => return Err(Unread::Refused("a symlink, not followed")),
            Err(_) => return Err(Unread::Refused("not readable")),
        };
        let file = File::from(fd);
        let meta = file
            .metadata()
            .map_err(|_| Unread::Refused("not readable"))?;
        if !meta.is_file() {
            return Err(Unread::Refused("not a regular file"));
        }
        Ok((file, meta.len()))
    }

    /// Whether `name` exists as a regular file (a symlink does not count).
    pub(crate) fn has_file(&self, name: &str) -> bool {
        self.open_file(name).is_ok()
    }

    /// The first `limit` bytes of a file.
    pub(crate) fn head(&self, name: &str, limit: u64) -> Result<FileText, Unread> {
        let (file, size) = self.open_file(name)?;
        let mut bytes = Vec::new();
        file.take(limit)
            .read_to_end(&mut bytes)
            .map_err(|_| Unread::Refused("not readable"))?;
        Ok(FileText {
            text: decode(&bytes),
            size,
            truncated: size > bytes.len() as u64,
        })
    }

    /// The last `max_lines` lines within the last `limit` bytes of a file.
    pub(crate) fn tail(
        &self,
        name: &str,
        limit: u64,
        max_lines: usize,
    ) -> Result<FileText, Unread> {
        let (mut file, size) = self.open_file(name)?;
        let start = size.saturating_sub(limit);
        file.seek(SeekFrom::Start(start))
            .map_err(|_| Unread::Refused("not readable"))?;
        let mut bytes = Vec::new();
        file.take(limit)
            .read_to_end(&mut bytes)
            .map_err(|_| Unread::Refused("not readable"))?;
        let mut cut = start > 0;
        if cut {
            // Drop the partial first line (and so a UTF-8 sequence cut in half).
            match bytes.iter().position(|b| *b == b'\n') {
                Some(i) => {
                    bytes.drain(..=i);
                }
                None => bytes.clear(),
            }
        }
        let text = decode(&bytes);
        let lines: Vec<&str> = text.lines().collect();
        let keep = lines.len().saturating_sub(max_lines);
        if keep > 0 {
            cut = true;
        }
        let mut shown = lines.get(keep..).unwrap_or_default().join("\n");
        if text.ends_with('\n') && !shown.is_empty() {
            shown.push('\n');
        }
        Ok(FileText {
            text: shown,
            size,
            truncated: cut,
        })
    }
}

/// Bytes as text: invalid UTF-8 replaced, CR before LF dropped.
pub(crate) fn decode(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).replace("\r\n", "\n")
}
