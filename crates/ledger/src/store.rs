//! The ledger database: three sled trees and the commit that makes appends durable.

use std::fs::File;
use std::path::{Path, PathBuf};

use codaris_policy::{Grant, GrantSet, Lifetime};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::commit::GroupCommit;
use crate::error::{Corrupt, LedgerError};
use crate::export::ExportLine;
use crate::journal::{COMPACT_AT, Journal};
use crate::record::{CardAnswer, CardRecord, DecisionRecord, GrantRecord, SCHEMA, SessionScoped};
use std::sync::{Mutex, PoisonError};

/// The grants in force for one session, as the policy reads them, plus any grant records that
/// could not be read (they grant nothing, and the caller reports them).
#[derive(Debug, Default)]
pub struct GrantView {
    pub grants: Vec<Grant>,
    pub corrupt: Vec<Corrupt>,
}

impl GrantView {
    pub fn grant_set(&self) -> GrantSet {
        GrantSet::from_grants(self.grants.iter().cloned())
    }
}

/// How long [`Ledger::open`] retries a locked database.
pub const LOCK_RETRY: std::time::Duration = std::time::Duration::from_millis(500);

#[derive(Debug)]
pub struct Ledger {
    path: PathBuf,
    db: sled::Db,
    grants: sled::Tree,
    cards: sled::Tree,
    decisions: sled::Tree,
    /// sled's data file, synced whenever the journal is folded into sled.
    data_file: File,
    /// What makes each append durable (see `journal.rs`).
    journal: Mutex<Journal>,
    /// Journal lines that did not decode at open, kept and reported, never trusted.
    unreadable: sled::Tree,
    commit: GroupCommit<Pending>,
}

/// A record waiting for the next group commit: its journal line and, for a decision, the key
/// the leader writes it under in sled (decisions are written by the leader in one batch, so
/// concurrent writers never contend inside sled).
#[derive(Debug)]
struct Pending {
    line: Vec<u8>,
    decision: Option<[u8; 8]>,
}

impl Ledger {
    /// Opens (creating if needed) the ledger at `path`. Fails with [`LedgerError::Locked`] when
    /// a running daemon holds it.
    ///
    /// sled releases its file lock from a background thread shortly after the last handle is
    /// dropped, so a lock held by this same process a moment ago is retried for up to
    /// [`LOCK_RETRY`] before it counts as another process's.
    pub fn open(path: &Path) -> Result<Self, LedgerError> {
        let deadline = std::time::Instant::now() + LOCK_RETRY;
        let mut discarded = false;
        let db = loop {
            match sled::Config::new().path(path).open() {
                Ok(db) => break db,
                // sled reports a torn snapshot only after taking its lock, so no other process
                // is writing one; retry once without the torn files.
                Err(source @ sled::Error::Corruption { .. }) if !discarded => {
                    discarded = true;
                    if discard_torn_snapshots(path)? == 0 {
                        return Err(LedgerError::Open {
                            path: path.to_path_buf(),
                            source,
                        });
                    }
                }
                Err(source) if is_lock_error(&source) => {
                    if std::time::Instant::now() >= deadline {
                        return Err(LedgerError::Locked {
                            path: path.to_path_buf(),
                        });
                    }
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(source) => {
                    return Err(LedgerError::Open {
                        path: path.to_path_buf(),
                        source,
                    });
                }
            }
        };
        let data_path = path.join("db");
        let data_file = File::open(&data_path).map_err(|source| LedgerError::Sync {
            path: data_path,
            source,
        })?;
        let ledger = Self {
            path: path.to_path_buf(),
            grants: db.open_tree("grants")?,
            cards: db.open_tree("cards")?,
            decisions: db.open_tree("decisions")?,
            unreadable: db.open_tree("unreadable")?,
            db,
            data_file,
            journal: Mutex::new(Journal::open(&journal_path(path))?),
            commit: GroupCommit::default(),
        };
        ledger.recover()?;
        // A restart begins a fresh stride of ids; take one now so the stride is reserved on disk
        // before any id from it is handed out.
        unique_id(&ledger.db)?;
        Ok(ledger)
    }

    /// Replays the journal into sled, makes sled durable, and empties the journal.
    fn recover(&self) -> Result<(), LedgerError> {
        let lines = self
            .journal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .lines()?;
        if lines.is_empty() {
            return Ok(());
        }
        for (offset, line) in lines {
            let place = format!("journal byte {offset}");
            match decode_value::<ExportLine>(&place, "", &line) {
                Ok(ExportLine::Grant(record)) => {
                    self.grants.insert(record.id.as_bytes(), encode(&record)?)?;
                }
                Ok(ExportLine::Card(record)) => {
                    self.cards.insert(record.id.as_bytes(), encode(&record)?)?;
                }
                Ok(ExportLine::Decision(record)) => {
                    self.decisions
                        .insert(record.seq.to_be_bytes(), encode(&*record)?)?;
                }
                Ok(ExportLine::Header { .. }) => {}
                Err(_) => {
                    self.unreadable.insert(place.as_bytes(), line)?;
                }
            }
        }
        self.db.flush()?;
        self.data_file
            .sync_data()
            .map_err(|source| LedgerError::Sync {
                path: self.path.join("db"),
                source,
            })?;
        self.journal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .truncate()
    }

    /// The sled handle, for the daemon's other trees (sessions, tool state).
    pub fn db(&self) -> &sled::Db {
        &self.db
    }

    /// Records a grant and returns once it is on the device: only then may it be acknowledged.
    pub fn append_grant(
        &self,
        session_id: &str,
        grant: Grant,
        card_id: Option<&str>,
        at_ms: u64,
    ) -> Result<GrantRecord, LedgerError> {
        let id = format!("g{:012}", unique_id(&self.db)?);
        let record = GrantRecord {
            schema: SCHEMA,
            id: id.clone(),
            session_id: session_id.to_owned(),
            grant: grant.with_id(&id),
            granted_at_ms: at_ms,
            card_id: card_id.map(str::to_owned),
            consumed_at_ms: None,
            revoked_at_ms: None,
        };
        self.grants.insert(id.as_bytes(), encode(&record)?)?;
        if let Err(err) = self.commit_with(line(ExportLine::Grant(record.clone()))?) {
            // Never acknowledged, so it must not linger and grant anything later.
            self.grants.remove(id.as_bytes())?;
            return Err(err);
        }
        Ok(record)
    }

    /// Spends a `once` grant. Exactly one caller gets `true`, however many race: the swap only
    /// succeeds against the unspent record.
    pub fn consume_once(&self, id: &str, at_ms: u64) -> Result<bool, LedgerError> {
        loop {
            let Some(current) = self.grants.get(id.as_bytes())? else {
                return Err(LedgerError::GrantNotFound { id: id.to_owned() });
            };
            let record: GrantRecord = decode("grants", id, &current)?;
            if record.grant.lifetime != Lifetime::Once || !record.is_active() {
                return Ok(false);
            }
            let spent = GrantRecord {
                consumed_at_ms: Some(at_ms),
                ..record
            };
            let swapped = self.grants.compare_and_swap(
                id.as_bytes(),
                Some(current),
                Some(encode(&spent)?),
            )?;
            if swapped.is_ok() {
                self.commit_with(line(ExportLine::Grant(spent))?)?;
                return Ok(true);
            }
            // Someone changed the record between our read and our swap: look again.
        }
    }

    /// Revokes a grant; revoking a revoked grant returns it unchanged.
    pub fn revoke(&self, id: &str, at_ms: u64) -> Result<GrantRecord, LedgerError> {
        let updated = self.grants.update_and_fetch(id.as_bytes(), |old| {
            let old = old?;
            match serde_json::from_slice::<GrantRecord>(old) {
                Ok(mut record) if record.revoked_at_ms.is_none() => {
                    record.revoked_at_ms = Some(at_ms);
                    serde_json::to_vec(&record)
                        .ok()
                        .or_else(|| Some(old.to_vec()))
                }
                _ => Some(old.to_vec()),
            }
        })?;
        let Some(bytes) = updated else {
            return Err(LedgerError::GrantNotFound { id: id.to_owned() });
        };
        let record: GrantRecord = decode("grants", id, &bytes)?;
        self.commit_with(line(ExportLine::Grant(record.clone()))?)?;
        Ok(record)
    }

    pub fn grant(&self, id: &str) -> Result<GrantRecord, LedgerError> {
        match self.grants.get(id.as_bytes())? {
            Some(bytes) => decode("grants", id, &bytes),
            None => Err(LedgerError::GrantNotFound { id: id.to_owned() }),
        }
    }

    /// Every grant (of one session when given), oldest first, and the records that do not decode.
    pub fn grants(
        &self,
        session_id: Option<&str>,
    ) -> Result<(Vec<GrantRecord>, Vec<Corrupt>), LedgerError> {
        let (records, mut corrupt) = scan_session(&self.grants, "grants", session_id)?;
        corrupt.extend(self.unreadable_lines()?);
        Ok((records, corrupt))
    }

    /// The grants in force for a session, in ledger order, ready for `evaluate`.
    pub fn grant_view(&self, session_id: &str) -> Result<GrantView, LedgerError> {
        let (records, corrupt) = self.grants(Some(session_id))?;
        Ok(GrantView {
            grants: records
                .into_iter()
                .filter(GrantRecord::is_active)
                .map(|r| r.grant)
                .collect(),
            corrupt,
        })
    }

    /// Records a card as asked.
    pub fn append_card(&self, card: &CardRecord) -> Result<(), LedgerError> {
        self.cards.insert(card.id.as_bytes(), encode(card)?)?;
        self.commit_with(line(ExportLine::Card(card.clone()))?)
    }

    /// Records how a card was answered. The first answer wins; later ones return `false`.
    pub fn answer_card(
        &self,
        id: &str,
        answer: CardAnswer,
        grant_id: Option<&str>,
        at_ms: u64,
    ) -> Result<bool, LedgerError> {
        let Some(current) = self.cards.get(id.as_bytes())? else {
            return Ok(false);
        };
        let card: CardRecord = decode("cards", id, &current)?;
        if card.answer.is_some() {
            return Ok(false);
        }
        let answered = CardRecord {
            answer: Some(answer),
            answered_at_ms: Some(at_ms),
            grant_id: grant_id.map(str::to_owned),
            ..card
        };
        let swapped =
            self.cards
                .compare_and_swap(id.as_bytes(), Some(current), Some(encode(&answered)?))?;
        if swapped.is_err() {
            return Ok(false);
        }
        self.commit_with(line(ExportLine::Card(answered))?)?;
        Ok(true)
    }

    /// Journal lines that did not decode when they were replayed.
    fn unreadable_lines(&self) -> Result<Vec<Corrupt>, LedgerError> {
        let mut corrupt = Vec::new();
        for entry in self.unreadable.iter() {
            let (key, _) = entry?;
            corrupt.push(Corrupt {
                place: String::from_utf8_lossy(&key).into_owned(),
                key: String::new(),
                reason: "a journal line that does not decode".to_owned(),
            });
        }
        Ok(corrupt)
    }

    /// Cards oldest first (of one session when given).
    pub fn cards(
        &self,
        session_id: Option<&str>,
    ) -> Result<(Vec<CardRecord>, Vec<Corrupt>), LedgerError> {
        scan_session(&self.cards, "cards", session_id)
    }

    /// Records a dispatch decision; concurrent callers share one commit.
    pub fn append_decision(
        &self,
        mut record: DecisionRecord,
    ) -> Result<DecisionRecord, LedgerError> {
        record.seq = unique_id(&self.db)?;
        record.schema = SCHEMA;
        // One encoding serves both: a decision reads back from its tagged journal line.
        let line =
            serde_json::to_vec(&DecisionLine::Decision(&record)).map_err(LedgerError::Encode)?;
        self.commit(Pending {
            line,
            decision: Some(record.seq.to_be_bytes()),
        })?;
        Ok(record)
    }

    /// Decisions oldest first (of one session when given).
    pub fn decisions(
        &self,
        session_id: Option<&str>,
    ) -> Result<(Vec<DecisionRecord>, Vec<Corrupt>), LedgerError> {
        let (records, mut corrupt) = scan_session(&self.decisions, "decisions", session_id)?;
        corrupt.extend(self.unreadable_lines()?);
        Ok((records, corrupt))
    }

    /// Queues a record's journal line for the next group commit and waits until it is on the
    /// device. The leader appends every queued line with one `write` and one `fdatasync`;
    /// records are in sled before they are queued, so folding an outgrown journal into sled
    /// first loses nothing.
    fn commit_with(&self, line: Vec<u8>) -> Result<(), LedgerError> {
        self.commit(Pending {
            line,
            decision: None,
        })
    }

    fn commit(&self, pending: Pending) -> Result<(), LedgerError> {
        let ticket = self.commit.submit(Some(pending));
        self.commit.wait(ticket, |queued| {
            let mut journal = self.journal.lock().unwrap_or_else(PoisonError::into_inner);
            if journal.len()? > COMPACT_AT {
                self.db.flush()?;
                self.data_file
                    .sync_data()
                    .map_err(|source| LedgerError::Sync {
                        path: self.path.join("db"),
                        source,
                    })?;
                journal.truncate()?;
            }
            let lines: Vec<&[u8]> = queued.iter().map(|p| p.line.as_slice()).collect();
            journal.append(&lines)?;
            let mut batch = sled::Batch::default();
            let mut decisions = 0;
            for pending in queued {
                if let Some(key) = pending.decision {
                    batch.insert(&key, pending.line.as_slice());
                    decisions += 1;
                }
            }
            if decisions > 0 {
                self.decisions.apply_batch(batch)?;
            }
            Ok(())
        })
    }
}

/// Removes sled snapshots that a crash left half-written; returns how many.
///
/// sled writes a snapshot to `snap.<lsn>.generating` and renames it when whole, but at open it
/// also reads a `.generating` file, and one torn by a crash makes the database refuse to open
/// (`Corruption`). Such a file was never finished, so the last whole snapshot and the log still
/// describe everything: removing it loses nothing.
fn discard_torn_snapshots(path: &Path) -> Result<usize, LedgerError> {
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

/// sled reserves ids in strides of this many (its `idgen_persist_interval`).
const ID_STRIDE: u64 = 1_000_000;

/// An id never handed out before, across crashes too.
///
/// sled persists the start of each new stride of ids lazily; if the process dies before that
/// reaches the file, the next run hands out the same stride again. Flushing whenever an id opens
/// a stride closes that window. (The journal keeps records durable without flushing sled, so this
/// cannot be left to the flushes commits used to make.)
pub fn unique_id(db: &sled::Db) -> Result<u64, sled::Error> {
    let id = db.generate_id()?;
    if id % ID_STRIDE == 0 {
        db.flush()?;
    }
    Ok(id)
}

/// The journal beside the sled directory: `<ledger>.journal`.
fn journal_path(path: &Path) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".journal");
    std::path::PathBuf::from(name)
}

/// A decision's journal line, written without copying the record; the same shape as
/// [`ExportLine::Decision`].
#[derive(serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum DecisionLine<'a> {
    Decision(&'a DecisionRecord),
}

fn line(record: ExportLine) -> Result<Vec<u8>, LedgerError> {
    serde_json::to_vec(&record).map_err(LedgerError::Encode)
}

fn is_lock_error(err: &sled::Error) -> bool {
    matches!(err, sled::Error::Io(io) if io.kind() == std::io::ErrorKind::WouldBlock
        || io.to_string().contains("lock"))
}

fn encode(record: &impl Serialize) -> Result<Vec<u8>, LedgerError> {
    serde_json::to_vec(record).map_err(LedgerError::Encode)
}

/// Decodes one record, refusing shapes newer than this build knows.
pub(crate) fn decode<T: DeserializeOwned>(
    place: &str,
    key: &str,
    bytes: &[u8],
) -> Result<T, LedgerError> {
    decode_value(place, key, bytes).map_err(LedgerError::Corrupt)
}

pub(crate) fn decode_value<T: DeserializeOwned>(
    place: &str,
    key: &str,
    bytes: &[u8],
) -> Result<T, Corrupt> {
    let corrupt = |reason: String| Corrupt {
        place: place.to_owned(),
        key: key.to_owned(),
        reason,
    };
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
    match value.get("schema").and_then(serde_json::Value::as_u64) {
        Some(schema) if schema <= u64::from(SCHEMA) => {}
        Some(schema) => {
            return Err(corrupt(format!(
                "schema {schema} is newer than this build's {SCHEMA}"
            )));
        }
        None => return Err(corrupt("no schema version".to_owned())),
    }
    serde_json::from_value(value).map_err(|e| corrupt(e.to_string()))
}

fn key_text(key: &[u8]) -> String {
    match <[u8; 8]>::try_from(key) {
        Ok(seq) => u64::from_be_bytes(seq).to_string(),
        Err(_) => String::from_utf8_lossy(key).into_owned(),
    }
}

/// [`scan`], keeping only one session's records when `session_id` is given.
fn scan_session<T: DeserializeOwned + SessionScoped>(
    tree: &sled::Tree,
    place: &str,
    session_id: Option<&str>,
) -> Result<(Vec<T>, Vec<Corrupt>), LedgerError> {
    let (mut records, corrupt) = scan::<T>(tree, place)?;
    if let Some(session) = session_id {
        records.retain(|r| r.session_id() == session);
    }
    Ok((records, corrupt))
}

fn scan<T: DeserializeOwned>(
    tree: &sled::Tree,
    place: &str,
) -> Result<(Vec<T>, Vec<Corrupt>), LedgerError> {
    let mut records = Vec::new();
    let mut corrupt = Vec::new();
    for entry in tree.iter() {
        let (key, bytes) = entry?;
        match decode_value(place, &key_text(&key), &bytes) {
            Ok(record) => records.push(record),
            Err(bad) => corrupt.push(bad),
        }
    }
    Ok((records, corrupt))
}
