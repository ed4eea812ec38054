//! A session's grants without reading anyone else's: the `grants_by_session` index on disk and
//! the in-memory grant view of each session the daemon has decided for.
//!
//! **The index.** The `grants` tree stays keyed by grant id (spending, revoking and the chain
//! name a grant by its id); beside it, `grants_by_session` holds one empty value per grant under
//! `len(session) as u32 BE ++ session ++ grant id`, so a prefix scan finds one session's grants.
//! A grant record that does not decode cannot name its session: it is indexed under the empty
//! session and reported in every session's view, as before. A new grant's index entry is written
//! by the commit's leader right after the record; the journal replays both at open. A ledger
//! written before the index existed is indexed once at open (the key [`BUILT`] marks it done).
//!
//! **The cache.** A session's view is kept in memory while a [`GrantLease`] of it lives — the
//! daemon's live session holds one, so the view goes when the session does, and a daemon that
//! runs for months keeps only its live sessions' views. Without a lease a read comes from disk.
//! A kept view is read from disk (its index prefix, each record and the card that backs it) on
//! first use, then kept: every change of a grant record goes through the
//! ledger, which updates the cached view of its session — a new grant is added (in force when
//! its card backs it), a spent or revoked grant is marked inactive the moment it is swapped into
//! sled, before its commit (so a racing call cannot use it meanwhile), and a card's answer lets
//! the grants set aside for want of it stand. A failed commit unloads the affected sessions'
//! views, so the next read comes from disk again. Every update is idempotent and a state, once
//! inactive, never comes back, so an update and a concurrent load may meet in either order.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use codaris_policy::Grant;

use super::{GrantView, Ledger, decode_value};
use crate::error::{Corrupt, LedgerError};
use crate::grant_sets::SetName;
use crate::record::{Backing, CardRecord, GrantRecord};

/// The key that marks the index as built for every grant record of the ledger. No entry's key
/// starts with `0xff` (that would be a session id of 4 GiB).
pub(super) const BUILT: &[u8] = &[0xff];

/// The index key prefix of a session's grants.
pub(super) fn session_prefix(session_id: &str) -> Vec<u8> {
    let len = u32::try_from(session_id.len()).unwrap_or(u32::MAX);
    let mut key = Vec::with_capacity(4 + session_id.len() + 13);
    key.extend_from_slice(&len.to_be_bytes());
    key.extend_from_slice(session_id.as_bytes());
    key
}

/// The index key of one grant.
pub(super) fn index_key(session_id: &str, grant_id: &[u8]) -> Vec<u8> {
    let mut key = session_prefix(session_id);
    key.extend_from_slice(grant_id);
    key
}

/// What a session's grant record means for its decisions.
#[derive(Debug, Clone)]
enum Status {
    /// Active and backed: the policy sees it.
    InForce(Grant),
    /// Active, but no answered card backs it (yet): kept whole, so a later answer can let it
    /// stand.
    SetAside(Box<GrantRecord>),
    /// Spent or revoked: never in force again.
    Inactive,
}

#[derive(Debug, Default)]
struct SessionGrants {
    /// The [`GrantLease`]s of the session alive: the entry goes when the last one does.
    leases: usize,
    /// Whether `records` and `corrupt` were read from disk (and kept up to date since); an
    /// entry is made unloaded and unloaded again when a failed commit leaves it unsure.
    loaded: bool,
    /// Every grant record of the session, by id (ledger order).
    records: BTreeMap<String, Status>,
    /// Grant records that do not decode (of no known session) and journal lines that did not.
    corrupt: Vec<Corrupt>,
    /// The view built from `records`, until the next change.
    view: Option<Arc<GrantView>>,
    /// How decisions name the grants of `view`, once a decision has; dropped with the view.
    name: Option<SetName>,
}

impl SessionGrants {
    fn view(&mut self) -> Arc<GrantView> {
        if let Some(view) = &self.view {
            return view.clone();
        }
        let mut view = GrantView {
            corrupt: self.corrupt.clone(),
            ..GrantView::default()
        };
        for (id, status) in &self.records {
            match status {
                Status::InForce(grant) => view.grants.push(grant.clone()),
                Status::SetAside(_) => view.set_aside.push(id.clone()),
                Status::Inactive => {}
            }
        }
        let view = Arc::new(view);
        self.view = Some(view.clone());
        view
    }

    /// The records changed: the view (and its name) is built again when next asked for.
    fn changed(&mut self) {
        self.view = None;
        self.name = None;
    }

    /// What was read from disk replaces what was kept; the leases stay.
    fn reload(&mut self, read: SessionGrants) {
        let leases = self.leases;
        *self = read;
        self.leases = leases;
        self.loaded = true;
    }

    /// What was kept is unsure: the next read loads from disk.
    fn unload(&mut self) {
        self.reload(SessionGrants::default());
        self.loaded = false;
    }
}

type Kept = Arc<Mutex<HashMap<String, SessionGrants>>>;

fn lock(kept: &Kept) -> std::sync::MutexGuard<'_, HashMap<String, SessionGrants>> {
    kept.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The kept views, by session: only those a [`GrantLease`] holds.
#[derive(Debug, Default)]
pub(super) struct GrantCache {
    sessions: Kept,
}

impl GrantCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, SessionGrants>> {
        lock(&self.sessions)
    }

    /// Unloads the sessions' views (after a failed commit): the next read loads from disk.
    pub(super) fn invalidate<'a>(&self, sessions: impl IntoIterator<Item = &'a str>) {
        let mut cache = self.lock();
        for session in sessions {
            if let Some(entry) = cache.get_mut(session) {
                entry.unload();
            }
        }
    }
}

/// Keeps one session's grant view in memory while it lives ([`Ledger::lease_grant_view`]):
/// the daemon's live session owns one, and dropping it (the session ended) lets the view go.
#[derive(Debug)]
#[must_use = "the view is kept only while the lease lives"]
pub struct GrantLease {
    kept: Kept,
    session_id: String,
}

impl GrantLease {
    /// The session whose view this keeps.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }
}

impl Drop for GrantLease {
    fn drop(&mut self) {
        let mut cache = lock(&self.kept);
        if let Some(entry) = cache.get_mut(&self.session_id) {
            entry.leases = entry.leases.saturating_sub(1);
            if entry.leases == 0 {
                cache.remove(&self.session_id);
            }
        }
    }
}

fn status(record: GrantRecord, stands: bool) -> Status {
    if !record.is_active() {
        Status::Inactive
    } else if stands {
        Status::InForce(record.grant)
    } else {
        Status::SetAside(Box::new(record))
    }
}

impl Ledger {
    /// Keeps the session's grant view in memory until the lease (the last one, when several)
    /// is dropped. Nothing is read now: the first read after it loads the view.
    pub fn lease_grant_view(&self, session_id: &str) -> GrantLease {
        self.grant_cache
            .lock()
            .entry(session_id.to_owned())
            .or_default()
            .leases += 1;
        GrantLease {
            kept: self.grant_cache.sessions.clone(),
            session_id: session_id.to_owned(),
        }
    }

    /// How many sessions' grant views are kept in memory (those a lease holds).
    pub fn grant_views_kept(&self) -> usize {
        self.grant_cache.lock().len()
    }

    /// The session's grants in force: active, and standing on the answered card that backs
    /// them ([`crate::backing::stands`]); the others are listed in `set_aside`. Read from disk
    /// (the session's own grants only), once while a [`GrantLease`] of the session lives, then
    /// kept up to date in memory.
    pub fn grant_view_shared(&self, session_id: &str) -> Result<Arc<GrantView>, LedgerError> {
        let mut cache = self.grant_cache.lock();
        let Some(entry) = cache.get_mut(session_id) else {
            drop(cache);
            return Ok(self.load_session_grants(session_id)?.view());
        };
        if !entry.loaded {
            // Loaded under the lock: an update waits for the load, then applies to what it read.
            entry.reload(self.load_session_grants(session_id)?);
        }
        Ok(entry.view())
    }

    /// How a decision of `session_id` names the grants of `view`: kept with the session's view
    /// when `view` is the one the ledger keeps (worked out by the first decision that asks),
    /// worked out afresh for any other.
    pub(super) fn set_name(&self, session_id: &str, view: &Arc<GrantView>) -> SetName {
        let mut cache = self.grant_cache.lock();
        match cache.get_mut(session_id) {
            Some(entry)
                if entry
                    .view
                    .as_ref()
                    .is_some_and(|kept| Arc::ptr_eq(kept, view)) =>
            {
                entry
                    .name
                    .get_or_insert_with(|| SetName::of(session_id, &view.grants))
                    .clone()
            }
            _ => {
                drop(cache);
                SetName::of(session_id, &view.grants)
            }
        }
    }

    /// Unloads the session's kept view: the next read loads it from disk again. (What keeps a
    /// view at all is its [`GrantLease`].)
    pub fn forget_grant_view(&self, session_id: &str) {
        self.grant_cache.invalidate([session_id]);
    }

    /// [`Ledger::grant_view_shared`], as an owned value.
    pub fn grant_view(&self, session_id: &str) -> Result<GrantView, LedgerError> {
        let view = self.grant_view_shared(session_id)?;
        Ok(GrantView::clone(&view))
    }

    /// Reads one session's grants through the index, each with the card that backs it.
    fn load_session_grants(&self, session_id: &str) -> Result<SessionGrants, LedgerError> {
        let (records, corrupt) = self.session_grant_records(session_id)?;
        let mut cards: HashMap<String, Option<CardRecord>> = HashMap::new();
        let mut entry = SessionGrants {
            corrupt,
            ..SessionGrants::default()
        };
        for record in records {
            let stands = record.is_active() && {
                let card = match &record.backing {
                    Some(Backing::Card { card_id }) => match cards.get(card_id) {
                        Some(card) => card.clone(),
                        None => {
                            let card = self.card_record(card_id)?;
                            cards.insert(card_id.clone(), card.clone());
                            card
                        }
                    },
                    _ => None,
                };
                crate::backing::stands(&record, card.as_ref())
            };
            entry
                .records
                .insert(record.id.clone(), status(record, stands));
        }
        Ok(entry)
    }

    /// A card as stored; `None` when it is missing or does not decode (it backs nothing).
    fn card_record(&self, card_id: &str) -> Result<Option<CardRecord>, LedgerError> {
        Ok(match self.cards.get(card_id.as_bytes())? {
            Some(bytes) => decode_value::<CardRecord>("cards", card_id, &bytes).ok(),
            None => None,
        })
    }

    /// One session's grant records through the index, oldest first, and the grant records that
    /// do not decode (which name no session) with the journal lines that did not.
    pub(super) fn session_grant_records(
        &self,
        session_id: &str,
    ) -> Result<(Vec<GrantRecord>, Vec<Corrupt>), LedgerError> {
        let mut records = Vec::new();
        let mut corrupt = Vec::new();
        let prefix = session_prefix(session_id);
        for entry in self.grants_by_session.scan_prefix(&prefix) {
            let (key, _) = entry?;
            let id = &key[prefix.len()..];
            let Some(bytes) = self.grants.get(id)? else {
                // An entry whose record a failed commit took back out.
                continue;
            };
            let id = String::from_utf8_lossy(id);
            match decode_value::<GrantRecord>("grants", &id, &bytes) {
                // Re-checked: an entry only counts for the session its record names.
                Ok(record) if record.session_id == session_id => records.push(record),
                Ok(_) => {}
                Err(bad) => corrupt.push(bad),
            }
        }
        if !session_id.is_empty() {
            for entry in self.grants_by_session.scan_prefix(session_prefix("")) {
                let (key, _) = entry?;
                let id = &key[4..];
                if let Some(bytes) = self.grants.get(id)?
                    && let Err(bad) =
                        decode_value::<GrantRecord>("grants", &String::from_utf8_lossy(id), &bytes)
                {
                    corrupt.push(bad);
                }
            }
        }
        corrupt.extend(self.unreadable_lines()?);
        Ok((records, corrupt))
    }

    /// Indexes one grant record by its session (the empty session when it does not decode).
    pub(super) fn index_grant_bytes(&self, id: &[u8], bytes: &[u8]) -> Result<(), LedgerError> {
        let session = decode_value::<GrantRecord>("grants", "", bytes)
            .map(|record| record.session_id)
            .unwrap_or_default();
        self.grants_by_session
            .insert(index_key(&session, id), &[] as &[u8])?;
        Ok(())
    }

    /// Indexes every grant record once, for a ledger written before the index existed (and
    /// finishes an indexing a crash cut short: indexing twice changes nothing).
    pub(super) fn build_grant_index(&self) -> Result<(), LedgerError> {
        if self.grants_by_session.contains_key(BUILT)? {
            return Ok(());
        }
        for entry in self.grants.iter() {
            let (id, bytes) = entry?;
            self.index_grant_bytes(&id, &bytes)?;
        }
        self.grants_by_session.insert(BUILT, &[] as &[u8])?;
        self.disk.sync(&self.db)
    }

    /// A new grant record is durable: its session's view (if loaded) takes it.
    pub(super) fn cache_added(&self, record: &GrantRecord, stands: bool) {
        let mut cache = self.grant_cache.lock();
        if let Some(entry) = cache.get_mut(&record.session_id).filter(|e| e.loaded) {
            entry
                .records
                .entry(record.id.clone())
                .or_insert_with(|| status(record.clone(), stands));
            entry.changed();
        }
    }

    /// A grant was spent or revoked (swapped into sled): it is in force no more.
    pub(super) fn cache_deactivated(&self, session_id: &str, id: &str) {
        let mut cache = self.grant_cache.lock();
        if let Some(entry) = cache.get_mut(session_id).filter(|e| e.loaded) {
            entry.records.insert(id.to_owned(), Status::Inactive);
            entry.changed();
        }
    }

    /// A card was answered: the grants of its session set aside for want of it may stand now.
    pub(super) fn cache_card_answered(&self, card: &CardRecord) {
        let mut cache = self.grant_cache.lock();
        let Some(entry) = cache.get_mut(&card.session_id).filter(|e| e.loaded) else {
            return;
        };
        let mut changed = false;
        for status in entry.records.values_mut() {
            if let Status::SetAside(record) = status
                && matches!(&record.backing, Some(Backing::Card { card_id }) if *card_id == card.id)
                && crate::backing::stands(record, Some(card))
            {
                *status = Status::InForce(record.grant.clone());
                changed = true;
            }
        }
        if changed {
            entry.changed();
        }
    }
}
