//! The ledger database: sled trees for grants, cards, decisions, grant sets and the chain, and
//! the appends that go through the group commit (its path is `commit_path.rs`). The handles for
//! the daemon's other state (sessions, tool state, conversations, ids) are handed out by
//! `handles.rs`.

use std::path::{Path, PathBuf};

use codaris_policy::{Grant, GrantSet, Lifetime};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::chain::{Link, RecordKind, Tail};
use crate::chain_log::ChainLog;
use crate::commit::GroupCommit;
use crate::conversations::Conversations;
use crate::decision_log::DecisionLog;
use crate::disk::Disk;
use crate::error::{Corrupt, LedgerError};
use crate::grant_sets::{self, SetName};
use crate::journal::Journal;
use crate::record::{
    Backing, CardRecord, DecisionRecord, GrantRecord, GrantSetRecord, SCHEMA, SessionScoped,
    Versioned,
};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

mod audit;
mod cards;
mod codec;
mod commit_path;
mod grants;
mod handles;
mod migrate;
mod published;
mod reads;
mod recover;
mod session_index;
mod side_records;

pub use grants::GrantLease;
use recover::discard_torn_snapshots;

use codec::encode;
pub(crate) use codec::{decode, decode_stored, decode_value, key_text};

/// The grants in force for one session, as the policy reads them, plus any grant records that
/// could not be read (they grant nothing, and the caller reports them).
#[derive(Debug, Clone, Default)]
pub struct GrantView {
    pub grants: Vec<Grant>,
    pub corrupt: Vec<Corrupt>,
    /// Active grant records that grant nothing because no answered card backs them (the
    /// caller reports them; `audit replay` names why).
    pub set_aside: Vec<String>,
}

impl GrantView {
    pub fn grant_set(&self) -> GrantSet {
        GrantSet::from_grants(self.grants.iter().cloned())
    }
}

/// How a ledger is opened ([`Ledger::open_with`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LedgerOptions {
    /// sled's page cache, in bytes. Reads are proportional to what is asked, so a small cache
    /// serves them; sled's own default (1 GiB) would let a long-running daemon grow to it.
    pub cache_bytes: u64,
}

/// The page cache when none is named: 64 MiB.
pub const DEFAULT_CACHE_BYTES: u64 = 64 * 1024 * 1024;

impl Default for LedgerOptions {
    fn default() -> Self {
        Self {
            cache_bytes: DEFAULT_CACHE_BYTES,
        }
    }
}

/// How long [`Ledger::open`] retries a locked database.
pub const LOCK_RETRY: std::time::Duration = std::time::Duration::from_millis(500);

#[derive(Debug)]
pub struct Ledger {
    db: sled::Db,
    grants: sled::Tree,
    /// One entry per grant under its session (see `grants.rs`), so a session's grants load
    /// without reading anyone else's.
    grants_by_session: sled::Tree,
    /// Each session's grants in force, read from disk once and then kept (see `grants.rs`).
    grant_cache: grants::GrantCache,
    cards: sled::Tree,
    /// Undos of turns, by id (see `undo.rs`).
    undos: sled::Tree,
    /// Changes of the configuration file, by id (see `config_change.rs`).
    config_changes: sled::Tree,
    /// The operator's approvals of scheduled project jobs, by id (see `job_approval.rs`).
    job_approvals: sled::Tree,
    /// The decisions, in a file of their own (see `decision_log.rs`); only ever added to.
    decisions: Mutex<DecisionLog>,
    /// The grant sets decisions name, by key (see `grant_sets.rs`).
    grant_sets: sled::Tree,
    /// The decisions by session and sequence number, each to its offset in the decisions file
    /// (see `store/reads.rs`), in sled up to the last fold and in memory since.
    session_index: session_index::SessionIndex,
    /// Marks of one-time upgrades of the stored layout.
    meta: sled::Tree,
    /// What the reads decoded ([`Ledger::records_decoded`]).
    reads: reads::ReadStats,
    /// The chain's links, in a file of their own (see `chain_log.rs`); only ever added to.
    chain: Mutex<ChainLog>,
    /// Syncs sled's data file whenever the journal is folded into sled, and after every write
    /// of a handle; shared with the handles.
    disk: Arc<Disk>,
    conversations: Conversations,
    /// What makes each append durable (see `journal.rs`), and the chain's end.
    appender: Mutex<Appender>,
    /// Journal lines that did not decode at open, kept and reported, never trusted.
    unreadable: sled::Tree,
    /// Each queued element is committed whole: a card's answer and the grants it gave travel
    /// as one, so a failed commit leaves neither.
    commit: GroupCommit<Vec<Pending>, commit_path::Failure>,
    /// Set when sled refused a batch whose lines were already durable (see `commit_path.rs`):
    /// every later commit is refused until the ledger is reopened and replays the journal.
    halted: OnceLock<Arc<LedgerError>>,
    /// Where the chain's head is published at each fold, once the daemon names it (see
    /// `head.rs`).
    head: OnceLock<crate::head::HeadPublisher>,
    /// The unit tests' failure point: sled refusing a durable batch.
    #[cfg(test)]
    fail_apply: std::sync::atomic::AtomicBool,
    /// Held while an existing record is swapped in sled and queued, so that the queue (and so
    /// the journal and the chain) holds a record's versions in the order sled took them.
    order: Mutex<()>,
}

#[derive(Debug)]
struct Appender {
    journal: Journal,
    tail: Tail,
}

/// A record version waiting for the next group commit. The leader links it into the chain,
/// appends its journal line, and then (for a new record) writes it to sled: a new record is
/// readable only once it is durable, and concurrent writers never contend inside sled.
#[derive(Debug)]
struct Pending {
    kind: RecordKind,
    /// The sled key.
    key: Vec<u8>,
    /// The key as the chain names it.
    key_text: String,
    session_id: String,
    /// The record's JSON, as sled stores it.
    value: Vec<u8>,
    digest: String,
    /// The digest of `value` (its link's `stored`).
    stored: String,
    /// For an update its writer already swapped into sled: the version it replaced, put back
    /// if the commit fails. `None` for a new record.
    replaced: Option<sled::IVec>,
}

impl Pending {
    fn new<R: Serialize + SessionScoped>(
        kind: RecordKind,
        key: &[u8],
        key_text: String,
        record: &R,
    ) -> Result<Self, LedgerError> {
        let value = encode(record)?;
        Ok(Pending {
            kind,
            key: key.to_vec(),
            key_text,
            session_id: record.session_id().to_owned(),
            stored: crate::chain::bytes_digest(&value),
            value,
            digest: crate::chain::digest(record).map_err(LedgerError::Encode)?,
            replaced: None,
        })
    }
}

impl Ledger {
    /// Opens (creating if needed) the ledger at `path`. Fails with [`LedgerError::Locked`] when
    /// a running daemon holds it.
    ///
    /// sled releases its file lock from a background thread shortly after the last handle is
    /// dropped, so a lock held by this same process a moment ago is retried for up to
    /// [`LOCK_RETRY`] before it counts as another process's.
    pub fn open(path: &Path) -> Result<Self, LedgerError> {
        Self::open_with(path, LedgerOptions::default())
    }

    /// [`Ledger::open`] with options: the size of sled's page cache.
    pub fn open_with(path: &Path, options: LedgerOptions) -> Result<Self, LedgerError> {
        let deadline = std::time::Instant::now() + LOCK_RETRY;
        let mut discarded = false;
        let db = loop {
            match sled::Config::new()
                .path(path)
                .cache_capacity(options.cache_bytes)
                .open()
            {
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
        let meta = db.open_tree("meta")?;
        let durable_chain = recover::durable_len(&meta, recover::CHAIN_DURABLE)?;
        let durable_decisions = recover::durable_len(&meta, recover::DECISIONS_DURABLE)?;
        let ledger = Self {
            grants: db.open_tree("grants")?,
            grants_by_session: db.open_tree("grants_by_session")?,
            grant_cache: grants::GrantCache::default(),
            cards: db.open_tree("cards")?,
            undos: db.open_tree("undos")?,
            config_changes: db.open_tree("config_changes")?,
            job_approvals: db.open_tree("job_approvals")?,
            decisions: Mutex::new(DecisionLog::open(
                &sibling(path, ".decisions"),
                durable_decisions,
            )?),
            grant_sets: db.open_tree("grant_sets")?,
            session_index: session_index::SessionIndex::new(db.open_tree(session_index::TREE)?),
            meta,
            reads: reads::ReadStats::default(),
            chain: Mutex::new(ChainLog::open(&sibling(path, ".chain"), durable_chain)?),
            unreadable: db.open_tree("unreadable")?,
            disk: Arc::new(Disk::open(path, &db)?),
            db,
            conversations: Conversations::open(path)?,
            appender: Mutex::new(Appender {
                journal: Journal::open(&journal_path(path))?,
                tail: Tail::default(),
            }),
            commit: GroupCommit::default(),
            halted: OnceLock::new(),
            head: OnceLock::new(),
            #[cfg(test)]
            fail_apply: std::sync::atomic::AtomicBool::new(false),
            order: Mutex::new(()),
        };
        ledger.move_chain_tree(durable_chain.is_some())?;
        ledger.move_decisions_tree(durable_decisions.is_some())?;
        ledger.recover()?;
        ledger.build_grant_index()?;
        ledger.appender().tail = ledger.chain_tail()?;
        // A restart begins a fresh stride of ids; take one now so the stride is reserved on disk
        // before any id from it is handed out.
        ledger.next_id()?;
        Ok(ledger)
    }

    fn appender(&self) -> std::sync::MutexGuard<'_, Appender> {
        self.appender.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn chain(&self) -> std::sync::MutexGuard<'_, ChainLog> {
        self.chain.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn decision_log(&self) -> std::sync::MutexGuard<'_, DecisionLog> {
        self.decisions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a grant and what backs it, and returns once it is on the device: only then may
    /// it be acknowledged (and only then can a session read it).
    pub fn append_grant(
        &self,
        session_id: &str,
        grant: Grant,
        backing: Backing,
        at_ms: u64,
    ) -> Result<GrantRecord, LedgerError> {
        let id = format!("g{:012}", self.next_id()?);
        let card_id = match &backing {
            Backing::Card { card_id } => Some(card_id.clone()),
            Backing::Allowlist { .. } => None,
        };
        let record = GrantRecord {
            schema: SCHEMA,
            id: id.clone(),
            session_id: session_id.to_owned(),
            grant: grant.with_id(&id),
            granted_at_ms: at_ms,
            card_id,
            backing: Some(backing),
            consumed_at_ms: None,
            revoked_at_ms: None,
        };
        self.commit(Pending::new(
            RecordKind::Grant,
            id.as_bytes(),
            id.clone(),
            &record,
        )?)?;
        self.cache_added(&record, self.grant_stands(&record)?);
        Ok(record)
    }

    /// Spends a `once` grant. Exactly one caller gets `true`, however many race: the swap only
    /// succeeds against the unspent record.
    pub fn consume_once(&self, id: &str, at_ms: u64) -> Result<bool, LedgerError> {
        loop {
            let order = self.order.lock().unwrap_or_else(PoisonError::into_inner);
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
            if let Some(ticket) = self.swap(RecordKind::Grant, id, current, &spent)? {
                // At once, not after the commit: a racing call must not rely on it meanwhile.
                self.cache_deactivated(&spent.session_id, id);
                drop(order);
                self.wait(ticket)?;
                return Ok(true);
            }
            // Someone changed the record between our read and our swap: look again.
        }
    }

    /// Revokes a grant; revoking a revoked grant returns it unchanged.
    pub fn revoke(&self, id: &str, at_ms: u64) -> Result<GrantRecord, LedgerError> {
        loop {
            let order = self.order.lock().unwrap_or_else(PoisonError::into_inner);
            let Some(current) = self.grants.get(id.as_bytes())? else {
                return Err(LedgerError::GrantNotFound { id: id.to_owned() });
            };
            let record: GrantRecord = decode("grants", id, &current)?;
            if record.revoked_at_ms.is_some() {
                return Ok(record);
            }
            let revoked = GrantRecord {
                revoked_at_ms: Some(at_ms),
                ..record
            };
            if let Some(ticket) = self.swap(RecordKind::Grant, id, current, &revoked)? {
                self.cache_deactivated(&revoked.session_id, id);
                drop(order);
                self.wait(ticket)?;
                return Ok(revoked);
            }
        }
    }

    /// Swaps a new version of an existing record into sled and queues it, under the order lock.
    /// `None`: the record changed since `current` was read.
    fn swap<R: Serialize + SessionScoped>(
        &self,
        kind: RecordKind,
        id: &str,
        current: sled::IVec,
        updated: &R,
    ) -> Result<Option<u64>, LedgerError> {
        let mut pending = Pending::new(kind, id.as_bytes(), id.to_owned(), updated)?;
        let Some(tree) = self.tree(kind) else {
            return Err(LedgerError::Corrupt(Corrupt {
                place: "decisions".to_owned(),
                key: id.to_owned(),
                reason: "a decision is never changed once recorded".to_owned(),
            }));
        };
        let swapped = tree.compare_and_swap(
            id.as_bytes(),
            Some(&current),
            Some(pending.value.as_slice()),
        )?;
        if swapped.is_err() {
            return Ok(None);
        }
        pending.replaced = Some(current);
        Ok(Some(self.commit.submit(vec![pending])))
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
        let Some(session_id) = session_id else {
            let (records, mut corrupt) = self.scan_session(&self.grants, "grants", None)?;
            corrupt.extend(self.unreadable_lines()?);
            return Ok((records, corrupt));
        };
        self.session_grant_records(session_id)
    }

    /// Whether the record stands on the answered card that backs it ([`crate::backing::stands`]);
    /// one that does not grants nothing, active or not.
    pub fn grant_stands(&self, record: &GrantRecord) -> Result<bool, LedgerError> {
        let card = match &record.backing {
            Some(Backing::Card { card_id }) => match self.cards.get(card_id.as_bytes())? {
                Some(bytes) => decode::<CardRecord>("cards", card_id, &bytes).ok(),
                None => None,
            },
            _ => None,
        };
        Ok(crate::backing::stands(record, card.as_ref()))
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

    /// Records a dispatch decision; concurrent callers share one commit. The ledger's grants at
    /// the end of its request are stored as a grant set the record names (see
    /// [`Ledger::append_decision_on`]), not copied into the record; the record returned holds
    /// them, as given.
    pub fn append_decision(
        &self,
        mut record: DecisionRecord,
    ) -> Result<DecisionRecord, LedgerError> {
        let set = grant_sets::split_ledger_grants(&mut record.request.grants);
        let mut stored = self.append_decision_on(record, &set)?;
        stored.request.grants.extend(set);
        Ok(stored)
    }

    /// Records a decision whose grants in force were its request's own followed by `set`, the
    /// ledger's grants (a session's [`GrantView::grants`]), without copying `set` into it: the
    /// record names the grant set that lists them, written in the same commit when the ledger
    /// does not hold it yet. The record returned is as stored: its `request.grants` are its own,
    /// and every read fills in the set's after them. A `set` holding a grant without a ledger id
    /// is stored in the record itself.
    pub fn append_decision_on(
        &self,
        record: DecisionRecord,
        set: &[Grant],
    ) -> Result<DecisionRecord, LedgerError> {
        let name = SetName::of(record.grants_session(), set);
        self.append_named(record, set, &name)
    }

    /// [`Ledger::append_decision_on`] with the grants of `view`, the record's session's view as
    /// [`Ledger::grant_view_shared`] gave it. How the record names them reads every grant; for
    /// the view the ledger keeps, that is worked out once and kept with it until the session's
    /// grants change, so a decision's cost does not grow with its session's grants (10,000 of
    /// them added 190 µs to every call). Any other view is named afresh.
    pub fn append_decision_in_view(
        &self,
        record: DecisionRecord,
        view: &Arc<GrantView>,
    ) -> Result<DecisionRecord, LedgerError> {
        let name = self.set_name(record.grants_session(), view);
        self.append_named(record, &view.grants, &name)
    }

    fn append_named(
        &self,
        mut record: DecisionRecord,
        set: &[Grant],
        name: &SetName,
    ) -> Result<DecisionRecord, LedgerError> {
        if *name == SetName::Inline {
            // A set cannot name them: they are stored in the record itself.
            record.request.grants.extend_from_slice(set);
        }
        record.seq = self.next_id()?;
        record.schema = SCHEMA;
        // serde_json's `preserve_order` (on in every build: the workspace Cargo.toml) keeps
        // the model's key order in the arguments; the stored bytes must not follow it:
        // sorted, as the ledger always wrote them (tests/map_order.rs).
        record.request.args.sort_all_objects();
        let mut pendings = Vec::with_capacity(2);
        record.grant_set = None;
        if let SetName::Key(key) = name {
            grant_sets::name_set(&mut record, key, set.len());
            if !self.grant_sets.contains_key(key.as_bytes())? {
                // Two decisions racing on a new set may both write it: the same key and bytes,
                // so the second changes nothing.
                let listed = grant_sets::set_record(record.grants_session(), key, set);
                pendings.push(Pending::new(
                    RecordKind::GrantSet,
                    key.as_bytes(),
                    key.clone(),
                    &listed,
                )?);
            }
        }
        pendings.push(Pending::new(
            RecordKind::Decision,
            &record.seq.to_be_bytes(),
            record.seq.to_string(),
            &record,
        )?);
        let ticket = self.commit.submit(pendings);
        self.wait(ticket)?;
        Ok(record)
    }

    /// Decisions oldest first (of one session when given, read through the session index),
    /// and the records that do not decode. For the newest few, [`Ledger::newest_decisions`]
    /// reads only those.
    pub fn decisions(
        &self,
        session_id: Option<&str>,
    ) -> Result<(Vec<DecisionRecord>, Vec<Corrupt>), LedgerError> {
        let (mut records, mut corrupt) = self.stored_decisions(session_id)?;
        corrupt.extend(self.fill_grant_sets(&mut records)?);
        Ok((records, corrupt))
    }

    /// [`Ledger::decisions`] as stored: the grants their sets name are not filled in.
    pub(crate) fn stored_decisions(
        &self,
        session_id: Option<&str>,
    ) -> Result<(Vec<DecisionRecord>, Vec<Corrupt>), LedgerError> {
        if let Some(session) = session_id {
            return self.session_decisions(session);
        }
        // The file is read in order; decoding its lines, most of a whole-ledger read (`audit
        // replay`, a candidate's replay), is shared by the cores in chunks that keep the order.
        let raw: Vec<_> = self.decision_log().reader().records().collect();
        let decode = |chunk: &[crate::log_file::Read]| -> Vec<Result<DecisionRecord, Corrupt>> {
            chunk
                .iter()
                .map(|record| {
                    let (at, payload) = record.as_ref().map_err(Clone::clone)?;
                    let (seq, json) = crate::decision_log::split(*at, payload)?;
                    self.decode_decision(seq, json)
                })
                .collect()
        };
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        let decoded: Vec<Result<DecisionRecord, Corrupt>> = if workers < 2 || raw.len() < 4096 {
            decode(&raw)
        } else {
            std::thread::scope(|scope| {
                let parts: Vec<_> = raw
                    .chunks(raw.len().div_ceil(workers))
                    .map(|chunk| scope.spawn(move || decode(chunk)))
                    .collect();
                parts
                    .into_iter()
                    .flat_map(|part| {
                        // A part that could not be decoded is reported, never dropped silently.
                        part.join().unwrap_or_else(|_| {
                            vec![Err(Corrupt {
                                place: "decisions".to_owned(),
                                key: String::new(),
                                reason: "a part of the decision log could not be decoded"
                                    .to_owned(),
                            })]
                        })
                    })
                    .collect()
            })
        };
        let mut records = Vec::with_capacity(decoded.len());
        let mut corrupt = Vec::new();
        for one in decoded {
            match one {
                Ok(record) => records.push(record),
                Err(bad) => corrupt.push(bad),
            }
        }
        corrupt.extend(self.unreadable_lines()?);
        Ok((records, corrupt))
    }

    /// The grant sets decisions name (of one session when given), and those that do not decode.
    pub(crate) fn grant_sets(
        &self,
        session_id: Option<&str>,
    ) -> Result<(Vec<GrantSetRecord>, Vec<Corrupt>), LedgerError> {
        self.scan_session(&self.grant_sets, "grant_sets", session_id)
    }

    /// The chain's links in order, and those that do not decode.
    pub fn links(&self) -> Result<(Vec<Link>, Vec<Corrupt>), LedgerError> {
        let mut links = Vec::new();
        let mut corrupt = Vec::new();
        let reader = self.chain().reader();
        for record in reader.records() {
            match record.and_then(|(at, payload)| crate::chain_log::decode_payload(at, &payload)) {
                Ok(link) => links.push(link),
                Err(bad) => corrupt.push(bad),
            }
        }
        Ok((links, corrupt))
    }

    /// The raw bytes of the journal lines that did not decode, with their places.
    pub(crate) fn unreadable_bytes(&self) -> Result<Vec<(String, Vec<u8>)>, LedgerError> {
        let mut lines = Vec::new();
        for entry in self.unreadable.iter() {
            let (key, bytes) = entry?;
            lines.push((String::from_utf8_lossy(&key).into_owned(), bytes.to_vec()));
        }
        Ok(lines)
    }

    /// The tree of a kind's records; decisions are in a file of their own.
    fn tree(&self, kind: RecordKind) -> Option<&sled::Tree> {
        match kind {
            RecordKind::Grant => Some(&self.grants),
            RecordKind::Card => Some(&self.cards),
            RecordKind::Decision => None,
            RecordKind::GrantSet => Some(&self.grant_sets),
            RecordKind::Undo => Some(&self.undos),
            RecordKind::ConfigChange => Some(&self.config_changes),
            RecordKind::JobApproval => Some(&self.job_approvals),
        }
    }
}

impl Ledger {
    /// Why this ledger records nothing more until it is opened again, if it does not: sled
    /// refused a durable batch, a flush of sled never finished, or one failed. sled keeps its
    /// first I/O error for the life of the handle, so freeing space does not help; the journal
    /// holds every acknowledged record, and the next open replays it.
    pub fn wedged(&self) -> Option<crate::error::Wedged> {
        use crate::error::Wedged;
        if self.halted.get().is_some() {
            Some(Wedged::Halted)
        } else if self.disk.is_stuck() {
            Some(Wedged::FlushStuck)
        } else if self.disk.has_failed() {
            Some(Wedged::StorageFailed)
        } else {
            None
        }
    }
}

impl Drop for Ledger {
    fn drop(&mut self) {
        // sled, dropped with its last handle, flushes: after a flush was given up on it would
        // wait for ever (see `disk.rs`), so one handle is kept until the process ends. The
        // journal holds whatever sled did not write, and the next open replays it.
        if self.disk.is_stuck() {
            std::mem::forget(self.db.clone());
        }
    }
}

/// The journal beside the sled directory: `<ledger>.journal`.
fn journal_path(path: &Path) -> PathBuf {
    sibling(path, ".journal")
}

/// A file beside the sled directory: `<ledger><suffix>`.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn is_lock_error(err: &sled::Error) -> bool {
    matches!(err, sled::Error::Io(io) if io.kind() == std::io::ErrorKind::WouldBlock
        || io.to_string().contains("lock"))
}

impl Ledger {
    /// [`Ledger::scan`], keeping only one session's records when `session_id` is given.
    fn scan_session<T: DeserializeOwned + SessionScoped + Versioned>(
        &self,
        tree: &sled::Tree,
        place: &str,
        session_id: Option<&str>,
    ) -> Result<(Vec<T>, Vec<Corrupt>), LedgerError> {
        let (mut records, corrupt) = self.scan::<T>(tree, place)?;
        if let Some(session) = session_id {
            records.retain(|r| r.session_id() == session);
        }
        Ok((records, corrupt))
    }

    /// Every record of a tree in key order, and those that do not decode.
    fn scan<T: DeserializeOwned + Versioned>(
        &self,
        tree: &sled::Tree,
        place: &str,
    ) -> Result<(Vec<T>, Vec<Corrupt>), LedgerError> {
        let mut records = Vec::new();
        let mut corrupt = Vec::new();
        for entry in tree.iter() {
            let (key, bytes) = entry?;
            self.reads.count(1);
            match decode_stored(place, &key, &bytes) {
                Ok(record) => records.push(record),
                Err(bad) => corrupt.push(bad),
            }
        }
        Ok((records, corrupt))
    }
}
