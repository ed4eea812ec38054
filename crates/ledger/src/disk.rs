//! How a write into sled outside the journal becomes durable: sled flushed, then its data file
//! `fdatasync`ed.
//!
//! sled 0.34's `flush` ends in `sync_file_range`, which waits for writeback but does not flush
//! the device's cache; the `fdatasync` after it does. The journal's folds, each new stride of
//! ids, and every write of the typed handles ([`Sessions`](crate::Sessions),
//! [`ToolState`](crate::ToolState)) go through [`Disk::sync`], so nothing the ledger writes is
//! acknowledged before it is on the device.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::LedgerError;

#[derive(Debug)]
pub(crate) struct Disk {
    /// sled's data file inside the ledger directory, named in errors.
    data_path: PathBuf,
    data_file: File,
}

impl Disk {
    /// Opens sled's data file in the ledger directory `path` (sled must have created it).
    pub(crate) fn open(path: &Path) -> Result<Self, LedgerError> {
        let data_path = path.join("db");
        let data_file = File::open(&data_path).map_err(|source| LedgerError::Sync {
            path: data_path.clone(),
            source,
        })?;
        Ok(Self {
            data_path,
            data_file,
        })
    }

    /// Flushes sled (every tree: a tree's flush is the whole database's) and syncs its data
    /// file: when this returns, everything written to sled before it is on the device.
    pub(crate) fn sync(&self, tree: &sled::Tree) -> Result<(), LedgerError> {
        tree.flush()?;
        self.sync_data_file()
    }

    pub(crate) fn sync_data_file(&self) -> Result<(), LedgerError> {
        self.data_file
            .sync_data()
            .map_err(|source| LedgerError::Sync {
                path: self.data_path.clone(),
                source,
            })
    }
}
