//! The chain's links live in `<ledger>.chain` and the decisions in `<ledger>.decisions`, files
//! of their own, since 2026-12; before, in sled's `chain` and `decisions` trees. An older
//! ledger's trees are moved into the files once, at its first open, and audit exactly as
//! before. The files are not synced on each commit (the journal is what a crash is recovered
//! from), so when an open finds lines in the journal they are cut back to the length last made
//! durable and the journal's records are appended again, never twice; with the journal empty,
//! whatever lies past that length was not written by the ledger, and is kept and reported.

use std::path::{Path, PathBuf};

use codaris_ledger::{
    ChainProblem, DecisionRecord, Ledger, Link, RecordKind, ReplayReport, StoredLink,
};
use pretty_assertions::assert_eq;

use crate::chain::{audit_dir, chain_file, decisions_file, raw_sled, recorded};

fn journal(path: &Path) -> PathBuf {
    path.with_extension("journal")
}

fn links(path: &Path) -> Vec<Link> {
    let ledger = Ledger::open(path).unwrap();
    let (links, corrupt) = ledger.links().unwrap();
    assert_eq!(corrupt, Vec::new());
    links
}

fn decisions(path: &Path, session: Option<&str>) -> Vec<DecisionRecord> {
    let ledger = Ledger::open(path).unwrap();
    let (decisions, corrupt) = ledger.decisions(session).unwrap();
    assert_eq!(corrupt, Vec::new());
    decisions
}

/// A stopped ledger whose journal was folded, so everything is in sled and the files.
fn folded() -> (tempfile::TempDir, PathBuf, ReplayReport, Vec<Link>) {
    let (temp, path, _) = recorded();
    let ledger = Ledger::open(&path).unwrap();
    ledger.fold_journal().unwrap();
    let report = crate::support::audited(&ledger);
    assert!(report.is_clean(), "{report:?}");
    let (links, _) = ledger.links().unwrap();
    drop(ledger);
    (temp, path, report, links)
}

/// Turns a stopped ledger back into the layout of the builds before the chain and decisions
/// files: its links as JSON in sled's `chain` tree under their numbers (and `extra` there
/// too), its decisions in the `decisions` tree likewise, a session index without offsets, no
/// files, no durable lengths.
fn as_older_build_left_it(path: &Path, links: &[Link], extra: Option<(u64, &[u8])>) {
    let decisions = codaris_ledger::read_decisions_file(&decisions_file(path)).unwrap();
    let db = raw_sled(path);
    let tree = db.open_tree("chain").unwrap();
    for link in links {
        tree.insert(link.seq.to_be_bytes(), serde_json::to_vec(link).unwrap())
            .unwrap();
    }
    if let Some((seq, bytes)) = extra {
        tree.insert(seq.to_be_bytes(), bytes).unwrap();
    }
    let tree = db.open_tree("decisions").unwrap();
    for decision in decisions {
        let (seq, json) = decision.unwrap();
        tree.insert(seq.to_be_bytes(), json).unwrap();
    }
    let index = db.open_tree("decision_sessions").unwrap();
    for entry in index.iter() {
        let (key, _) = entry.unwrap();
        index.insert(key, &[] as &[u8]).unwrap();
    }
    let meta = db.open_tree("meta").unwrap();
    meta.remove("chain_durable_len").unwrap();
    meta.remove("decisions_durable_len").unwrap();
    db.flush().unwrap();
    drop(db);
    std::fs::remove_file(chain_file(path)).unwrap();
    std::fs::remove_file(decisions_file(path)).unwrap();
}

fn tree_names(path: &Path) -> Vec<String> {
    let db = raw_sled(path);
    db.tree_names()
        .iter()
        .map(|name| String::from_utf8_lossy(name).into_owned())
        .collect()
}

#[test]
fn an_older_ledgers_trees_are_moved_into_the_files_once_and_audit_the_same() {
    let (_temp, path, report, before) = folded();
    let all = decisions(&path, None);
    let of_s2 = decisions(&path, Some("s2"));
    as_older_build_left_it(&path, &before, None);
    for tree in ["chain", "decisions"] {
        assert!(tree_names(&path).contains(&tree.to_owned()), "{tree}");
    }

    assert_eq!(links(&path), before, "every link, in order, as it was");
    for tree in ["chain", "decisions"] {
        assert!(
            !tree_names(&path).contains(&tree.to_owned()),
            "the {tree} tree is dropped once its file is durable"
        );
    }
    assert_eq!(
        audit_dir(&path),
        report,
        "the audit is the same, field for field"
    );
    assert_eq!(decisions(&path, None), all);
    assert_eq!(
        decisions(&path, Some("s2")),
        of_s2,
        "the session index points into the file"
    );

    // Opened again, nothing is moved twice; appends go on after the moved records.
    let ledger = Ledger::open(&path).unwrap();
    crate::support::backed_session(&ledger, "s3");
    drop(ledger);
    let after = audit_dir(&path);
    assert!(after.is_clean(), "{after:?}");
    assert!(after.chain_links > before.len(), "{after:?}");
    assert_eq!(links(&path)[..before.len()], before[..]);
    assert_eq!(decisions(&path, None)[..all.len()], all[..]);
}

#[test]
fn an_older_trees_entry_that_does_not_decode_is_kept_and_reported_as_before() {
    let (_temp, path, _, before) = folded();
    let next = before.last().unwrap().seq + 1;
    as_older_build_left_it(&path, &before, Some((next, b"{\"seq\": 1, \"kind\"")));

    let report = audit_dir(&path);
    assert!(
        report
            .corrupt
            .iter()
            .any(|c| c.starts_with(&format!("chain record `{next}` does not decode"))),
        "{:?}",
        report.corrupt
    );
    // Kept as it was stored, byte for byte, so it stays evidence.
    let stored = codaris_ledger::read_chain_file(&chain_file(&path)).unwrap();
    assert_eq!(
        stored.last().unwrap().as_ref().unwrap(),
        &StoredLink::Json {
            key: next.to_be_bytes().to_vec(),
            bytes: b"{\"seq\": 1, \"kind\"".to_vec(),
        }
    );
    // The chain goes on after its number, from no hash, as it did after such a tree entry.
    let ledger = Ledger::open(&path).unwrap();
    crate::support::backed_session(&ledger, "s3");
    let (links, _) = ledger.links().unwrap();
    let after = links.iter().find(|l| l.seq == next + 1).unwrap();
    assert_eq!(after.prev, "0".repeat(64));
}

#[test]
fn a_crash_after_the_files_were_made_durable_but_before_the_journal_was_emptied_adds_nothing_twice()
{
    let (_temp, path, _) = recorded();
    // The journal as it was before the fold, written back after it: the state a crash between
    // recording the files' lengths and emptying the journal leaves.
    let lines = std::fs::read(journal(&path)).unwrap();
    assert!(!lines.is_empty());
    let ledger = Ledger::open(&path).unwrap();
    let (before, _) = ledger.links().unwrap();
    ledger.fold_journal().unwrap();
    drop(ledger);
    let all = decisions(&path, None);
    let of_s1 = decisions(&path, Some("s1"));
    std::fs::write(journal(&path), &lines).unwrap();

    assert_eq!(links(&path), before);
    assert_eq!(decisions(&path, None), all);
    assert_eq!(decisions(&path, Some("s1")), of_s1);
    let report = audit_dir(&path);
    assert!(report.is_clean(), "{report:?}");
}

#[test]
fn a_files_tail_a_crash_left_is_cut_back_and_its_records_come_again_from_the_journal() {
    for (tail, decisions) in [
        ("garbage", false),
        ("torn record", false),
        ("garbage", true),
        ("torn record", true),
    ] {
        let (_temp, path, _) = recorded();
        // Not folded: the journal holds every line, the file's durable length is its header's
        // (recorded at the first open).
        let file = if decisions {
            decisions_file(&path)
        } else {
            chain_file(&path)
        };
        let mut bytes = std::fs::read(&file).unwrap();
        let whole = bytes.len();
        match tail {
            "garbage" => bytes.extend_from_slice(&[0xAB; 300]),
            _ => bytes.truncate(whole - 7),
        }
        std::fs::write(&file, &bytes).unwrap();

        let report = audit_dir(&path);
        assert!(report.is_clean(), "{tail} in {file:?}: {report:?}");
        assert!(report.decisions >= 4, "{report:?}");
        assert_eq!(std::fs::metadata(&file).unwrap().len(), whole as u64);
    }
}

#[test]
fn a_decision_appended_to_the_file_behind_a_stopped_ledgers_back_is_kept_and_reported() {
    let (_temp, path, report, _) = folded();
    let file = decisions_file(&path);
    let mut records: Vec<(u64, Vec<u8>)> = codaris_ledger::read_decisions_file(&file)
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let (seq, json) = records.last().unwrap().clone();
    let mut forged: serde_json::Value = serde_json::from_slice(&json).unwrap();
    forged["seq"] = serde_json::json!(seq + 1_000);
    records.push((seq + 1_000, serde_json::to_vec(&forged).unwrap()));
    codaris_ledger::write_decisions_file(&file, &records).unwrap();

    let forged_report = audit_dir(&path);
    assert_eq!(forged_report.decisions, report.decisions + 1);
    let found: Vec<_> = forged_report
        .chain_findings
        .iter()
        .map(|f| (f.problem, f.key.clone()))
        .collect();
    assert_eq!(
        found,
        vec![(ChainProblem::Unlinked, (seq + 1_000).to_string())]
    );
    // Still there after the ledger was opened (and audited) again.
    assert_eq!(audit_dir(&path), forged_report);
}

#[test]
fn a_chain_file_whose_header_was_overwritten_is_reported_never_read_as_a_clean_chain() {
    let (_temp, path, _, _) = folded();
    let file = chain_file(&path);
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[..16].copy_from_slice(b"not-a-chain-file");
    std::fs::write(&file, &bytes).unwrap();

    let report = audit_dir(&path);
    assert!(
        report
            .corrupt
            .iter()
            .any(|c| c.contains("not a chain file")),
        "{:?}",
        report.corrupt
    );
    assert!(
        report
            .chain_findings
            .iter()
            .any(|f| f.problem == ChainProblem::Unlinked),
        "the records its links covered are unlinked: {:?}",
        report.chain_findings
    );
    assert!(!report.is_clean());
}

/// The chain file rewritten with the last decision's link forged as `forge` made it, and the
/// forged link's number and record key.
fn with_last_decision_link_forged(path: &Path, forge: impl Fn(&mut Link)) -> (u64, String) {
    let file = chain_file(path);
    let mut stored: Vec<StoredLink> = codaris_ledger::read_chain_file(&file)
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let at = stored
        .iter()
        .rposition(|s| matches!(s, StoredLink::Link(l) if l.kind == RecordKind::Decision))
        .unwrap();
    let StoredLink::Link(link) = &mut stored[at] else {
        unreachable!("found as a link")
    };
    let key = link.key.clone();
    forge(link);
    let seq = link.seq;
    codaris_ledger::write_chain_file(&file, &stored).unwrap();
    (seq, key)
}

fn problems_of(report: &ReplayReport, seq: Option<u64>) -> Vec<ChainProblem> {
    report
        .chain_findings
        .iter()
        .filter(|f| f.seq == seq)
        .map(|f| f.problem)
        .collect()
}

#[test]
fn a_link_whose_digest_is_not_lowercase_hex_vouches_for_nothing_and_its_record_is_altered() {
    // The digest's own text in upper case: the same 32 bytes, but not what the ledger writes,
    // so the link is kept as its JSON and compared as that text.
    let (_temp, path, _, _) = folded();
    let (seq, _) = with_last_decision_link_forged(&path, |link| {
        link.digest = link.digest.to_uppercase();
    });
    let report = audit_dir(&path);
    assert_eq!(
        problems_of(&report, Some(seq)),
        vec![ChainProblem::LinkAltered, ChainProblem::Altered],
        "{:?}",
        report.chain_findings
    );
}

#[test]
fn a_decision_link_keyed_by_its_number_written_otherwise_covers_no_record() {
    let (_temp, path, _, _) = folded();
    let (seq, key) = with_last_decision_link_forged(&path, |link| {
        link.key = format!("0{}", link.key);
    });
    let report = audit_dir(&path);
    let unlinked: Vec<&str> = report
        .chain_findings
        .iter()
        .filter(|f| f.problem == ChainProblem::Unlinked)
        .map(|f| f.key.as_str())
        .collect();
    assert_eq!(unlinked, vec![key.as_str()], "{:?}", report.chain_findings);
    assert_eq!(
        problems_of(&report, Some(seq)),
        vec![ChainProblem::LinkAltered, ChainProblem::Missing],
        "{:?}",
        report.chain_findings
    );
}
