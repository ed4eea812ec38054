//! Reads proportional to the answer: the newest decisions, of the ledger or of one session,
//! decode only what they return.

use codaris_ledger::{Ledger, LedgerOptions};
use codaris_policy::Activity;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::support::{ledger, record, request, task};

/// `count` decisions, alternating between sessions `s1` and `s2`; their sequence numbers.
fn decide(ledger: &Ledger, count: usize) -> Vec<(u64, String)> {
    (0..count)
        .map(|n| {
            let session = if n % 2 == 0 { "s1" } else { "s2" };
            let args = json!({"path": format!("f{n}.txt")});
            let written = record(
                ledger,
                session,
                request("read_file", args, task(Activity::Agent)),
            );
            (written.seq, written.session_id)
        })
        .collect()
}

#[test]
fn the_newest_decisions_come_newest_first_without_reading_the_rest() {
    let (_temp, ledger) = ledger();
    let written = decide(&ledger, 60);
    let before = ledger.records_decoded();
    let (newest, corrupt) = ledger.newest_decisions(None, 5).unwrap();
    assert_eq!(
        ledger.records_decoded() - before,
        5,
        "decoded only the five"
    );
    assert!(corrupt.is_empty(), "{corrupt:?}");
    let seqs: Vec<u64> = newest.iter().map(|r| r.seq).collect();
    let expected: Vec<u64> = written.iter().rev().take(5).map(|(seq, _)| *seq).collect();
    assert_eq!(seqs, expected);
    // More than there are: all of them, still newest first.
    let (all, _) = ledger.newest_decisions(None, 1000).unwrap();
    assert_eq!(all.len(), 60);
    assert!(all.windows(2).all(|w| w[0].seq > w[1].seq));
    assert_eq!(ledger.newest_decisions(None, 0).unwrap().0, Vec::new());
}

#[test]
fn the_session_index_returns_only_that_sessions_newest() {
    let (_temp, ledger) = ledger();
    let written = decide(&ledger, 40);
    let before = ledger.records_decoded();
    let (newest, _) = ledger.newest_decisions(Some("s2"), 3).unwrap();
    assert_eq!(
        ledger.records_decoded() - before,
        3,
        "decoded only the three"
    );
    let expected: Vec<u64> = written
        .iter()
        .rev()
        .filter(|(_, session)| session == "s2")
        .take(3)
        .map(|(seq, _)| *seq)
        .collect();
    assert_eq!(newest.iter().map(|r| r.seq).collect::<Vec<_>>(), expected);
    assert!(newest.iter().all(|r| r.session_id == "s2"));
    // A session with no decisions, and one whose id is a prefix of another's.
    assert!(ledger.newest_decisions(Some("s"), 3).unwrap().0.is_empty());
    // The whole session, oldest first, is the session's part of the whole ledger.
    let (all, _) = ledger.decisions(None).unwrap();
    let (session, _) = ledger.decisions(Some("s1")).unwrap();
    let filtered: Vec<_> = all.into_iter().filter(|r| r.session_id == "s1").collect();
    assert_eq!(session, filtered);
    assert_eq!(session.len(), 20);
}

#[test]
fn decisions_replayed_from_the_journal_are_indexed_by_session() {
    let (temp, ledger) = ledger();
    let written = decide(&ledger, 6);
    drop(ledger);
    // The journal alone, under a fresh ledger: every record comes back from it at open.
    let journal = std::fs::read(temp.path().join("ledger.journal")).unwrap();
    let fresh = tempfile::tempdir().unwrap();
    std::fs::write(fresh.path().join("ledger.journal"), journal).unwrap();
    let recovered = Ledger::open(&fresh.path().join("ledger")).unwrap();
    let (newest, _) = recovered.newest_decisions(Some("s1"), 10).unwrap();
    let expected: Vec<u64> = written
        .iter()
        .rev()
        .filter(|(_, session)| session == "s1")
        .map(|(seq, _)| *seq)
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(newest.iter().map(|r| r.seq).collect::<Vec<_>>(), expected);
}

#[test]
fn the_index_survives_a_reopen_and_a_small_cache_reads_the_same() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("ledger");
    let written = {
        let ledger = Ledger::open(&path).unwrap();
        decide(&ledger, 10)
    };
    let ledger = Ledger::open_with(
        &path,
        LedgerOptions {
            cache_bytes: 1 << 20,
        },
    )
    .unwrap();
    let (newest, _) = ledger.newest_decisions(Some("s2"), 2).unwrap();
    let expected: Vec<u64> = written
        .iter()
        .rev()
        .filter(|(_, session)| session == "s2")
        .take(2)
        .map(|(seq, _)| *seq)
        .collect();
    assert_eq!(newest.iter().map(|r| r.seq).collect::<Vec<_>>(), expected);
}
