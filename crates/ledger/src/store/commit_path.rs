//! The group commit's path: records queued by writers, journalled with their chain links and
//! made durable by one leader per batch inside the committing section, then applied to sled
//! outside it (see `commit.rs`). What the journal and the chain are is in `journal.rs` and
//! `chain.rs`; this is the order the ledger writes them in.

use std::sync::{Arc, PoisonError};

use super::{Appender, Ledger, Pending, encode, grants};
use crate::chain::{Link, RecordKind};
use crate::error::LedgerError;
use crate::journal::COMPACT_AT;

/// Why a group commit failed, as each writer of the batch is told.
#[derive(Debug, Clone)]
pub(super) enum Failure {
    /// Nothing of the batch was recorded: the journal was cut back and updates swapped back.
    Lost(Arc<LedgerError>),
    /// The batch is durable in the journal but was not applied to sled; the next open replays
    /// it, and until then the ledger records nothing more.
    Unapplied(Arc<LedgerError>),
}

/// A batch whose lines are durable in the journal, waiting to be applied to sled and the chain
/// file.
pub(super) struct Journalled {
    queued: Vec<Pending>,
    links: Vec<Link>,
}

impl Ledger {
    /// Queues a record version for the next group commit and waits until it is on the device
    /// and readable.
    pub(super) fn commit(&self, pending: Pending) -> Result<(), LedgerError> {
        let ticket = self.commit.submit(vec![pending]);
        self.wait(ticket)
    }

    pub(super) fn wait(&self, ticket: u64) -> Result<(), LedgerError> {
        self.commit
            .wait(
                ticket,
                |queued| self.journal_batch(queued),
                |journalled| self.apply_batch(journalled),
            )
            .map_err(|failure| match failure {
                Failure::Lost(source) => LedgerError::Commit { source },
                Failure::Unapplied(source) => LedgerError::Unapplied { source },
            })
    }

    /// The leader's journal phase, inside the committing section: links every queued version
    /// in queue order and appends their lines with one `write` and one `fdatasync`. On failure
    /// nothing of the batch remains: the journal is cut back, and updates are swapped back out
    /// of sled.
    fn journal_batch(&self, queued: Vec<Vec<Pending>>) -> Result<Journalled, Failure> {
        let queued: Vec<Pending> = queued.into_iter().flatten().collect();
        let appended = self.refuse_if_halted().and_then(|()| {
            let mut appender = self.appender();
            self.append_lines(&mut appender, &queued)
        });
        match appended {
            Ok(links) => Ok(Journalled { queued, links }),
            Err(error) => {
                self.undo(&queued);
                Err(Failure::Lost(Arc::new(error)))
            }
        }
    }

    /// The leader's apply phase, outside the committing section (the next batch may be
    /// journalling meanwhile): the batch's new records and its links go into sled, and only
    /// then are its writers told. Its lines are durable and a later batch's may follow them,
    /// so a batch that sled refuses can no longer be cut back: the ledger halts, the next open
    /// replays the journal, and until then every commit is refused.
    fn apply_batch(&self, journalled: Journalled) -> Result<(), Failure> {
        // A batch journalled behind one that was not applied waits for the same reopen.
        if let Some(cause) = self.halted.get() {
            return Err(Failure::Unapplied(cause.clone()));
        }
        let queued: Vec<&Pending> = journalled.queued.iter().collect();
        let stored = self
            .fail_apply_in_tests()
            .and_then(|()| self.store_batch(&queued, &journalled.links));
        let Err(error) = stored else {
            return Ok(());
        };
        let cause = Arc::new(error);
        let cause = self.halted.get_or_init(|| cause).clone();
        // What was applied of the batch is in sled; the cached views read it again.
        self.grant_cache.invalidate(
            queued
                .iter()
                .filter(|p| p.kind != RecordKind::Decision)
                .map(|p| p.session_id.as_str()),
        );
        Err(Failure::Unapplied(cause))
    }

    /// Refuses a commit once an earlier batch could not be applied.
    fn refuse_if_halted(&self) -> Result<(), LedgerError> {
        match self.halted.get() {
            Some(cause) => Err(LedgerError::Halted {
                source: cause.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Undoes what a batch that failed before its lines were durable did: the cached views
    /// took a spend or a card's answer from it (they are read from disk again), and its
    /// updates were swapped into sled (they are swapped back).
    fn undo(&self, queued: &[Pending]) {
        let _order = self.order.lock().unwrap_or_else(PoisonError::into_inner);
        self.grant_cache.invalidate(
            queued
                .iter()
                .filter(|p| p.kind != RecordKind::Decision)
                .map(|p| p.session_id.as_str()),
        );
        // Latest first, so a record updated twice in the batch ends at its version before.
        for pending in queued.iter().rev() {
            if let (Some(replaced), Some(tree)) = (&pending.replaced, self.tree(pending.kind)) {
                let _ = tree.compare_and_swap(
                    &pending.key,
                    Some(pending.value.as_slice()),
                    Some(replaced),
                );
            }
        }
    }

    /// Folds the journal into sled and empties it, while no commit runs: for an orderly stop,
    /// so that the next open has nothing to replay (after a crash it replays at most
    /// [`COMPACT_AT`] bytes of journal). Refused once the ledger halted: the journal then holds
    /// records only it has.
    pub fn fold_journal(&self) -> Result<(), LedgerError> {
        self.commit.exclusive(|| {
            self.refuse_if_halted()?;
            self.fold(&mut self.appender())
        })
    }

    /// Appends the batch's lines, each with its link, and returns the links; the chain's end
    /// moves past them only once they are durable.
    fn append_lines(
        &self,
        appender: &mut Appender,
        queued: &[Pending],
    ) -> Result<Vec<Link>, LedgerError> {
        if appender.journal.len() > COMPACT_AT {
            // The previous batch may still be going into sled, and its lines must not be cut
            // before it is there; once it is, every record journalled is in sled (and its link
            // in the chain file), and every update before it was queued: folding the journal
            // loses nothing.
            self.commit.wait_applied();
            // A batch that was not applied lives only in the journal until the next open.
            self.refuse_if_halted()?;
            self.fold(appender)?;
        }
        let mut tail = appender.tail.clone();
        let mut lines = Vec::with_capacity(queued.len());
        let mut links = Vec::with_capacity(queued.len());
        for pending in queued {
            let link = tail.link(
                pending.kind,
                &pending.key_text,
                &pending.session_id,
                &pending.digest,
                Some(&pending.stored),
            );
            let link_json = encode(&link)?;
            lines.push(journal_line(pending.kind, &pending.value, &link_json));
            links.push(link);
        }
        let refs: Vec<&[u8]> = lines.iter().map(Vec::as_slice).collect();
        appender.journal.append(&refs)?;
        appender.tail = tail;
        Ok(links)
    }

    /// Writes a batch's new records and their index entries into sled, record by record, and
    /// its links into the chain file with one `write`. Plain inserts rather than
    /// `apply_batch`: a sled batch pins sled's log, which rolls and writes out its buffer
    /// before and after (each a `pwrite` and a waiting `sync_file_range`), for every tree and
    /// every commit; an insert stays in sled's buffer until sled writes it out with many
    /// others. The batch need not be atomic: the journal holds it whole, and a crash replays
    /// it at the next open.
    fn store_batch(&self, queued: &[&Pending], links: &[Link]) -> Result<(), LedgerError> {
        let mut decisions = Vec::new();
        for pending in queued.iter().filter(|p| p.replaced.is_none()) {
            let Some(tree) = self.tree(pending.kind) else {
                decisions.push(*pending);
                continue;
            };
            tree.insert(pending.key.as_slice(), pending.value.as_slice())?;
            // A grant's index entry, written just after the record it points at.
            if pending.kind == RecordKind::Grant {
                self.grants_by_session.insert(
                    grants::index_key(&pending.session_id, &pending.key),
                    &[] as &[u8],
                )?;
            }
        }
        self.store_decisions(decisions.iter().filter_map(|pending| {
            let seq = u64::from_be_bytes(<[u8; 8]>::try_from(pending.key.as_slice()).ok()?);
            Some((seq, pending.session_id.as_str(), pending.value.as_slice()))
        }))?;
        self.chain().append_links(links)
    }

    /// Appends decisions (`(seq, session, json)`) to the decisions file with one `write`, and
    /// indexes each under its session with its offset (in memory until the next fold: see
    /// `session_index.rs`).
    pub(super) fn store_decisions<'a>(
        &self,
        decisions: impl Iterator<Item = (u64, &'a str, &'a [u8])>,
    ) -> Result<(), LedgerError> {
        let decisions: Vec<_> = decisions.collect();
        if decisions.is_empty() {
            return Ok(());
        }
        let offsets = self
            .decision_log()
            .append(decisions.iter().map(|(seq, _, json)| (*seq, *json)))?;
        self.session_index.add(
            decisions
                .iter()
                .zip(offsets)
                .map(|((seq, session_id, _), at)| (*session_id, *seq, at)),
        );
        Ok(())
    }
}

/// A journal line: the record's JSON tagged with its `type`, as [`ExportLine`] writes it, with
/// its chain link as one more member. Built from the record's bytes rather than by encoding it
/// again: the writer encoded it once, in parallel with the other writers, and the leader only
/// encodes the small link.
fn journal_line(kind: RecordKind, value: &[u8], link: &[u8]) -> Vec<u8> {
    let body = value
        .strip_prefix(b"{")
        .and_then(|v| v.strip_suffix(b"}"))
        .unwrap_or_default();
    let mut line = Vec::with_capacity(value.len() + link.len() + 32);
    line.extend_from_slice(b"{\"type\":\"");
    line.extend_from_slice(kind.as_str().as_bytes());
    line.extend_from_slice(b"\",");
    if !body.is_empty() {
        line.extend_from_slice(body);
        line.push(b',');
    }
    line.extend_from_slice(b"\"link\":");
    line.extend_from_slice(link);
    line.push(b'}');
    line
}

impl Ledger {
    /// The unit tests' failure point: sled refusing a batch whose lines are durable.
    fn fail_apply_in_tests(&self) -> Result<(), LedgerError> {
        #[cfg(test)]
        if self.fail_apply.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(LedgerError::Storage(sled::Error::Io(
                std::io::Error::other("injected: sled refused the batch"),
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use codaris_policy::{CapabilityName, Grant, Lifetime};

    use crate::{Backing, Ledger, LedgerError};

    fn grant(n: u64) -> Grant {
        Grant::new(
            CapabilityName::MutateOutsideFence,
            Some(&format!("/data/{n}")),
            Lifetime::Session,
        )
    }

    fn card() -> Backing {
        Backing::Card {
            card_id: "c1".to_owned(),
        }
    }

    fn paths(ledger: &Ledger) -> Vec<String> {
        let (grants, corrupt) = ledger.grants(Some("s1")).unwrap();
        assert!(corrupt.is_empty(), "{corrupt:?}");
        grants.into_iter().filter_map(|g| g.grant.path).collect()
    }

    #[test]
    fn a_durable_batch_sled_refuses_halts_the_ledger_and_is_replayed_at_the_next_open() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("ledger");
        let ledger = Ledger::open(&path).unwrap();
        let kept = ledger.append_grant("s1", grant(1), card(), 1).unwrap();
        assert_eq!(ledger.wedged(), None);

        ledger.fail_apply.store(true, Ordering::SeqCst);
        let unapplied = ledger.append_grant("s1", grant(2), card(), 2);
        assert!(
            matches!(unapplied, Err(LedgerError::Unapplied { .. })),
            "the writer is told its record is durable but not applied: {unapplied:?}"
        );
        // What the daemon watches for, to stop and be started again.
        assert_eq!(ledger.wedged(), Some(crate::Wedged::Halted));
        assert_eq!(
            paths(&ledger),
            vec!["/data/1"],
            "not readable before the reopen"
        );

        // Whatever sled would do now, nothing more is recorded until the reopen.
        ledger.fail_apply.store(false, Ordering::SeqCst);
        let refused = ledger.append_grant("s1", grant(3), card(), 3);
        assert!(
            matches!(&refused, Err(LedgerError::Commit { source }) if matches!(**source, LedgerError::Halted { .. })),
            "{refused:?}"
        );
        let revoked = ledger.revoke(&kept.id, 4);
        assert!(revoked.is_err(), "{revoked:?}");
        assert_eq!(
            ledger.grant(&kept.id).unwrap().revoked_at_ms,
            None,
            "a refused update is swapped back out of sled"
        );
        drop(ledger);

        let ledger = Ledger::open(&path).unwrap();
        assert_eq!(
            paths(&ledger),
            vec!["/data/1", "/data/2"],
            "the durable record is replayed; the refused one is nowhere"
        );
        assert_eq!(ledger.grant(&kept.id).unwrap().revoked_at_ms, None);
        let report = crate::audit(&ledger.evidence().unwrap());
        assert_eq!(report.chain_findings, Vec::new(), "the chain verifies");
        ledger.append_grant("s1", grant(5), card(), 5).unwrap();
    }

    #[test]
    fn every_writer_reads_its_own_record_once_acknowledged() {
        let temp = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(&temp.path().join("ledger")).unwrap();
        std::thread::scope(|scope| {
            for writer in 0..8u64 {
                let ledger = &ledger;
                scope.spawn(move || {
                    for n in 0..25 {
                        let record = ledger
                            .append_grant("s1", grant(writer * 100 + n), card(), n)
                            .unwrap();
                        assert_eq!(ledger.grant(&record.id).unwrap(), record);
                    }
                });
            }
        });
        assert_eq!(paths(&ledger).len(), 200);
    }
}
