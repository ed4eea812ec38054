//! The operator's approval of a scheduled project job: recorded in the chain, exported, read
//! back after a restart, and an approval altered afterwards (its digest swapped to approve a
//! different file) is reported by the chain walk.

use codaris_ledger::{ExportLine, JobApprovalRecord, Ledger, read_export};

fn approval(digest: &str) -> JobApprovalRecord {
    JobApprovalRecord::new(
        "s000002",
        "project",
        "nightly",
        "/work/proj/.codaris/scheduler/nightly.md",
        digest,
        1_700_000_000_000,
    )
}

#[test]
fn an_approval_is_recorded_exported_and_read_back_and_a_swapped_digest_breaks_the_chain() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("ledger");
    {
        let ledger = Ledger::open(&path).unwrap();
        crate::support::backed_session(&ledger, "s1");
        let first = ledger.append_job_approval(&approval("aa")).unwrap();
        let second = ledger.append_job_approval(&approval("bb")).unwrap();
        assert!(first.starts_with('j') && second > first, "{first} {second}");
    }
    let ledger = Ledger::open(&path).unwrap();
    let (approvals, corrupt) = ledger.job_approvals(None).unwrap();
    assert!(corrupt.is_empty());
    let digests: Vec<&str> = approvals.iter().map(|a| a.digest.as_str()).collect();
    assert_eq!(digests, ["aa", "bb"], "oldest first: the latest counts");
    assert!(crate::support::audited(&ledger).is_clean());

    let (lines, _) = ledger.export(None).unwrap();
    let text: String = lines
        .iter()
        .map(|l| serde_json::to_string(l).unwrap() + "\n")
        .collect();
    assert!(text.contains("\"type\":\"job_approval\""), "{text}");
    let clean = codaris_ledger::audit(&codaris_ledger::Evidence::from_export(
        read_export(&text).0,
        Vec::new(),
    ));
    assert!(clean.is_clean(), "{clean:?}");
    // Someone edits the export to approve another file's content.
    let forged = text.replace("\"digest\":\"bb\"", "\"digest\":\"cc\"");
    let (lines, corrupt) = read_export(&forged);
    assert!(
        lines
            .iter()
            .any(|l| matches!(l, ExportLine::JobApproval(a) if a.digest == "cc"))
    );
    let report = codaris_ledger::audit(&codaris_ledger::Evidence::from_export(lines, corrupt));
    assert!(!report.is_clean(), "a swapped digest went unnoticed");
}
