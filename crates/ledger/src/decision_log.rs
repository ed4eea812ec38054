//! The decisions in a file of their own, `<ledger>.decisions`: appended to, never rewritten.
//!
//! Until 2026-12 they lived in a sled tree keyed by sequence number. A decision is written once
//! and never changed, and read in order (an audit, an export), from the newest back
//! (`ledger decisions -n`), or a session's through the session index: what a plain file does
//! with one `write` a batch, where each decision cost the commit's apply a sled insert (with
//! sled's leaf splits on rising keys) and an audit about 2 µs to rebuild sled's pages and
//! iterate them, a third of its CPU.
//!
//! **Format.** A [`log_file`](crate::log_file) whose magic is [`MAGIC`]; each payload is the
//! decision's sequence number (`u64`, big-endian, as sled's key was) followed by the record's
//! JSON exactly as it is digested (its link's `stored`). Records are in the order their lines
//! reached the journal, which is sequence order but where concurrent writers took their numbers
//! in one order and committed in another. The session index (sled's `decision_sessions`)
//! maps a session and a sequence number to the record's offset in the file.

use std::path::Path;

use crate::error::{Corrupt, LedgerError};
use crate::log_file::{LogFile, framed};

/// A decision as the file holds it: its sequence number and its JSON.
pub type StoredDecision = (u64, Vec<u8>);

/// The first 16 bytes of a decisions file: its format, version 1.
pub const MAGIC: &[u8; 16] = b"codaris-decide1\n";

/// The decisions file, open for appending.
#[derive(Debug)]
pub(crate) struct DecisionLog {
    log: LogFile,
}

/// Syncing, cutting back and reading are the log file's own.
impl std::ops::Deref for DecisionLog {
    type Target = LogFile;

    fn deref(&self) -> &LogFile {
        &self.log
    }
}

impl std::ops::DerefMut for DecisionLog {
    fn deref_mut(&mut self) -> &mut LogFile {
        &mut self.log
    }
}

impl DecisionLog {
    /// Opens (creating if needed) the decisions file at `path`, last made durable at `durable`
    /// bytes (see [`LogFile::open`]).
    pub(crate) fn open(path: &Path, durable: Option<u64>) -> Result<Self, LedgerError> {
        Ok(DecisionLog {
            log: LogFile::open(path, MAGIC, "decisions", durable)?,
        })
    }

    /// Appends each `(seq, json)` with one `write`; returns where each record starts. Not
    /// synced: the journal holds them.
    pub(crate) fn append<'a>(
        &mut self,
        records: impl ExactSizeIterator<Item = (u64, &'a [u8])>,
    ) -> Result<Vec<u64>, LedgerError> {
        let mut buffer = Vec::with_capacity(records.len() * 1024);
        let mut offsets = Vec::with_capacity(records.len());
        for (seq, json) in records {
            offsets.push(buffer.len() as u64);
            framed(&mut buffer, |out| {
                out.extend_from_slice(&seq.to_be_bytes());
                out.extend_from_slice(json);
            });
        }
        let start = self.log.append(&buffer)?;
        Ok(offsets.into_iter().map(|at| start + at).collect())
    }
}

/// A payload's sequence number (as sled's key was: 8 bytes, big-endian) and the record's JSON.
pub(crate) fn split(at: u64, payload: &[u8]) -> Result<(&[u8; 8], &[u8]), Corrupt> {
    payload.split_first_chunk::<8>().ok_or_else(|| Corrupt {
        place: "decisions".to_owned(),
        key: format!("byte {at}"),
        reason: "a record cut short".to_owned(),
    })
}

/// Every record of the decisions file at `path`, in order, as `(seq, json)` (a framing that
/// does not hold ends the read, with its report). For tools and tests that read the file
/// without a ledger.
pub fn read_decisions_file(
    path: &Path,
) -> Result<Vec<Result<StoredDecision, Corrupt>>, LedgerError> {
    Ok(crate::log_file::read_file(path, MAGIC, "decisions")?
        .into_iter()
        .map(|record| {
            let (at, payload) = record?;
            let (seq, json) = split(at, &payload)?;
            Ok((u64::from_be_bytes(*seq), json.to_vec()))
        })
        .collect())
}

/// Writes a whole decisions file at `path` holding `records` (`(seq, json)`), in order: for
/// tests that stand in for someone rewriting the file behind the ledger's back (the ledger
/// itself only appends). The session index's offsets then no longer hold, as they would not.
pub fn write_decisions_file(path: &Path, records: &[StoredDecision]) -> Result<(), LedgerError> {
    let mut bytes = MAGIC.to_vec();
    for (seq, json) in records {
        framed(&mut bytes, |out| {
            out.extend_from_slice(&seq.to_be_bytes());
            out.extend_from_slice(json);
        });
    }
    std::fs::write(path, bytes).map_err(|source| LedgerError::File {
        action: "write",
        path: path.to_path_buf(),
        source,
    })
}
