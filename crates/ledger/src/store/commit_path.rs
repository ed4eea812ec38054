//! The group commit's path: records queued by writers, journalled with their chain links and
//! made durable by one leader per batch, then applied to sled. What the journal and the chain
//! are is in `journal.rs` and `chain.rs`; this is the order the ledger writes them in.

use std::sync::{Arc, PoisonError};

use super::{Appender, Ledger, Pending, encode, grants, reads};
use crate::chain::RecordKind;
use crate::error::LedgerError;
use crate::journal::COMPACT_AT;

impl Ledger {
    /// Queues a record version for the next group commit and waits until it is on the device.
    pub(super) fn commit(&self, pending: Pending) -> Result<(), LedgerError> {
        let ticket = self.commit.submit(vec![pending]);
        self.wait(ticket)
    }

    pub(super) fn wait(&self, ticket: u64) -> Result<(), LedgerError> {
        self.commit
            .wait(ticket, |queued| self.commit_batch(queued).map_err(Arc::new))
            .map_err(|source| LedgerError::Commit { source })
    }

    /// The leader's commit: links every queued version in queue order, appends their lines with
    /// one `write` and one `fdatasync`, then writes the new records and the links to sled. On
    /// failure nothing of the batch remains: the journal is cut back, and updates are swapped
    /// back out of sled.
    fn commit_batch(&self, queued: &[Vec<Pending>]) -> Result<(), LedgerError> {
        let queued: Vec<&Pending> = queued.iter().flatten().collect();
        let mut appender = self.appender();
        let result = self.append_batch(&mut appender, &queued);
        if result.is_err() {
            let _order = self.order.lock().unwrap_or_else(PoisonError::into_inner);
            // What the cached views took from this batch (a spend, a card's answer) is undone
            // below: they are read from disk again.
            self.grant_cache.invalidate(
                queued
                    .iter()
                    .filter(|p| p.kind != RecordKind::Decision)
                    .map(|p| p.session_id.as_str()),
            );
            // Latest first, so a record updated twice in the batch ends at its version before.
            for pending in queued.iter().rev() {
                if let Some(replaced) = &pending.replaced {
                    let _ = self.tree(pending.kind).compare_and_swap(
                        &pending.key,
                        Some(pending.value.as_slice()),
                        Some(replaced),
                    );
                }
            }
        }
        result
    }

    fn append_batch(
        &self,
        appender: &mut Appender,
        queued: &[&Pending],
    ) -> Result<(), LedgerError> {
        if appender.journal.len() > COMPACT_AT {
            // Every record of an earlier batch is in sled (its leader wrote it there), and every
            // update before it was queued: folding the journal into sled loses nothing.
            self.db.flush()?;
            self.sync_data_file()?;
            appender.journal.truncate()?;
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
            );
            let link_json = encode(&link)?;
            lines.push(journal_line(pending.kind, &pending.value, &link_json));
            links.push((link.seq, link_json));
        }
        let before = appender.journal.len();
        let refs: Vec<&[u8]> = lines.iter().map(Vec::as_slice).collect();
        appender.journal.append(&refs)?;
        let stored = self.store_batch(queued, &links);
        if stored.is_err() {
            // Durable in the journal but not in sled: cut it back, so that what the writers are
            // told failed does not come back at the next open.
            appender.journal.rewind(before)?;
            return stored;
        }
        appender.tail = tail;
        Ok(())
    }

    /// Writes a batch's new records, their index entries and its links into sled, record by
    /// record. Plain inserts rather than `apply_batch`: a sled batch pins sled's log, which
    /// rolls and writes out its buffer before and after (each a `pwrite` and a waiting
    /// `sync_file_range`), for every tree and every commit; an insert stays in sled's buffer
    /// until sled writes it out with many others. The batch need not be atomic in sled: the
    /// journal holds it whole, and a crash replays it at the next open.
    fn store_batch(
        &self,
        queued: &[&Pending],
        links: &[(u64, Vec<u8>)],
    ) -> Result<(), LedgerError> {
        for pending in queued.iter().filter(|p| p.replaced.is_none()) {
            self.tree(pending.kind)
                .insert(pending.key.as_slice(), pending.value.as_slice())?;
            // Each kind's index entries, written just after the record they point at.
            match pending.kind {
                RecordKind::Grant => {
                    self.grants_by_session.insert(
                        grants::index_key(&pending.session_id, &pending.key),
                        &[] as &[u8],
                    )?;
                }
                RecordKind::Decision => {
                    if let Ok(seq) = <[u8; 8]>::try_from(pending.key.as_slice()) {
                        self.session_index.insert(
                            reads::session_key(&pending.session_id, u64::from_be_bytes(seq)),
                            sled::IVec::default(),
                        )?;
                    }
                }
                RecordKind::Card => {}
            }
        }
        for (seq, link) in links {
            self.chain.insert(seq.to_be_bytes(), link.as_slice())?;
        }
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
