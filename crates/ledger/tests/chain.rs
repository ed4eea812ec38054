//! The chain walked after a record was inserted, altered or removed: in a ledger directory (a
//! forged line written into `ledger.journal` while no daemon runs, or a record taken out of
//! sled) and in an export file. Each is reported with its link or key; untouched, both verify.

use std::path::Path;

use codaris_ledger::{
    ChainProblem, Evidence, ExportLine, GrantProblem, Ledger, ReplayReport, StoredLink, audit,
    read_export,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::backed_session;

/// A stopped ledger with two sessions recorded as the daemon records them.
pub(crate) fn recorded() -> (
    tempfile::TempDir,
    std::path::PathBuf,
    codaris_ledger::GrantRecord,
) {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("ledger");
    let ledger = Ledger::open(&path).unwrap();
    let grant = backed_session(&ledger, "s1");
    backed_session(&ledger, "s2");
    (temp, path, grant)
}

pub(crate) fn audit_dir(path: &Path) -> ReplayReport {
    let ledger = Ledger::open(path).unwrap();
    crate::support::audited(&ledger)
}

fn export_text(path: &Path) -> String {
    let ledger = Ledger::open(path).unwrap();
    let (lines, corrupt) = ledger.export(None).unwrap();
    assert!(corrupt.is_empty());
    lines
        .iter()
        .map(|l| serde_json::to_string(l).unwrap() + "\n")
        .collect()
}

fn audit_text(text: &str) -> ReplayReport {
    let (lines, corrupt) = read_export(text);
    audit(&Evidence::from_export(lines, corrupt))
}

fn append_journal(path: &Path, line: &str) {
    use std::io::Write;
    let mut journal = std::fs::OpenOptions::new()
        .append(true)
        .open(path.with_extension("journal"))
        .unwrap();
    writeln!(journal, "{line}").unwrap();
}

pub(crate) fn chain_problems(report: &ReplayReport) -> Vec<(ChainProblem, Option<u64>, String)> {
    report
        .chain_findings
        .iter()
        .map(|f| (f.problem, f.seq, f.key.clone()))
        .collect()
}

fn grant_problems(report: &ReplayReport) -> Vec<(GrantProblem, String, Option<u64>)> {
    report
        .unbacked_grants
        .iter()
        .map(|f| (f.problem, f.grant_id.clone(), f.decision_seq))
        .collect()
}

/// The last link's number: where a forged record would have to join the chain.
fn last_link(path: &Path) -> u64 {
    let ledger = Ledger::open(path).unwrap();
    ledger.links().unwrap().0.last().unwrap().seq
}

#[test]
fn an_untouched_ledger_and_its_export_verify_clean() {
    let (_temp, path, grant) = recorded();
    let report = audit_dir(&path);
    assert!(report.is_clean(), "{report:#?}");
    assert_eq!(report.grants, 2);
    // Per session: a card asked, a grant, the card's answer, the grant set the decisions name
    // (written once), eight decisions.
    assert_eq!(report.chain_links, 24);
    // The decisions relied on the card's grant and on the allowlist's, and both verified.
    let ledger = Ledger::open(&path).unwrap();
    let (decisions, _) = ledger.decisions(Some("s1")).unwrap();
    let used: Vec<String> = decisions
        .iter()
        .flat_map(|d| d.decision.used_grants.iter().filter_map(|u| u.id.clone()))
        .collect();
    assert!(used.contains(&grant.id), "{used:?}");
    assert!(
        used.contains(&"config:tools.command_allowlist=cargo test".to_owned()),
        "{used:?}"
    );
    drop(ledger);
    // Reopening folds the journal into sled again; the chain still holds.
    assert!(audit_dir(&path).is_clean());
    let text = export_text(&path);
    let report = audit_text(&text);
    assert!(report.is_clean(), "{report:#?}");
    assert_eq!(report.chain_links, 24);
}

#[test]
fn a_session_export_verifies_without_the_other_sessions_records() {
    let (_temp, path, _) = recorded();
    let ledger = Ledger::open(&path).unwrap();
    let (lines, _) = ledger.export(Some("s2")).unwrap();
    let report = audit(&Evidence::from_export(lines, Vec::new()));
    assert!(report.is_clean(), "{report:#?}");
    assert_eq!(report.grants, 1);
}

#[test]
fn a_record_inserted_into_the_journal_is_reported() {
    let (_temp, path, _) = recorded();
    let next = last_link(&path) + 1;
    // No link at all.
    append_journal(
        &path,
        &json!({"type": "grant", "schema": 1, "id": "g900000000001", "session_id": "s1",
            "grant": {"capability": "read_outside_fence", "path": "/", "lifetime": "session",
                      "id": "g900000000001"},
            "granted_at_ms": 1})
        .to_string(),
    );
    // A link that claims the next place in the chain but does not follow the last link.
    append_journal(
        &path,
        &json!({"type": "card", "schema": 1, "id": "c900", "session_id": "s1",
            "capability": null, "sentence": "x", "asked_at_ms": 1,
            "link": {"seq": next, "kind": "card", "key": "c900", "session_id": "s1",
                     "digest": "00", "prev": "ab", "hash": "cd"}})
        .to_string(),
    );
    let report = audit_dir(&path);
    assert!(!report.is_clean());
    let found = chain_problems(&report);
    assert!(
        found.contains(&(ChainProblem::Unlinked, None, "g900000000001".to_owned())),
        "{found:?}"
    );
    assert!(
        found.contains(&(ChainProblem::BrokenLink, Some(next), "c900".to_owned())),
        "{found:?}"
    );
    assert!(
        found.contains(&(ChainProblem::Altered, Some(next), "c900".to_owned())),
        "{found:?}"
    );
    assert_eq!(
        grant_problems(&report),
        vec![(GrantProblem::NoBacking, "g900000000001".to_owned(), None)]
    );
}

#[test]
fn a_record_altered_in_the_journal_is_reported() {
    let (_temp, path, grant) = recorded();
    let (grant_link, decision) = {
        let ledger = Ledger::open(&path).unwrap();
        let link = ledger
            .links()
            .unwrap()
            .0
            .into_iter()
            .rfind(|l| l.key == grant.id)
            .unwrap();
        let (decisions, _) = ledger.decisions(Some("s1")).unwrap();
        (link.seq, decisions[0].clone())
    };
    // The session's grant widened to `/`, and a recorded refusal's time moved: same keys,
    // other contents.
    let mut widened = grant.clone();
    widened.grant.path = Some("/".to_owned());
    append_journal(
        &path,
        &serde_json::to_string(&ExportLine::Grant(widened)).unwrap(),
    );
    let mut moved = decision.clone();
    moved.decided_at_ms += 1;
    append_journal(
        &path,
        &serde_json::to_string(&ExportLine::Decision(Box::new(moved))).unwrap(),
    );
    let report = audit_dir(&path);
    let found = chain_problems(&report);
    assert!(
        found.contains(&(ChainProblem::Altered, Some(grant_link), grant.id.clone())),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|(p, _, key)| *p == ChainProblem::Altered && *key == decision.seq.to_string()),
        "{found:?}"
    );
    // The widened grant no longer matches its card's answer, nor the grant set the decisions
    // named: those decisions cannot be read back, and are reported rather than replayed
    // against the widened grant.
    let grants = grant_problems(&report);
    assert!(
        grants.contains(&(GrantProblem::AnswerMismatch, grant.id.clone(), None)),
        "{grants:?}"
    );
    assert!(
        report
            .corrupt
            .iter()
            .any(|c| c.contains("a grant record was altered")),
        "{:?}",
        report.corrupt
    );
}

/// Rewrites the stopped ledger's chain file as `change` makes its records, as someone editing
/// it would.
pub(crate) fn rewrite_chain(path: &Path, change: impl FnOnce(&mut Vec<StoredLink>)) {
    let file = chain_file(path);
    let mut records: Vec<StoredLink> = codaris_ledger::read_chain_file(&file)
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect();
    change(&mut records);
    codaris_ledger::write_chain_file(&file, &records).unwrap();
}

/// The decisions file beside the ledger's sled directory.
pub(crate) fn decisions_file(path: &Path) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".decisions");
    name.into()
}

/// The chain file beside the ledger's sled directory.
pub(crate) fn chain_file(path: &Path) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".chain");
    name.into()
}

/// Opens the stopped ledger's sled database directly, as someone editing it would.
pub(crate) fn raw_sled(path: &Path) -> sled::Db {
    // sled lets go of its lock from a background thread shortly after the last handle closes.
    for _ in 0..100 {
        if let Ok(db) = sled::open(path) {
            return db;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    sled::open(path).unwrap()
}

#[test]
fn a_record_removed_from_the_ledger_is_reported() {
    let (_temp, path, grant) = recorded();
    let (decision, middle) = {
        let ledger = Ledger::open(&path).unwrap();
        let (decisions, _) = ledger.decisions(Some("s2")).unwrap();
        let (links, _) = ledger.links().unwrap();
        // A link of a decision in the middle of the chain, and the decision with it.
        let middle = links
            .iter()
            .find(|l| {
                l.seq > 5
                    && l.key != decisions[2].seq.to_string()
                    && l.kind == codaris_ledger::RecordKind::Decision
            })
            .unwrap()
            .clone();
        (decisions[2].seq, middle)
    };
    {
        let middle_seq = middle.key.parse::<u64>().unwrap();
        let kept: Vec<(u64, Vec<u8>)> = codaris_ledger::read_decisions_file(&decisions_file(&path))
            .unwrap()
            .into_iter()
            .map(Result::unwrap)
            .filter(|(seq, _)| *seq != decision && *seq != middle_seq)
            .collect();
        codaris_ledger::write_decisions_file(&decisions_file(&path), &kept).unwrap();
        let db = raw_sled(&path);
        rewrite_chain(&path, |records| {
            records.retain(|r| !matches!(r, StoredLink::Link(l) if l.seq == middle.seq));
        });
        // Removing the grant leaves the decisions that relied on it without a record.
        db.open_tree("grants")
            .unwrap()
            .remove(grant.id.as_bytes())
            .unwrap();
        db.flush().unwrap();
    }
    let report = audit_dir(&path);
    let found = chain_problems(&report);
    assert!(
        found
            .iter()
            .any(|(p, _, key)| *p == ChainProblem::Missing && *key == decision.to_string()),
        "{found:?}"
    );
    assert!(
        found.contains(&(ChainProblem::Gap, Some(middle.seq), String::new())),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|(p, _, key)| *p == ChainProblem::Missing && *key == grant.id),
        "{found:?}"
    );
    // The decisions whose grant set names the removed grant cannot be read back.
    assert!(
        report
            .corrupt
            .iter()
            .any(|c| c.contains(&format!("grant `{}` of its set is missing", grant.id))),
        "{:?}",
        report.corrupt
    );
}

/// Each line of an export, as JSON.
fn export_values(path: &Path) -> Vec<Value> {
    export_text(path)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn text_of(values: &[Value]) -> String {
    values.iter().map(|v| v.to_string() + "\n").collect()
}

fn is(value: &Value, kind: &str) -> bool {
    value["type"] == kind
}

#[test]
fn an_export_with_a_record_inserted_altered_or_removed_is_reported() {
    let (_temp, path, grant) = recorded();
    let values = export_values(&path);
    assert!(audit_text(&text_of(&values)).is_clean());

    // Inserted: a grant of `/` no link covers, backed by a card that does not exist.
    let mut inserted = values.clone();
    inserted.insert(
        1,
        json!({"type": "grant", "schema": 1, "id": "g900000000002", "session_id": "s1",
            "grant": {"capability": "mutate_outside_fence", "path": "/", "lifetime": "session",
                      "id": "g900000000002"},
            "granted_at_ms": 1, "backing": {"kind": "card", "card_id": "c404"}}),
    );
    let report = audit_text(&text_of(&inserted));
    assert_eq!(
        chain_problems(&report),
        vec![(ChainProblem::Unlinked, None, "g900000000002".to_owned())]
    );
    assert_eq!(
        grant_problems(&report),
        vec![(GrantProblem::CardMissing, "g900000000002".to_owned(), None)]
    );

    // Altered: the grant's path widened to `/`.
    let mut altered = values.clone();
    let at = altered
        .iter()
        .position(|v| is(v, "grant") && v["id"] == grant.id.as_str())
        .unwrap();
    altered[at]["grant"]["path"] = json!("/");
    let report = audit_text(&text_of(&altered));
    let found = chain_problems(&report);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (found[0].0, found[0].2.as_str()),
        (ChainProblem::Altered, grant.id.as_str())
    );

    // Removed: a decision's line, then a link's line.
    let mut removed = values.clone();
    let at = removed.iter().position(|v| is(v, "decision")).unwrap();
    let seq = removed.remove(at)["seq"].to_string();
    let report = audit_text(&text_of(&removed));
    assert_eq!(
        chain_problems(&report)
            .into_iter()
            .map(|(p, _, key)| (p, key))
            .collect::<Vec<_>>(),
        vec![(ChainProblem::Missing, seq)]
    );
    let mut removed = values.clone();
    let at = removed
        .iter()
        .position(|v| is(v, "link") && v["seq"] == 7)
        .unwrap();
    removed.remove(at);
    let report = audit_text(&text_of(&removed));
    let found = chain_problems(&report);
    assert!(
        found.contains(&(ChainProblem::Gap, Some(7), String::new())),
        "{found:?}"
    );
}

/// More decisions than one batch of the batched audit holds, across sessions and written by
/// several threads, with an altered decision, one naming a grant set that is not there and a
/// line that does not decode, placed in different batches: the audit a batch at a time reports
/// exactly what the audit of the whole evidence does.
#[test]
fn a_ledger_of_many_batches_audits_alike_both_ways() {
    let (_temp, path, _) = recorded();
    let ledger = std::sync::Arc::new(Ledger::open(&path).unwrap());
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let ledger = ledger.clone();
            std::thread::spawn(move || {
                let requests = crate::support::session_requests();
                for n in 0..1_200 {
                    let request = requests[n % requests.len()].clone();
                    crate::support::record(&ledger, &format!("w{w}-{}", n % 7), request);
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    let (lines, _) = ledger.export(None).unwrap();
    drop(ledger);
    let stored: Vec<Value> = lines
        .iter()
        .filter(|l| matches!(l, ExportLine::Decision(_)))
        .map(|l| serde_json::to_value(l).unwrap())
        .collect();
    assert!(stored.len() > 4_800, "{}", stored.len());
    let mut altered = stored[40].clone();
    // Another verdict than the recorded one, whichever that was (the writers' interleaving
    // decides which request is at this place).
    let verdict = if altered["decision"]["verdict"] == "deny" {
        "allow"
    } else {
        "deny"
    };
    altered["decision"]["verdict"] = json!(verdict);
    append_journal(&path, &altered.to_string());
    let mut no_set = stored[4_500].clone();
    no_set["grant_set"] = json!({"key": "nope", "inline": 0, "count": 1});
    append_journal(&path, &no_set.to_string());
    append_journal(&path, r#"{"type":"decision","schema":2,"seq":"#);

    let report = crate::support::audited(&Ledger::open(&path).unwrap());
    assert_eq!(report.differences.len(), 1, "{:#?}", report.differences);
    assert_eq!(report.corrupt.len(), 2, "{:#?}", report.corrupt);
    let altered_seq = altered["seq"].as_u64().unwrap();
    let no_set_seq = no_set["seq"].as_u64().unwrap();
    let altered_keys: Vec<String> = report
        .chain_findings
        .iter()
        .filter(|f| f.problem == ChainProblem::Altered)
        .map(|f| f.key.clone())
        .collect();
    assert_eq!(
        altered_keys,
        [altered_seq.to_string(), no_set_seq.to_string()]
    );
    // The forged lines are kept beside the records they claim the numbers of (decisions are
    // only ever appended): the altered copy is replayed too and reported as altered, the copy
    // naming no set cannot be read back, and the originals still verify.
    assert_eq!(report.decisions, stored.len() + 1);
}
