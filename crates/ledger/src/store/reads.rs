//! Reads proportional to the answer: the newest decisions, of the whole ledger or of one
//! session, read from the end of the decisions file or of the session's index range, and
//! stopped after the `n` asked for.
//!
//! The decisions file (see `decision_log.rs`) holds the records in the order they were
//! recorded, framed so that it reads from its end back. The session index (see
//! `session_index.rs`) gives each session's decisions in number order, each with its offset in
//! the file.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{Ledger, decode_stored, decode_value};
use crate::error::{Corrupt, LedgerError};
use crate::grant_sets;
use crate::log_file::LogReader;
use crate::record::{DecisionRecord, GrantRecord, GrantSetRecord};

/// How many stored records the ledger's reads have decoded since it opened; tests read it to
/// show a read touched only what it returned.
#[derive(Debug, Default)]
pub(super) struct ReadStats {
    pub(super) decoded: AtomicU64,
    /// Decisions the audit of this ledger encoded in canonical JSON to digest them, because no
    /// sound link named their stored bytes.
    pub(super) digested_in_full: AtomicU64,
}

impl ReadStats {
    pub(super) fn count(&self, records: u64) {
        self.decoded.fetch_add(records, Ordering::Relaxed);
    }
}

impl Ledger {
    /// The newest `n` decisions (of one session when given), newest first, and the records met
    /// on the way that do not decode (they are not counted in `n`), with the journal lines that
    /// did not decode. Reads `n` records, not the ledger: the whole ledger backwards from its
    /// last key, or one session's range of the index backwards.
    pub fn newest_decisions(
        &self,
        session_id: Option<&str>,
        n: usize,
    ) -> Result<(Vec<DecisionRecord>, Vec<Corrupt>), LedgerError> {
        let mut records = Vec::with_capacity(n.min(1024));
        let mut corrupt = self.unreadable_lines()?;
        if n == 0 {
            return Ok((records, corrupt));
        }
        match session_id {
            None => {
                let reader = self.decision_log().reader();
                reader.newest(|at, payload| {
                    let decoded = crate::decision_log::split(at, payload)
                        .and_then(|(seq, json)| self.decode_decision(seq, json));
                    match decoded {
                        Ok(record) => records.push(record),
                        Err(bad) => corrupt.push(bad),
                    }
                    records.len() < n
                })?;
            }
            Some(session) => {
                let reader = self.decision_log().reader();
                for entry in self.session_index.newest(session) {
                    let (seq, at) = entry?;
                    let Some(record) =
                        self.indexed_decision(&reader, seq, at, session, &mut corrupt)
                    else {
                        continue;
                    };
                    records.push(record);
                    if records.len() == n {
                        break;
                    }
                }
            }
        }
        corrupt.extend(self.fill_grant_sets(&mut records)?);
        Ok((records, corrupt))
    }

    /// Fills in the grants each decision's set names, from the set and the grant records (each
    /// set read once); decisions that cannot be filled are taken out and returned as corrupt.
    pub(super) fn fill_grant_sets(
        &self,
        records: &mut Vec<DecisionRecord>,
    ) -> Result<Vec<Corrupt>, LedgerError> {
        grant_sets::fill_each(records, |key, session| self.read_grant_set(key, session))
    }

    /// One grant set's grants, from its record and the grant records it names.
    fn read_grant_set(
        &self,
        key: &str,
        session_id: &str,
    ) -> Result<grant_sets::SetGrants, LedgerError> {
        let Some(bytes) = self.grant_sets.get(key.as_bytes())? else {
            return Ok(Err(grant_sets::set_missing(key)));
        };
        self.reads.count(1);
        let set = match decode_value::<GrantSetRecord>("grant_sets", key, &bytes) {
            Ok(set) => set,
            Err(bad) => return Ok(Err(bad.to_string())),
        };
        let mut records = HashMap::with_capacity(set.grant_ids.len());
        for id in &set.grant_ids {
            if let Some(bytes) = self.grants.get(id.as_bytes())? {
                self.reads.count(1);
                match decode_value::<GrantRecord>("grants", id, &bytes) {
                    Ok(record) => {
                        records.insert(id.clone(), record);
                    }
                    Err(bad) => return Ok(Err(bad.to_string())),
                }
            }
        }
        Ok(grant_sets::set_grants(&set, session_id, |id| records.get(id)).map(Arc::from))
    }

    /// One session's decisions oldest first, through the index; the records that do not
    /// decode, and the journal lines that did not.
    pub(super) fn session_decisions(
        &self,
        session_id: &str,
    ) -> Result<(Vec<DecisionRecord>, Vec<Corrupt>), LedgerError> {
        let mut records = Vec::new();
        let mut corrupt = Vec::new();
        let reader = self.decision_log().reader();
        for entry in self.session_index.oldest(session_id) {
            let (seq, at) = entry?;
            if let Some(record) = self.indexed_decision(&reader, seq, at, session_id, &mut corrupt)
            {
                records.push(record);
            }
        }
        corrupt.extend(self.unreadable_lines()?);
        Ok((records, corrupt))
    }

    /// The decision an index entry points at, when it is of `session_id`: read at the offset
    /// the entry holds, and checked to carry the entry's number. A record that does not
    /// decode, or an offset that holds no record of that number (the file was rewritten
    /// behind the ledger's back), is reported.
    fn indexed_decision(
        &self,
        reader: &LogReader,
        seq: u64,
        at: u64,
        session_id: &str,
        corrupt: &mut Vec<Corrupt>,
    ) -> Option<DecisionRecord> {
        let seq = seq.to_be_bytes();
        let found = reader.read_at(at).and_then(|payload| {
            let (stored, json) = crate::decision_log::split(at, &payload)?;
            if *stored != seq {
                return Err(Corrupt {
                    place: "decisions".to_owned(),
                    key: u64::from_be_bytes(seq).to_string(),
                    reason: format!(
                        "the session index points at byte {at}, which holds decision {}",
                        u64::from_be_bytes(*stored)
                    ),
                });
            }
            self.decode_decision(&seq, json)
        });
        match found {
            Ok(record) if record.session_id == session_id => Some(record),
            Ok(_) => None,
            Err(bad) => {
                corrupt.push(bad);
                None
            }
        }
    }

    pub(super) fn decode_decision(
        &self,
        key: &[u8],
        bytes: &[u8],
    ) -> Result<DecisionRecord, Corrupt> {
        self.reads.count(1);
        decode_stored("decisions", key, bytes)
    }

    /// How many stored records (decisions, grants, cards) this ledger's reads have decoded
    /// since it opened. For tests and benchmarks: a read of the newest `n` decodes `n`.
    pub fn records_decoded(&self) -> u64 {
        self.reads.decoded.load(Ordering::Relaxed)
    }

    /// How many decisions this ledger's audits encoded again in canonical JSON to digest them
    /// since it opened. For tests and benchmarks: on a ledger nothing has touched, only the
    /// decision with the chain's last link is, as no link after it vouches for that link.
    pub fn decisions_digested_in_full(&self) -> u64 {
        self.reads.digested_in_full.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use crate::{DecisionRecord, Ledger};
    use codaris_policy::{Request, Task};
    use pretty_assertions::assert_eq;

    fn decision(session: &str) -> DecisionRecord {
        let request = Request {
            tool: codaris_policy::ToolId::parse("read_file"),
            args: serde_json::json!({"path": "a.txt"}),
            task: Task::new("/w/proj"),
            grants: Vec::new(),
            spec: None,
        };
        let decision = request.evaluate();
        DecisionRecord::new(session, request, decision, 1)
    }

    fn seqs(records: &[DecisionRecord]) -> Vec<u64> {
        records.iter().map(|r| r.seq).collect()
    }

    /// What one session's reads return, newest first and oldest first.
    fn reads(ledger: &Ledger, session: &str) -> (Vec<u64>, Vec<u64>) {
        let (newest, corrupt) = ledger.newest_decisions(Some(session), 100).unwrap();
        assert!(corrupt.is_empty(), "{corrupt:?}");
        let (oldest, corrupt) = ledger.decisions(Some(session)).unwrap();
        assert!(corrupt.is_empty(), "{corrupt:?}");
        (seqs(&newest), seqs(&oldest))
    }

    #[test]
    fn a_sessions_decisions_read_alike_before_the_fold_after_it_and_after_a_crash() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("ledger");
        let ledger = Ledger::open(&path).unwrap();
        let mut s1 = Vec::new();
        for session in ["s1", "s2", "s1"] {
            let seq = ledger.append_decision(decision(session)).unwrap().seq;
            if session == "s1" {
                s1.push(seq);
            }
        }
        ledger.fold_journal().unwrap();
        assert_eq!(
            ledger.session_index.unfolded_len(),
            0,
            "the fold moved them"
        );
        for session in ["s1", "s2", "s1", "s1"] {
            let seq = ledger.append_decision(decision(session)).unwrap().seq;
            if session == "s1" {
                s1.push(seq);
            }
        }
        assert_eq!(
            ledger.session_index.unfolded_len(),
            4,
            "held until the next fold"
        );
        let newest: Vec<u64> = s1.iter().rev().copied().collect();
        assert_eq!(reads(&ledger, "s1"), (newest.clone(), s1.clone()));
        let (first_two, _) = ledger.newest_decisions(Some("s1"), 2).unwrap();
        assert_eq!(seqs(&first_two), newest[..2]);
        let s2 = reads(&ledger, "s2");
        assert_eq!(s2.0.len(), 2);

        // A crash: nothing folded since, so the memory's entries are gone; the open replays
        // the journal and indexes those decisions again.
        drop(ledger);
        let ledger = Ledger::open(&path).unwrap();
        assert_eq!(reads(&ledger, "s1"), (newest.clone(), s1.clone()));
        assert_eq!(reads(&ledger, "s2"), s2);

        // And once folded at an orderly stop, from sled alone.
        ledger.fold_journal().unwrap();
        drop(ledger);
        let ledger = Ledger::open(&path).unwrap();
        assert_eq!(ledger.session_index.unfolded_len(), 0);
        assert_eq!(reads(&ledger, "s1"), (newest, s1));
    }

    /// A ledger written before the decisions file (its decisions in sled's `decisions` tree,
    /// its session index without offsets, or none at all) has its decisions moved into the
    /// file and indexed at its first open, once.
    #[test]
    fn an_older_ledgers_decisions_are_moved_into_the_file_and_indexed_once_at_open() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("ledger");
        let (seqs, stored) = {
            let ledger = Ledger::open(&path).unwrap();
            let seqs: Vec<u64> = ["s1", "s2", "s1", "s1"]
                .iter()
                .map(|s| ledger.append_decision(decision(s)).unwrap().seq)
                .collect();
            ledger.fold_journal().unwrap();
            let (stored, corrupt) = ledger.decisions(None).unwrap();
            assert!(corrupt.is_empty());
            // As an older build left it: the records in a tree, no file, no index.
            let tree = ledger.db.open_tree("decisions").unwrap();
            for record in &stored {
                tree.insert(
                    record.seq.to_be_bytes(),
                    serde_json::to_vec(record).unwrap(),
                )
                .unwrap();
            }
            ledger.session_index.clear().unwrap();
            ledger
                .meta
                .remove(super::super::recover::DECISIONS_DURABLE)
                .unwrap();
            ledger.flush().unwrap();
            (seqs, stored)
        };
        std::fs::remove_file(temp.path().join("ledger.decisions")).unwrap();

        let ledger = Ledger::open(&path).unwrap();
        assert_eq!(ledger.decisions(None).unwrap().0, stored);
        let (newest, _) = ledger.newest_decisions(Some("s1"), 9).unwrap();
        let got: Vec<u64> = newest.iter().map(|r| r.seq).collect();
        assert_eq!(got, vec![seqs[3], seqs[2], seqs[0]]);
        assert!(
            !ledger
                .db
                .tree_names()
                .iter()
                .any(|n| n.as_ref() == b"decisions")
        );
        drop(ledger);
        // Not moved twice.
        let ledger = Ledger::open(&path).unwrap();
        assert_eq!(ledger.decisions(None).unwrap().0, stored);
    }

    /// A record of a newer schema is refused, whether its shape decodes as this build's or not.
    #[test]
    fn a_newer_schema_is_refused_by_the_header_check() {
        let mut newer = serde_json::to_value(decision("s1")).unwrap();
        newer["schema"] = serde_json::json!(99);
        let bytes = serde_json::to_vec(&newer).unwrap();
        let refused = super::decode_value::<DecisionRecord>("decisions", "1", &bytes);
        assert!(
            refused
                .as_ref()
                .is_err_and(|bad| bad.reason.contains("schema 99 is newer")),
            "{refused:?}"
        );
        let bytes = br#"{"schema": 99, "seq": 1}"#;
        let refused = super::decode_value::<DecisionRecord>("decisions", "1", bytes);
        assert!(
            refused
                .as_ref()
                .is_err_and(|bad| bad.reason.contains("schema 99 is newer")),
            "{refused:?}"
        );
        let missing = super::decode_value::<DecisionRecord>("decisions", "1", b"{\"seq\": 1}");
        assert!(missing.is_err_and(|bad| bad.reason == "no schema version"));
    }
}
