//! Each link also covers its record's bytes as stored (`stored`), which lets the audit of a
//! live ledger skip encoding every decision again in canonical JSON. Only bytes a sound link
//! names are taken on trust: bytes that differ are checked in full, a link whose `stored` was
//! changed or taken out no longer hashes to itself, and a link forged in the middle of the
//! chain, however well hashed, vouches for nothing. Every audit here is made both ways and the
//! two reports must agree ([`crate::support::audited`]).

use std::path::Path;

use codaris_ledger::{ChainProblem, Ledger, Link, RecordKind, StoredLink};
use pretty_assertions::assert_eq;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::chain::{audit_dir, chain_problems, decisions_file, recorded, rewrite_chain};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A decision of the first session (so the chain goes on after its link), with its link.
fn middle_decision(path: &Path) -> (u64, Link) {
    let ledger = Ledger::open(path).unwrap();
    let (decisions, _) = ledger.decisions(Some("s1")).unwrap();
    let seq = decisions[1].seq;
    let (links, _) = ledger.links().unwrap();
    let link = links
        .into_iter()
        .find(|l| l.kind == RecordKind::Decision && l.key == seq.to_string())
        .unwrap();
    (seq, link)
}

/// Puts `forged` in the chain file in place of the link of the same number.
fn replace_link(path: &Path, forged: Link) {
    rewrite_chain(path, |records| {
        for record in records {
            if matches!(record, StoredLink::Link(l) if l.seq == forged.seq) {
                *record = StoredLink::Link(forged.clone());
            }
        }
    });
}

/// Decision `seq`'s bytes as the decisions file holds them.
fn stored_bytes(path: &Path, seq: u64) -> Vec<u8> {
    decisions(path)
        .into_iter()
        .find(|(at, _)| *at == seq)
        .unwrap()
        .1
}

fn decisions(path: &Path) -> Vec<(u64, Vec<u8>)> {
    codaris_ledger::read_decisions_file(&decisions_file(path))
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

/// Stores decision `seq` again as `change` makes its bytes, rewriting the stopped ledger's
/// decisions file as someone editing it would; returns the bytes before and after.
fn rewrite_decision(
    path: &Path,
    seq: u64,
    change: impl FnOnce(&[u8]) -> Vec<u8>,
) -> (Vec<u8>, Vec<u8>) {
    let mut records = decisions(path);
    let record = records.iter_mut().find(|(at, _)| *at == seq).unwrap();
    let before = std::mem::take(&mut record.1);
    record.1 = change(&before);
    let after = record.1.clone();
    codaris_ledger::write_decisions_file(&decisions_file(path), &records).unwrap();
    (before, after)
}

/// The same record as other bytes: members sorted and indented.
fn reencoded(bytes: &[u8]) -> Vec<u8> {
    let value: Value = serde_json::from_slice(bytes).unwrap();
    serde_json::to_vec_pretty(&value).unwrap()
}

/// The decision's record with `decided_at_ms` moved on by one, as compact JSON.
fn altered(bytes: &[u8]) -> Vec<u8> {
    let mut record: Value = serde_json::from_slice(bytes).unwrap();
    let at = record["decided_at_ms"].as_u64().unwrap();
    record["decided_at_ms"] = Value::from(at + 1);
    serde_json::to_vec(&record).unwrap()
}

/// A link's hash, computed here from the layout docs/ledger.md gives for a link with `stored`.
fn link_hash(link: &Link) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"codaris-ledger-chain-2");
    let stored = link.stored.as_deref().unwrap();
    for text in [
        &link.prev,
        "decision",
        &link.key,
        &link.session_id,
        &link.digest,
        stored,
    ] {
        hasher.update((text.len() as u64).to_be_bytes());
        hasher.update(text.as_bytes());
    }
    hasher.update(link.seq.to_be_bytes());
    hex(&hasher.finalize())
}

fn problems_of(path: &Path) -> Vec<(ChainProblem, Option<u64>, String)> {
    chain_problems(&audit_dir(path))
}

#[test]
fn every_new_link_covers_its_records_bytes_and_hashes_them_in() {
    let (_temp, path, _) = recorded();
    let (seq, link) = middle_decision(&path);
    assert_eq!(link_hash(&link), link.hash, "the documented layout");
    let ledger = Ledger::open(&path).unwrap();
    let (links, _) = ledger.links().unwrap();
    assert!(links.iter().all(|l| l.stored.is_some()), "{links:?}");
    drop(ledger);
    let bytes = stored_bytes(&path, seq);
    assert_eq!(link.stored, Some(hex(&Sha256::digest(&bytes))));
    assert_eq!(problems_of(&path), vec![]);
}

#[test]
fn a_record_stored_as_other_bytes_of_the_same_content_still_verifies() {
    let (_temp, path, _) = recorded();
    let (seq, _) = middle_decision(&path);
    {
        let (bytes, same) = rewrite_decision(&path, seq, reencoded);
        assert_ne!(same, bytes);
    }
    let report = audit_dir(&path);
    assert_eq!(chain_problems(&report), vec![]);
    assert_eq!(report.matched, report.decisions);
}

#[test]
fn a_record_altered_under_a_link_that_names_its_bytes_is_reported() {
    let (_temp, path, _) = recorded();
    let (seq, link) = middle_decision(&path);
    {
        rewrite_decision(&path, seq, altered);
    }
    assert_eq!(
        problems_of(&path),
        vec![(ChainProblem::Altered, Some(link.seq), seq.to_string())]
    );
}

#[test]
fn a_links_stored_digest_changed_or_taken_out_breaks_the_links_hash() {
    for change in ["changed", "taken out"] {
        let (_temp, path, _) = recorded();
        let (seq, link) = middle_decision(&path);
        {
            let mut forged = link.clone();
            forged.stored = match change {
                "changed" => Some(hex(&Sha256::digest(b"other bytes"))),
                _ => None,
            };
            replace_link(&path, forged);
        }
        // The record itself is untouched, and is not reported.
        assert_eq!(
            problems_of(&path),
            vec![(ChainProblem::LinkAltered, Some(link.seq), seq.to_string())],
            "{change}"
        );
    }
}

#[test]
fn a_link_forged_in_the_middle_with_a_hash_of_its_own_vouches_for_nothing() {
    let (_temp, path, _) = recorded();
    let (seq, link) = middle_decision(&path);
    {
        let (_, changed) = rewrite_decision(&path, seq, altered);
        // The forger names the new bytes but leaves the old canonical digest: the link hashes
        // to itself, so only the link after it shows the forgery.
        let mut forged = link.clone();
        forged.stored = Some(hex(&Sha256::digest(&changed)));
        forged.hash = link_hash(&forged);
        replace_link(&path, forged);
    }
    let found = problems_of(&path);
    assert!(
        found.contains(&(ChainProblem::Altered, Some(link.seq), seq.to_string())),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|(p, at, _)| *p == ChainProblem::BrokenLink && *at == Some(link.seq + 1)),
        "{found:?}"
    );
    assert!(
        !found
            .iter()
            .any(|(p, _, _)| *p == ChainProblem::LinkAltered),
        "{found:?}"
    );
}

/// How many decisions one batched audit of the ledger at `path` digested in full (after the
/// audits of `support::audited` agree).
fn digested_in_full(path: &Path) -> u64 {
    let ledger = Ledger::open(path).unwrap();
    crate::support::audited(&ledger);
    let before = ledger.decisions_digested_in_full();
    ledger.audit().unwrap();
    ledger.decisions_digested_in_full() - before
}

#[test]
fn an_untouched_ledger_is_audited_without_encoding_its_decisions_again() {
    let (_temp, path, _) = recorded();
    let ledger = Ledger::open(&path).unwrap();
    let (decisions, _) = ledger.decisions(None).unwrap();
    let (links, _) = ledger.links().unwrap();
    drop(ledger);
    assert!(decisions.len() >= 4, "{decisions:?}");
    // Nothing after the chain's last link vouches for it: its record, if a decision, is the
    // one digested in full.
    let last_is_a_decision = links.last().unwrap().kind == RecordKind::Decision;
    let untouched = digested_in_full(&path);
    assert_eq!(untouched, u64::from(last_is_a_decision));

    let (seq, _) = middle_decision(&path);
    {
        rewrite_decision(&path, seq, reencoded);
    }
    assert_eq!(
        digested_in_full(&path),
        untouched + 1,
        "bytes no link names"
    );
}

#[test]
fn records_replayed_from_the_journal_keep_the_bytes_their_links_name() {
    let (temp, path, _) = recorded();
    // The journal alone, under a fresh ledger: every record is stored again from it at open.
    let journal = std::fs::read(temp.path().join("ledger.journal")).unwrap();
    let fresh = tempfile::tempdir().unwrap();
    std::fs::write(fresh.path().join("ledger.journal"), journal).unwrap();
    let replayed = fresh.path().join("ledger");
    let report = audit_dir(&replayed);
    assert_eq!(report, audit_dir(&path));
    assert!(report.decisions >= 4, "{report:?}");
    assert_eq!(digested_in_full(&replayed), digested_in_full(&path));
    assert!(digested_in_full(&replayed) <= 1);
}
