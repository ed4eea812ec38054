//! The ledger's journal: an append-only file of JSON lines that makes every record durable with
//! one `write` and one `fdatasync` per group commit.
//!
//! sled holds the records for reading; the journal is what a crash is recovered from. Each line
//! is a whole record (an [`ExportLine`]); a later line for the same key replaces an earlier one.
//! At open, the journal is replayed into sled, sled is flushed and its data file synced, and the
//! journal starts empty again. While the daemon runs, the journal is compacted the same way
//! once it outgrows [`COMPACT_AT`].

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::error::LedgerError;

/// A journal larger than this is folded into sled and emptied at the next commit.
pub const COMPACT_AT: u64 = 64 * 1024 * 1024;

#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
}

impl Journal {
    pub fn open(path: &Path) -> Result<Self, LedgerError> {
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o600)
            .open(path)
            .map_err(|source| LedgerError::Sync {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(Self {
            path: path.to_path_buf(),
            file,
        })
    }

    /// Every complete line; a last line without its newline was torn by a crash before it was
    /// acknowledged, and is dropped.
    pub fn lines(&mut self) -> Result<Vec<(u64, Vec<u8>)>, LedgerError> {
        let mut bytes = Vec::new();
        (&self.file)
            .read_to_end(&mut bytes)
            .map_err(|source| self.error(source))?;
        let mut lines = Vec::new();
        let mut offset = 0u64;
        for chunk in bytes.split_inclusive(|b| *b == b'\n') {
            if chunk.ends_with(b"\n") && chunk.len() > 1 {
                lines.push((offset, chunk[..chunk.len() - 1].to_vec()));
            }
            offset += chunk.len() as u64;
        }
        Ok(lines)
    }

    /// Appends the lines and waits until they are on the device.
    pub fn append(&mut self, lines: &[&[u8]]) -> Result<(), LedgerError> {
        let mut buffer = Vec::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
        for line in lines {
            buffer.extend_from_slice(line);
            buffer.push(b'\n');
        }
        self.file
            .write_all(&buffer)
            .and_then(|()| self.file.sync_data())
            .map_err(|source| self.error(source))
    }

    pub fn len(&self) -> Result<u64, LedgerError> {
        self.file
            .metadata()
            .map(|m| m.len())
            .map_err(|source| self.error(source))
    }

    /// Empties the journal, durably. Only after what it held is durable elsewhere.
    pub fn truncate(&mut self) -> Result<(), LedgerError> {
        self.file
            .set_len(0)
            .and_then(|()| self.file.sync_all())
            .map_err(|source| self.error(source))
    }

    fn error(&self, source: std::io::Error) -> LedgerError {
        LedgerError::Sync {
            path: self.path.clone(),
            source,
        }
    }
}
