//! Opening a ledger after a crash: the journal replayed into sled, torn and glued lines dealt
//! with, the chain's end found, and sled snapshots a crash left half-written removed.

use std::path::Path;

use super::{Ledger, encode};
use crate::chain::{Link, Tail};
use crate::error::{Corrupt, LedgerError};
use crate::export::ExportLine;
use crate::store::decode_value;

impl Ledger {
    /// Replays the journal into sled, makes sled durable, and empties the journal. A torn last
    /// line is cut off first (see `journal.rs`).
    pub(super) fn recover(&self) -> Result<(), LedgerError> {
        let lines = self.appender().journal.lines()?;
        if lines.is_empty() {
            return Ok(());
        }
        // Places of unreadable lines name this recovery, so a later one never overwrites them.
        let recovery = self.next_id()?;
        for (offset, line) in lines {
            let place = format!("journal byte {offset} (recovery {recovery})");
            if decode_line(&line).is_ok() {
                self.recover_line(&line)?;
                continue;
            }
            match salvage(&line) {
                // A line glued to the torn remains of an earlier append (journals written
                // before torn lines were cut): the glued line is whole, the remains are not.
                Some(start) => {
                    self.unreadable.insert(place.as_bytes(), &line[..start])?;
                    self.recover_line(&line[start..])?;
                }
                None => {
                    self.unreadable.insert(place.as_bytes(), line.as_slice())?;
                }
            }
        }
        self.db.flush()?;
        self.sync_data_file()?;
        self.appender().journal.truncate()
    }

    /// Writes one journal line's record, and its link, into sled.
    fn recover_line(&self, line: &[u8]) -> Result<(), LedgerError> {
        let record =
            decode_value::<ExportLine>("journal", "", line).map_err(LedgerError::Corrupt)?;
        match record {
            ExportLine::Grant(record) => {
                let bytes = encode(&record)?;
                self.grants.insert(record.id.as_bytes(), bytes.as_slice())?;
                self.index_grant_bytes(record.id.as_bytes(), &bytes)?;
            }
            ExportLine::Card(record) => {
                self.cards.insert(record.id.as_bytes(), encode(&record)?)?;
            }
            ExportLine::Decision(record) => {
                self.decisions
                    .insert(record.seq.to_be_bytes(), encode(&*record)?)?;
                self.session_index.insert(
                    super::reads::session_key(&record.session_id, record.seq),
                    sled::IVec::default(),
                )?;
            }
            ExportLine::GrantSet(record) => {
                self.grant_sets
                    .insert(record.key.as_bytes(), encode(&record)?)?;
            }
            ExportLine::Header { .. } | ExportLine::Link(_) | ExportLine::Unreadable { .. } => {}
        }
        // A line without a link (written before the chain, or forged) leaves its record
        // unlinked, and replay reports it.
        if let Ok(LinkField { link: Some(link) }) = serde_json::from_slice::<LinkField>(line) {
            self.chain.insert(link.seq.to_be_bytes(), encode(&link)?)?;
        }
        Ok(())
    }

    /// Where the next link attaches: after the last stored link.
    pub(super) fn chain_tail(&self) -> Result<Tail, LedgerError> {
        let Some((key, bytes)) = self.chain.last()? else {
            return Ok(Tail::default());
        };
        match serde_json::from_slice::<Link>(&bytes) {
            Ok(link) => Ok(Tail::after(&link)),
            // An unreadable last link is reported by replay; the chain goes on after its number.
            Err(_) => Ok(Tail {
                seq: <[u8; 8]>::try_from(key.as_ref()).map_or(0, u64::from_be_bytes),
                hash: crate::chain::GENESIS.to_owned(),
            }),
        }
    }
}

/// The `link` member of a journal line.
#[derive(serde::Deserialize)]
struct LinkField {
    #[serde(default)]
    link: Option<Link>,
}

/// Whether a journal line decodes as a record.
fn decode_line(line: &[u8]) -> Result<(), Corrupt> {
    decode_value::<ExportLine>("journal", "", line).map(|_| ())
}

/// Where a whole line starts inside `line`, when its start is the torn remains of another.
fn salvage(line: &[u8]) -> Option<usize> {
    const START: &[u8] = b"{\"type\":\"";
    (1..line.len())
        .rev()
        .filter(|&at| line[at..].starts_with(START))
        .find(|&at| decode_line(&line[at..]).is_ok())
}

/// Removes sled snapshots that a crash left half-written; returns how many.
///
/// sled writes a snapshot to `snap.<lsn>.generating` and renames it when whole, but at open it
/// also reads a `.generating` file, and one torn by a crash makes the database refuse to open
/// (`Corruption`). Such a file was never finished, so the last whole snapshot and the log still
/// describe everything: removing it loses nothing.
pub(super) fn discard_torn_snapshots(path: &Path) -> Result<usize, LedgerError> {
    let entries = std::fs::read_dir(path).map_err(|source| LedgerError::Sync {
        path: path.to_path_buf(),
        source,
    })?;
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("snap.") && name.ends_with(".generating") {
            std::fs::remove_file(entry.path()).map_err(|source| LedgerError::Sync {
                path: entry.path(),
                source,
            })?;
            removed += 1;
        }
    }
    Ok(removed)
}
