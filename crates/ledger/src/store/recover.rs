//! Opening a ledger after a crash: the journal replayed into sled and the decision and chain
//! files, torn and glued lines dealt with, the chain's end found, and sled snapshots a crash
//! left half-written removed. (An older ledger's trees are moved into the files by
//! `migrate.rs` first.)

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
pub(super) const CHAIN_DURABLE: &[u8] = b"chain_durable_len";

/// The same for the decisions file (and sled's `decisions` tree).
pub(super) const DECISIONS_DURABLE: &[u8] = b"decisions_durable_len";

/// A log file's durable length, as last recorded under `key`.
pub(super) fn durable_len(meta: &sled::Tree, key: &[u8]) -> Result<Option<u64>, LedgerError> {
    Ok(meta
        .get(key)?
        .and_then(|bytes| <[u8; 8]>::try_from(bytes.as_ref()).ok())
        .map(u64::from_be_bytes))
}

/// A decision read from a journal line: its number, session and JSON as stored.
struct JournalDecision {
    seq: u64,
    session_id: String,
    json: Vec<u8>,
}

/// What one journal line brings beside its record in sled.
#[derive(Default)]
struct Recovered {
    link: Option<Link>,
    decision: Option<JournalDecision>,
}

impl Ledger {
    /// Replays the journal into sled, makes sled durable, and empties the journal. A torn last
    /// line is cut off first (see `journal.rs`).
    pub(super) fn recover(&self) -> Result<(), LedgerError> {
        let lines = self.appender().journal.lines()?;
        if lines.is_empty() {
            return Ok(());
        }
        // What the files hold past their durable lengths is in these lines, maybe torn.
        self.chain().cut_back()?;
        self.decision_log().cut_back()?;
        // Places of unreadable lines name this recovery, so a later one never overwrites them.
        let recovery = self.next_id()?;
        let (mut links, mut decisions) = (Vec::new(), Vec::new());
        for (offset, line) in lines {
            let place = format!("journal byte {offset} (recovery {recovery})");
            let recovered = if decode_line(&line).is_ok() {
                self.recover_line(&line)?
            } else {
                match salvage(&line) {
                    // A line glued to the torn remains of an earlier append (journals written
                    // before torn lines were cut): the glued line is whole, the remains are
                    // not.
                    Some(start) => {
                        self.unreadable.insert(place.as_bytes(), &line[..start])?;
                        self.recover_line(&line[start..])?
                    }
                    None => {
                        self.unreadable.insert(place.as_bytes(), line.as_slice())?;
                        Recovered::default()
                    }
                }
            };
            links.extend(recovered.link);
            decisions.extend(recovered.decision);
        }
        let decisions = self.not_in_decisions_file(decisions)?;
        self.store_decisions(
            decisions
                .iter()
                .map(|d| (d.seq, d.session_id.as_str(), d.json.as_slice())),
        )?;
        let links = self.not_in_chain_file(links)?;
        self.chain().append_links(&links)?;
        self.fold(&mut self.appender())
    }

    /// Makes what the journal holds durable elsewhere, then empties it: the decision and chain
    /// files synced and their lengths recorded in sled, sled flushed and its data file synced.
    /// Only after all of the journal's records are in sled and the files.
    pub(super) fn fold(&self, appender: &mut Appender) -> Result<(), LedgerError> {
        self.session_index.fold()?;
        let durable = self.decision_log().sync()?;
        self.meta
            .insert(DECISIONS_DURABLE, &durable.to_be_bytes())?;
        let durable = self.chain().sync()?;
        self.meta.insert(CHAIN_DURABLE, &durable.to_be_bytes())?;
        self.disk.sync(&self.db)?;
        appender.journal.truncate()?;
        self.publish_head_at(&appender.tail);
        Ok(())
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

    /// The journal's decisions less those the decisions file already ends with (the same
    /// number and bytes), each of which is indexed again (sled may not have kept its entry),
    /// for the reasons [`Ledger::not_in_chain_file`] gives.
    fn not_in_decisions_file(
        &self,
        decisions: Vec<JournalDecision>,
    ) -> Result<Vec<JournalDecision>, LedgerError> {
        let Some(first) = decisions.iter().map(|d| d.seq).min() else {
            return Ok(decisions);
        };
        let mut held: HashMap<u64, Vec<(u64, Vec<u8>)>> = HashMap::new();
        self.decision_log().reader().newest(|at, payload| {
            match crate::decision_log::split(at, payload) {
                Ok((seq, _)) if u64::from_be_bytes(*seq) < first => false,
                Ok((seq, json)) => {
                    held.entry(u64::from_be_bytes(*seq))
                        .or_default()
                        .push((at, json.to_vec()));
                    true
                }
                Err(_) => true,
            }
        })?;
        let mut missing = Vec::with_capacity(decisions.len());
        for decision in decisions {
            let stored = held.get(&decision.seq).and_then(|same| {
                same.iter()
                    .find(|(_, json)| *json == decision.json)
                    .map(|(at, _)| *at)
            });
            match stored {
                Some(at) => {
                    self.session_index
                        .put(&decision.session_id, decision.seq, at)?;
                }
                None => missing.push(decision),
            }
        }
        Ok(missing)
    }

    /// Writes one journal line's record into sled; returns its link, and a decision (which goes
    /// into the decisions file once the journal has been read).
    fn recover_line(&self, line: &[u8]) -> Result<Recovered, LedgerError> {
        let record =
            decode_value::<ExportLine>("journal", "", line).map_err(LedgerError::Corrupt)?;
        let mut decision = None;
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
                decision = Some(JournalDecision {
                    seq: record.seq,
                    json: encode(&*record)?,
                    session_id: record.session_id,
                });
            }
            ExportLine::GrantSet(record) => {
                self.grant_sets
                    .insert(record.key.as_bytes(), encode(&record)?)?;
            }
            ExportLine::Undo(record) => {
                self.undos.insert(record.id.as_bytes(), encode(&record)?)?;
            }
            ExportLine::ConfigChange(record) => {
                self.config_changes
                    .insert(record.id.as_bytes(), encode(&record)?)?;
            }
            ExportLine::JobApproval(record) => {
                self.job_approvals
                    .insert(record.id.as_bytes(), encode(&record)?)?;
            }
            ExportLine::Header { .. } | ExportLine::Link(_) | ExportLine::Unreadable { .. } => {}
        }
        // A line without a link (written before the chain, or forged) leaves its record
        // unlinked, and replay reports it.
        let link = serde_json::from_slice::<LinkField>(line)
            .ok()
            .and_then(|field| field.link);
        Ok(Recovered { link, decision })
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
