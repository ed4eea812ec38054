//! Issue 11 item 8 for real: a ledger on a small tmpfs that fills up at the worst moment, while
//! a record is being appended. The append fails and is reported; nothing of it stays in the
//! journal; once space is freed the next append succeeds, and the reopened ledger exports,
//! replays and verifies.
//!
//! Mounting a tmpfs needs root. Without it the test fails under CI (`CI=true`) and is skipped,
//! saying why, elsewhere.

use codaris_ledger::{Backing, Evidence, JOURNAL_AHEAD, Ledger, audit, read_export};
use codaris_policy::{CapabilityName, Grant, Lifetime};

use codaris_test_support::tmpfs::{Tmpfs, fill};

use crate::support::{answered_grant, backed_session, record, request, task};

fn tmpfs_or_skip(size: &str) -> Option<(Tmpfs, tempfile::TempDir)> {
    let dir = tempfile::tempdir().unwrap();
    let tmpfs = Tmpfs::mount_or_skip(dir.path(), size, "the full-disk test")?;
    // The tmpfs is dropped (unmounted) before the directory it is mounted on.
    Some((tmpfs, dir))
}

/// Longer than the zeros the journal writes ahead of its last line, so that an append of it
/// has to grow the file. (A shorter one fits in them, and a full disk does not stop it.)
const BIG: usize = JOURNAL_AHEAD + 16 * 1024;

/// A grant whose line is larger than whatever the journal has room for.
fn big_grant(n: usize) -> Grant {
    Grant::new(
        CapabilityName::MutateOutsideFence,
        Some(&format!("/data/{n}/{}", "x".repeat(BIG))),
        Lifetime::Session,
    )
}

fn card() -> Backing {
    Backing::Card {
        card_id: "c-s1".to_owned(),
    }
}

#[test]
fn a_full_disk_fails_the_append_cleanly_and_the_ledger_stays_readable() {
    let Some((tmpfs, _dir)) = tmpfs_or_skip("8m") else {
        return;
    };
    let path = tmpfs.path().join("ledger");
    let journal = path.with_extension("journal");
    let ledger = Ledger::open(&path).unwrap();
    backed_session(&ledger, "s1");
    // sled has nothing left to write, so the only writer the full disk meets is the journal.
    ledger.flush().unwrap();
    let before = crate::support::journal_lines(&journal);
    assert!(before.ends_with(b"\n"));

    let filler = tmpfs.path().join("filler");
    let filled = fill(&filler);
    let failed = ledger.append_grant("s1", big_grant(1), card(), 20);
    let error = failed.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(error.contains("No space left"), "{error}");
    let mut big = request(
        "write",
        serde_json::json!({"path": "notes.md", "content": "y".repeat(BIG)}),
        task(codaris_policy::Activity::Agent),
    );
    big.grants = Vec::new();
    let decision = ledger.append_decision(codaris_ledger::DecisionRecord::new(
        "s1",
        big.clone(),
        big.evaluate(),
        21,
    ));
    assert!(decision.is_err());
    let after = crate::support::journal_lines(&journal);
    assert!(
        after == before,
        "the journal was cut back to its last whole record: {} bytes, was {}",
        after.len(),
        before.len()
    );
    assert_eq!(
        ledger.grants(Some("s1")).unwrap().0.len(),
        1,
        "an append that failed grants nothing"
    );

    drop(filled);
    std::fs::remove_file(&filler).unwrap();
    let kept = answered_grant(
        &ledger,
        "s1",
        "c-big",
        big_grant(2),
        codaris_ledger::CardAnswer::AllowSession,
    );
    record(&ledger, "s1", big);
    drop(ledger);

    let ledger = Ledger::open(&path).unwrap();
    let (grants, corrupt) = ledger.grants(None).unwrap();
    assert!(corrupt.is_empty(), "{corrupt:?}");
    assert_eq!(grants.len(), 2);
    assert!(grants.iter().any(|g| g.id == kept.id));
    let (lines, corrupt) = ledger.export(None).unwrap();
    assert!(corrupt.is_empty());
    let text: String = lines
        .iter()
        .map(|l| serde_json::to_string(l).unwrap() + "\n")
        .collect();
    let (read, corrupt) = read_export(&text);
    assert!(corrupt.is_empty(), "{corrupt:?}");
    let report = audit(&Evidence::from_export(read, corrupt));
    assert_eq!(report.corrupt, Vec::<String>::new());
    assert_eq!(report.unbacked_grants, Vec::new());
    assert_eq!(report.chain_findings, Vec::new(), "the chain verifies");
    assert_eq!(report.differences, Vec::new());
    assert_eq!(report.decisions, 9);
    assert!(report.is_clean());
    assert!(
        crate::support::audited(&ledger).is_clean(),
        "the ledger itself too"
    );
}
