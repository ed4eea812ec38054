//! The chain's links live in `<ledger>.chain`, a file of their own, since 2026-12; before, in
//! sled's `chain` tree. An older ledger's tree is moved into the file once, at its first open,
//! and audits exactly as before. The file is not synced on each commit (the journal is what a
//! crash is recovered from), so at open it is cut back to the length last made durable and the
//! journal's links are appended again, never twice.

use std::path::{Path, PathBuf};

use codaris_ledger::{ChainProblem, Ledger, Link, ReplayReport, StoredLink};
use pretty_assertions::assert_eq;

use crate::chain::{audit_dir, chain_file, raw_sled, recorded};

fn journal(path: &Path) -> PathBuf {
    path.with_extension("journal")
}

fn links(path: &Path) -> Vec<Link> {
    let ledger = Ledger::open(path).unwrap();
    let (links, corrupt) = ledger.links().unwrap();
    assert_eq!(corrupt, Vec::new());
    links
}

/// A stopped ledger whose journal was folded, so everything is in sled and the chain file.
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

/// Turns a stopped ledger back into the layout of the builds before the chain file: its links
/// as JSON in sled's `chain` tree under their numbers, no chain file, no durable length.
fn as_older_build_left_it(path: &Path, links: &[Link], extra: Option<(u64, &[u8])>) {
    let db = raw_sled(path);
    let tree = db.open_tree("chain").unwrap();
    for link in links {
        tree.insert(link.seq.to_be_bytes(), serde_json::to_vec(link).unwrap())
            .unwrap();
    }
    if let Some((seq, bytes)) = extra {
        tree.insert(seq.to_be_bytes(), bytes).unwrap();
    }
    db.open_tree("meta")
        .unwrap()
        .remove("chain_durable_len")
        .unwrap();
    db.flush().unwrap();
    drop(db);
    std::fs::remove_file(chain_file(path)).unwrap();
}

fn tree_names(path: &Path) -> Vec<String> {
    let db = raw_sled(path);
    db.tree_names()
        .iter()
        .map(|name| String::from_utf8_lossy(name).into_owned())
        .collect()
}

#[test]
fn an_older_ledgers_chain_tree_is_moved_into_the_chain_file_once_and_audits_the_same() {
    let (_temp, path, report, before) = folded();
    as_older_build_left_it(&path, &before, None);
    assert!(tree_names(&path).contains(&"chain".to_owned()));

    assert_eq!(links(&path), before, "every link, in order, as it was");
    assert!(
        !tree_names(&path).contains(&"chain".to_owned()),
        "the tree is dropped once the file is durable"
    );
    assert_eq!(
        audit_dir(&path),
        report,
        "the audit is the same, field for field"
    );

    // Opened again, nothing is moved twice; appends go on after the moved links.
    let ledger = Ledger::open(&path).unwrap();
    crate::support::backed_session(&ledger, "s3");
    drop(ledger);
    let after = audit_dir(&path);
    assert!(after.is_clean(), "{after:?}");
    assert!(after.chain_links > before.len(), "{after:?}");
    assert_eq!(links(&path)[..before.len()], before[..]);
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
fn a_crash_after_the_chain_file_was_made_durable_but_before_the_journal_was_emptied_adds_no_link_twice()
 {
    let (_temp, path, _) = recorded();
    // The journal as it was before the fold, written back after it: the state a crash between
    // recording the chain file's length and emptying the journal leaves.
    let lines = std::fs::read(journal(&path)).unwrap();
    assert!(!lines.is_empty());
    let ledger = Ledger::open(&path).unwrap();
    let (before, _) = ledger.links().unwrap();
    ledger.fold_journal().unwrap();
    drop(ledger);
    std::fs::write(journal(&path), &lines).unwrap();

    assert_eq!(links(&path), before);
    let report = audit_dir(&path);
    assert!(report.is_clean(), "{report:?}");
}

#[test]
fn a_chain_file_tail_a_crash_left_is_cut_back_and_its_links_come_again_from_the_journal() {
    for tail in ["garbage", "torn record"] {
        let (_temp, path, _) = recorded();
        // Not folded: the journal holds every line, the chain file's durable length is its
        // header's (recorded at the first open).
        let file = chain_file(&path);
        let mut bytes = std::fs::read(&file).unwrap();
        let whole = bytes.len();
        match tail {
            "garbage" => bytes.extend_from_slice(&[0xAB; 300]),
            _ => bytes.truncate(whole - 7),
        }
        std::fs::write(&file, &bytes).unwrap();

        let report = audit_dir(&path);
        assert!(report.is_clean(), "{tail}: {report:?}");
        assert_eq!(
            std::fs::metadata(&file).unwrap().len(),
            whole as u64,
            "{tail}"
        );
    }
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
