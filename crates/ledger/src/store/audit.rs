//! A live ledger's whole audit, read a batch of decisions at a time.
//!
//! [`crate::audit`] of [`Ledger::evidence`] holds every decision of the ledger at once, each
//! with its grants copied in, and then digests and replays them: a year's ledger is that many
//! records in memory, and the cost per decision grew with it (page faults, the allocator).
//! [`Ledger::audit`] gives the same report, field for field and in the same order, but decodes,
//! digests, replays and checks the decisions a batch at a time, across the machine's cores, and
//! keeps of each only what the report needs. The grants a decision's set names are looked up,
//! never copied into it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use codaris_policy::{Grant, GrantSet};

use super::reads::ReadStats;
use super::{Ledger, decode_stored};
use crate::backing::{BackingCheck, GrantFinding};
use crate::chain::{self, ChainWalk, CompactLink, DecisionLink, HexDigest, RecordKind};
use crate::chain_log;
use crate::error::{Corrupt, LedgerError};
use crate::grant_sets::{self, SetGrants};
use crate::record::{DecisionRecord, GrantRecord, GrantSetRecord};
use crate::replay::{Difference, ReplayReport};

/// Records read per batch: enough that handing a batch between threads is noise, few enough
/// that the batches in flight (two a worker, and the one being merged) stay a few megabytes.
const BATCH: usize = 1024;

/// A set's grants by its key, with the session it belongs to.
type SetsByKey<'a> = HashMap<&'a str, (&'a str, SetGrants)>;

impl Ledger {
    /// The report [`crate::audit`] makes of [`Ledger::evidence`], without holding the ledger's
    /// decisions in memory: they are read, replayed and checked a batch at a time, across the
    /// machine's cores, and each is freed by the thread that decoded it.
    pub fn audit(&self) -> Result<ReplayReport, LedgerError> {
        self.audit_with(None)
    }

    /// [`Ledger::audit`], giving `each` every decision that was replayed, in order, as stored
    /// (the grants its set names are not filled into its request). The records then travel to
    /// the caller's thread and are freed there, which costs the audit about a tenth more.
    pub fn audit_each(
        &self,
        mut each: impl FnMut(&DecisionRecord),
    ) -> Result<ReplayReport, LedgerError> {
        self.audit_with(Some(&mut each))
    }

    fn audit_with(
        &self,
        mut each: Option<&mut dyn FnMut(&DecisionRecord)>,
    ) -> Result<ReplayReport, LedgerError> {
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        let (grants, mut corrupt) = self.grants(None)?;
        let (cards, bad_cards) = self.cards(None)?;
        corrupt.extend(bad_cards);
        let (sets, bad_sets) = self.grant_sets(None)?;
        corrupt.extend(bad_sets);
        let (undos, bad_undos) = self.undos(None)?;
        corrupt.extend(bad_undos);
        let (changes, bad_changes) = self.config_changes(None)?;
        corrupt.extend(bad_changes);
        let (approvals, bad_approvals) = self.job_approvals(None)?;
        corrupt.extend(bad_approvals);
        let CheckedLinks {
            links,
            hash_ok,
            corrupt: bad_links,
        } = self.checked_links(workers)?;

        let places = links.iter().map(|l| (l.kind, &*l.key, l.seq));
        let backing = BackingCheck::new(&grants, &cards, places);
        let mut unbacked = backing.records();
        let walk = ChainWalk::new(&links, |n| hash_ok[n]);
        let mut chain = walk.check(None);
        for grant in &grants {
            chain.record(
                RecordKind::Grant,
                &grant.id,
                &grant.session_id,
                &digest(grant),
            );
        }
        for card in &cards {
            chain.record(RecordKind::Card, &card.id, &card.session_id, &digest(card));
        }
        for undo in &undos {
            chain.record(RecordKind::Undo, &undo.id, &undo.session_id, &digest(undo));
        }
        for change in &changes {
            chain.record(
                RecordKind::ConfigChange,
                &change.id,
                &change.session_id,
                &digest(change),
            );
        }
        for approval in &approvals {
            chain.record(
                RecordKind::JobApproval,
                &approval.id,
                &approval.session_id,
                &digest(approval),
            );
        }
        for set in &sets {
            chain.record(
                RecordKind::GrantSet,
                &set.key,
                &set.session_id,
                &digest(set),
            );
        }

        let sets_by_key = sets_by_key(&sets, &grants);
        let judge = Judge {
            sets: &sets_by_key,
            backing: &backing,
            walk: &walk,
            reads: &self.reads,
            keep_records: each.is_some(),
        };
        let mut decided = 0;
        let mut differences = Vec::new();
        let mut unreadable = Vec::new();
        let mut unfilled = Vec::new();
        let decisions = self.decision_log().reader();
        let read = pipelined(
            decisions.records().map(Ok),
            workers,
            BuiltSets::default,
            |record, built| judge.decision(record, built),
            |judged| {
                self.reads.count(1);
                let Stored {
                    seq,
                    session_id,
                    record,
                    link,
                    digest,
                    outcome,
                } = match judged {
                    Judged::Unreadable(bad) => {
                        unreadable.push(bad);
                        return;
                    }
                    Judged::Stored(stored) => *stored,
                };
                chain.record_decision(seq, link, &session_id, &digest);
                match outcome {
                    Err(bad) => unfilled.push(bad),
                    Ok(checked) => {
                        decided += 1;
                        if let (Some(each), Some(record)) = (each.as_mut(), &record) {
                            each(record);
                        }
                        differences.extend(checked.difference);
                        unbacked.extend(checked.unbacked);
                    }
                }
            },
        );
        read?;

        // In the order an export lists them (and once each), then the decisions whose grants
        // could not be filled in, as `Evidence::from_export` adds them.
        corrupt.extend(unreadable);
        corrupt.extend(self.unreadable_lines()?);
        corrupt.extend(bad_links);
        let mut seen = HashSet::new();
        corrupt.retain(|bad| seen.insert((bad.place.clone(), bad.key.clone())));
        corrupt.extend(unfilled);
        Ok(ReplayReport {
            policy_version: codaris_policy::POLICY_VERSION.to_owned(),
            decisions: decided,
            matched: decided - differences.len(),
            differences,
            corrupt: corrupt.iter().map(ToString::to_string).collect(),
            grants: grants.len(),
            unbacked_grants: unbacked,
            undos: undos.len(),
            config_changes: changes.len(),
            undo_findings: crate::undo::verify_undos(&undos),
            chain_links: links.len(),
            chain_findings: chain.finish(),
        })
    }

    /// The chain's links in stored order, whether each one's hash matches its fields, and the
    /// links that do not decode: decoded and hashed across `workers` threads.
    fn checked_links(&self, workers: usize) -> Result<CheckedLinks, LedgerError> {
        // The tail's number is how many links an untouched chain holds: the vectors are
        // sized once instead of doubling (and copying) seventeen times on a year's chain.
        // Bounded, since a forged last link may claim any number (past the bound they grow).
        let expected = usize::try_from(self.appender().tail.seq).map_or(0, |n| n.min(1 << 20));
        let mut links = Vec::with_capacity(expected);
        let mut hash_ok = Vec::with_capacity(expected);
        let mut corrupt = Vec::new();
        let decode = |record: &Result<(u64, Vec<u8>), Corrupt>, (): &mut ()| {
            let (at, payload) = record.as_ref().map_err(Clone::clone)?;
            let link = chain_log::decode_compact(*at, payload)?;
            Ok((link.hash_matches(), link))
        };
        let reader = self.chain().reader();
        pipelined(
            reader.records().map(Ok),
            workers,
            || (),
            decode,
            |link| match link {
                Ok((ok, link)) => {
                    hash_ok.push(ok);
                    links.push(link);
                }
                Err(bad) => corrupt.push(bad),
            },
        )?;
        Ok(CheckedLinks {
            links,
            hash_ok,
            corrupt,
        })
    }
}

/// The chain's links as stored, whether each one's hash matches its fields, and the links that
/// do not decode.
struct CheckedLinks {
    links: Vec<CompactLink>,
    hash_ok: Vec<bool>,
    corrupt: Vec<Corrupt>,
}

/// Each grant set's grants, read once (as `grant_sets::fill_all` reads them for an export).
fn sets_by_key<'a>(sets: &'a [GrantSetRecord], grants: &'a [GrantRecord]) -> SetsByKey<'a> {
    let grants: HashMap<&str, &GrantRecord> = grants.iter().map(|g| (g.id.as_str(), g)).collect();
    sets.iter()
        .map(|set| {
            let listed = grant_sets::set_grants(set, &set.session_id, |id| grants.get(id).copied())
                .map(Arc::from);
            (set.key.as_str(), (set.session_id.as_str(), listed))
        })
        .collect()
}

/// What one stored decision came to.
enum Judged<'a> {
    /// It does not decode.
    Unreadable(Corrupt),
    /// Boxed: most outcomes hold one, and a record is large.
    Stored(Box<Stored<'a>>),
}

/// A decision that decoded.
struct Stored<'a> {
    seq: u64,
    session_id: String,
    /// As stored, when the caller is shown each record; otherwise freed by the worker that
    /// decoded it. Freed by another thread, mimalloc's pages return to their owner only
    /// lazily, and the workers kept taking fresh pages from the kernel (a tenth of the
    /// audit's time, measured on 100,000 decisions).
    record: Option<DecisionRecord>,
    /// Its latest link, looked up here rather than by the one thread that merges.
    link: Option<DecisionLink<'a>>,
    /// Its chain digest, as stored.
    digest: HexDigest,
    /// Replayed and checked, or (as a corrupt record) why its grants cannot be read back.
    outcome: Result<Checked, Corrupt>,
}

/// A replayed decision: how it differs, and the grants it relied on that nothing backs.
struct Checked {
    difference: Option<Difference>,
    unbacked: Vec<GrantFinding>,
}

/// The policy's grant set last built for each session (one per worker): a session's decisions
/// mostly see the same grants one after another.
#[derive(Default)]
struct BuiltSets {
    by_session: HashMap<String, Built>,
}

/// A grant set built from a decision's own grants and the set it names.
struct Built {
    set_key: Option<String>,
    inline: Vec<Grant>,
    grants: GrantSet,
}

/// What every worker reads and none changes.
struct Judge<'a> {
    sets: &'a SetsByKey<'a>,
    backing: &'a BackingCheck<'a>,
    /// The chain's walk: each decision's latest link, and whether it found anything wrong
    /// with it ([`ChainWalk::decision_link`]).
    walk: &'a ChainWalk<'a>,
    reads: &'a ReadStats,
    /// Whether each record goes to the merge (for the caller's `each`).
    keep_records: bool,
}

impl<'a> Judge<'a> {
    fn decision(
        &self,
        stored: &Result<(u64, Vec<u8>), Corrupt>,
        built: &mut BuiltSets,
    ) -> Judged<'a> {
        let split = stored
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|(at, payload)| crate::decision_log::split(*at, payload));
        let decoded = split.and_then(|(key, bytes)| {
            decode_stored::<DecisionRecord>("decisions", key, bytes).map(|record| (record, bytes))
        });
        let (record, bytes) = match decoded {
            Ok(decoded) => decoded,
            Err(bad) => return Judged::Unreadable(bad),
        };
        let link = self.walk.decision_link(record.seq);
        let digest = self.digest(&record, bytes, link);
        let outcome = self.check(&record, built);
        let seq = record.seq;
        let (session_id, record) = if self.keep_records {
            (record.session_id.clone(), Some(record))
        } else {
            (record.session_id, None)
        };
        Judged::Stored(Box::new(Stored {
            seq,
            session_id,
            record,
            link,
            digest,
            outcome,
        }))
    }

    fn check(&self, record: &DecisionRecord, built: &mut BuiltSets) -> Result<Checked, Corrupt> {
        let set = self
            .set_of(record)
            .and_then(|set| grant_sets::fits(record, &set).map(|()| set))
            .map_err(|reason| grant_sets::unfilled(record, reason))?;
        let inline = record.request.grants.as_slice();
        let set_key = record.grant_set.as_ref().map(|named| named.key.as_str());
        let grants = match built.by_session.get(record.session_id.as_str()) {
            Some(seen) if seen.set_key.as_deref() == set_key && seen.inline == inline => {
                &seen.grants
            }
            _ => {
                let grants = GrantSet::from_grants(inline.iter().chain(set.iter()).cloned());
                let seen = Built {
                    set_key: set_key.map(str::to_owned),
                    inline: inline.to_vec(),
                    grants,
                };
                &built
                    .by_session
                    .entry(record.session_id.clone())
                    .insert_entry(seen)
                    .into_mut()
                    .grants
            }
        };
        let difference = Difference::of(record, record.request.evaluate_with(grants));
        let mut unbacked = Vec::new();
        let grant_at = |index: usize| match index.checked_sub(inline.len()) {
            None => inline.get(index),
            Some(in_set) => set.get(in_set),
        };
        self.backing.decision(record, grant_at, &mut unbacked);
        Ok(Checked {
            difference,
            unbacked,
        })
    }

    /// The record's chain digest: its latest link's, when that link's `stored` digest is the
    /// digest of the bytes read (they are the very bytes the link covers, so the record is the
    /// version it covers); otherwise the record is encoded in canonical JSON and digested, as
    /// the audit of an export does. The link is the one the chain check compares the record
    /// with, and the walk found it sound: a link inserted, out of place or altered vouches for
    /// nothing.
    fn digest(
        &self,
        record: &DecisionRecord,
        bytes: &[u8],
        link: Option<DecisionLink<'_>>,
    ) -> HexDigest {
        match link.filter(|found| found.sound).map(|found| found.link) {
            Some(link)
                if *link.session_id == record.session_id
                    && link
                        .stored
                        .as_ref()
                        .is_some_and(|stored| stored.is_digest_of(bytes)) =>
            {
                link.digest.clone()
            }
            _ => {
                self.reads.digested_in_full.fetch_add(1, Ordering::Relaxed);
                digest(record)
            }
        }
    }

    /// The grants the record's set names (none when it names no set), or why they cannot be
    /// read.
    fn set_of(&self, record: &DecisionRecord) -> Result<Arc<[Grant]>, String> {
        let Some(named) = &record.grant_set else {
            return Ok(Arc::from([]));
        };
        match self.sets.get(named.key.as_str()) {
            None => Err(grant_sets::set_missing(&named.key)),
            Some((owner, _)) if *owner != record.grants_session() => {
                Err(grant_sets::set_of_other_session(&named.key, owner))
            }
            Some((_, listed)) => listed.clone(),
        }
    }
}

/// Every entry of `entries`, in order, through `work` on `workers` threads (each with its own
/// state from `state`), and each result through `merge` on the calling thread, in order.
///
/// One thread reads the entries and deals batches out in turn; each worker sends its results
/// back on its own channel, and they are taken in the same turn, so the order holds. Every
/// channel holds one batch: memory stays a few batches, whatever the tree holds, and reading,
/// working and merging overlap.
///
/// Each emptied batch goes back to the thread that allocated it, to be filled again: a block
/// freed by another thread returns to its owner's mimalloc page only lazily, so a fresh
/// vector per batch had the reader (and each worker) take fresh pages from the kernel. On a
/// slow run, the kernel zeroing those pages was a tenth of `perf`'s samples; reused, the
/// peak of an audit of 100,000 decisions is 10–30 MB lower.
fn pipelined<T: Send, S, R: Send>(
    entries: impl Iterator<Item = Result<T, LedgerError>> + Send,
    workers: usize,
    state: impl Fn() -> S + Sync,
    work: impl Fn(&T, &mut S) -> R + Sync,
    mut merge: impl FnMut(R),
) -> Result<(), LedgerError> {
    use std::sync::mpsc::{channel, sync_channel};
    let workers = workers.max(1);
    let (work, state) = (&work, &state);
    std::thread::scope(|scope| {
        let mut to_workers = Vec::with_capacity(workers);
        let mut from_workers = Vec::with_capacity(workers);
        let mut emptied_results = Vec::with_capacity(workers);
        let (emptied_batch, emptied_batches) = channel::<Vec<T>>();
        for _ in 0..workers {
            let (to_worker, batches) = sync_channel::<Vec<T>>(1);
            let (to_merge, results) = sync_channel::<Vec<R>>(1);
            let (emptied, spare_results) = channel::<Vec<R>>();
            to_workers.push(to_worker);
            from_workers.push(results);
            emptied_results.push(emptied);
            let emptied_batch = emptied_batch.clone();
            scope.spawn(move || {
                let mut state = state();
                for mut batch in batches {
                    let mut done = spare_results
                        .try_recv()
                        .unwrap_or_else(|_| Vec::with_capacity(batch.len()));
                    done.extend(batch.drain(..).map(|entry| work(&entry, &mut state)));
                    // The reader may have stopped: the batch is then simply freed.
                    let _ = emptied_batch.send(batch);
                    if to_merge.send(done).is_err() {
                        break;
                    }
                }
            });
        }
        drop(emptied_batch);
        let reader = scope.spawn(move || -> Result<(), LedgerError> {
            let mut entries = entries;
            for turn in 0.. {
                let mut batch = emptied_batches
                    .try_recv()
                    .unwrap_or_else(|_| Vec::with_capacity(BATCH));
                for entry in entries.by_ref().take(BATCH) {
                    batch.push(entry?);
                }
                // The merge stopped (a worker is gone): nobody reads what follows.
                if batch.is_empty() || to_workers[turn % workers].send(batch).is_err() {
                    break;
                }
            }
            Ok(())
        });
        // Batch n went to worker n % workers: the first worker with nothing more to send
        // means there is no batch n, so none after it either.
        'merging: for turn in 0.. {
            match from_workers[turn % workers].recv() {
                Ok(mut results) => {
                    results.drain(..).for_each(&mut merge);
                    // The worker may be done: the vector is then simply freed.
                    let _ = emptied_results[turn % workers].send(results);
                }
                Err(_) => break 'merging,
            }
        }
        drop(from_workers);
        match reader.join() {
            Ok(read) => read,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// A record that cannot be encoded gets no digest, so it shows as altered (as in replay.rs).
fn digest(record: &impl serde::Serialize) -> HexDigest {
    HexDigest::from_text(&chain::digest(record).unwrap_or_default())
}
