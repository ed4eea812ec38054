//! Opening a ledger after a crash: the journal replayed into sled and the chain file, torn and
//! glued lines dealt with, the chain's end found, an older ledger's chain tree moved into the
//! chain file, and sled snapshots a crash left half-written removed.

use std::collections::HashMap;
use std::path::Path;

use super::{Appender, Ledger, encode};
use crate::chain::{Link, Tail};
use crate::chain_log::StoredLink;
use crate::error::{Corrupt, LedgerError};
use crate::export::ExportLine;
use crate::store::decode_value;

/// The `meta` key of the chain file's durable length (8 bytes, big-endian): what the file held
/// when the journal was last emptied. Absent: the chain is still in sled's `chain` tree (a
/// ledger written before the chain file), or the ledger is new.
const CHAIN_DURABLE: &[u8] = b"chain_durable_len";

/// The tree older ledgers kept the chain in.
const CHAIN_TREE: &str = "chain";

/// Links moved from the tree into the file per write.
const MOVE_BATCH: usize = 4096;

/// The chain file's durable length, as last recorded.
pub(super) fn durable_chain_len(meta: &sled::Tree) -> Result<Option<u64>, LedgerError> {
    Ok(meta
        .get(CHAIN_DURABLE)?
        .and_then(|bytes| <[u8; 8]>::try_from(bytes.as_ref()).ok())
        .map(u64::from_be_bytes))
}

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
        let mut links = Vec::new();
        for (offset, line) in lines {
            let place = format!("journal byte {offset} (recovery {recovery})");
            if decode_line(&line).is_ok() {
                links.extend(self.recover_line(&line)?);
                continue;
            }
            match salvage(&line) {
                // A line glued to the torn remains of an earlier append (journals written
                // before torn lines were cut): the glued line is whole, the remains are not.
                Some(start) => {
                    self.unreadable.insert(place.as_bytes(), &line[..start])?;
                    links.extend(self.recover_line(&line[start..])?);
                }
                None => {
                    self.unreadable.insert(place.as_bytes(), line.as_slice())?;
                }
            }
        }
        let links = self.not_in_chain_file(links)?;
        self.chain().append_links(&links)?;
        self.fold(&mut self.appender())
    }

    /// Makes what the journal holds durable elsewhere, then empties it: the chain file synced
    /// and its length recorded in sled, sled flushed and its data file synced. Only after all
    /// of the journal's records are in sled and their links in the chain file.
    pub(super) fn fold(&self, appender: &mut Appender) -> Result<(), LedgerError> {
        let durable = self.chain().sync()?;
        self.meta.insert(CHAIN_DURABLE, &durable.to_be_bytes())?;
        self.db.flush()?;
        self.sync_data_file()?;
        appender.journal.truncate()
    }

    /// The journal's links less those the chain file already ends with. The file is cut back
    /// to its durable length at open, so it holds none of the journal's links, except after a
    /// crash between recording that length and emptying the journal (then it holds them all),
    /// or when an older ledger's tree held some of them: appending them again would read as
    /// duplicate links.
    fn not_in_chain_file(&self, links: Vec<Link>) -> Result<Vec<Link>, LedgerError> {
        let Some(first) = links.iter().map(|link| link.seq).min() else {
            return Ok(links);
        };
        let mut held: HashMap<String, Vec<Link>> = HashMap::new();
        self.chain().newest(|stored| match stored.decode() {
            Ok(link) if link.seq < first => false,
            Ok(link) => {
                held.entry(link.hash.clone()).or_default().push(link);
                true
            }
            Err(_) => true,
        })?;
        Ok(links
            .into_iter()
            .filter(|link| !held.get(&link.hash).is_some_and(|same| same.contains(link)))
            .collect())
    }

    /// Moves the links of an older ledger's `chain` tree into the chain file, once: the file
    /// is written and synced, its length recorded (and sled synced), and only then is the tree
    /// dropped. A crash before the length is recorded leaves the tree, and the next open
    /// starts the move again on an emptied file. Entries that do not decode are kept as they
    /// were stored, and reported as before.
    pub(super) fn move_chain_tree(&self, moved: bool) -> Result<(), LedgerError> {
        let had_tree = self
            .db
            .tree_names()
            .iter()
            .any(|name| name.as_ref() == CHAIN_TREE.as_bytes());
        if !moved {
            if had_tree {
                let tree = self.db.open_tree(CHAIN_TREE)?;
                let mut batch = Vec::with_capacity(MOVE_BATCH);
                for entry in tree.iter() {
                    let (key, bytes) = entry?;
                    batch.push(match serde_json::from_slice::<Link>(&bytes) {
                        Ok(link) => StoredLink::Link(link),
                        Err(_) => StoredLink::Json {
                            key: key.to_vec(),
                            bytes: bytes.to_vec(),
                        },
                    });
                    if batch.len() == MOVE_BATCH {
                        self.chain().append(&batch)?;
                        batch.clear();
                    }
                }
                self.chain().append(&batch)?;
            }
            let durable = self.chain().sync()?;
            self.meta.insert(CHAIN_DURABLE, &durable.to_be_bytes())?;
            self.disk.sync(&self.meta)?;
        }
        if had_tree {
            self.db.drop_tree(CHAIN_TREE)?;
            self.disk.sync(&self.meta)?;
        }
        Ok(())
    }

    /// Writes one journal line's record into sled; returns its link.
    fn recover_line(&self, line: &[u8]) -> Result<Option<Link>, LedgerError> {
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
        match serde_json::from_slice::<LinkField>(line) {
            Ok(LinkField { link }) => Ok(link),
            Err(_) => Ok(None),
        }
    }

    /// Where the next link attaches: after the chain file's last link.
    pub(super) fn chain_tail(&self) -> Result<Tail, LedgerError> {
        let last = self.chain().last()?;
        let last = match last {
            Some(last) => last,
            // No record, or a last one whose framing does not hold: the last whole one.
            None => match self.links()?.0.pop() {
                Some(link) => StoredLink::Link(link),
                None => return Ok(Tail::default()),
            },
        };
        match (last.decode(), &last) {
            (Ok(link), _) => Ok(Tail::after(&link)),
            // An unreadable last link is reported by replay; the chain goes on after its number.
            (Err(_), StoredLink::Json { key, .. }) => Ok(Tail {
                seq: <[u8; 8]>::try_from(key.as_slice()).map_or(0, u64::from_be_bytes),
                hash: crate::chain::GENESIS.to_owned(),
            }),
            (Err(_), StoredLink::Link(_)) => Ok(Tail::default()),
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
