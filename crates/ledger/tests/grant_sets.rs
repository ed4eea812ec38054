//! Decision records name the grants in force by a grant set (schema 2): a record's size does not
//! grow with the grants, every read fills them back in, and records written in the schema 1
//! format (each carrying copies of its grants) still read and replay.

use codaris_ledger::{
    CardAnswer, CardRecord, DecisionRecord, Evidence, ExportLine, GrantRecord, Ledger, audit,
    read_export,
};
use codaris_policy::{Activity, Capability, CapabilityName, Grant, Lifetime};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::support::{ledger, record, request, task};

const OLD_JOURNAL: &str = include_str!("fixtures/schema1.journal");
const OLD_EXPORT: &str = include_str!("fixtures/schema1-export.jsonl");

/// `count` program grants in `session`, given by one card answered for every program.
fn programs_granted(ledger: &Ledger, session: &str, count: usize) -> Vec<GrantRecord> {
    let programs: Vec<String> = (0..count).map(|n| format!("tool-{n:05}")).collect();
    let card = format!("c-{session}");
    ledger
        .append_card(&CardRecord::asked(
            card.clone(),
            session.to_owned(),
            Some(Capability::new(
                CapabilityName::RunProgram,
                Some(programs[0].clone()),
            )),
            "run these programs".to_owned(),
            programs.clone(),
            1,
        ))
        .unwrap();
    let grants = programs
        .iter()
        .map(|p| Grant::new(CapabilityName::RunProgram, Some(p), Lifetime::Session))
        .collect();
    ledger
        .answer_card(&card, CardAnswer::AllowPrograms, grants, 2)
        .unwrap()
        .unwrap()
}

/// A decision taken on the session's view with one standing grant before it, as the daemon
/// builds its requests.
fn decide_on_view(ledger: &Ledger, session: &str) -> DecisionRecord {
    let mut request = request(
        "run_command",
        json!({"command": "tool-00000 --version"}),
        task(Activity::Agent),
    );
    request.grants = vec![
        Grant::new(CapabilityName::RunProgram, Some("cargo"), Lifetime::Session).with_id(
            codaris_ledger::standing_grant_id(codaris_ledger::COMMAND_ALLOWLIST, "cargo"),
        ),
    ];
    request
        .grants
        .extend(ledger.grant_view(session).unwrap().grants);
    record(ledger, session, request)
}

/// The ledger's export, as `codaris ledger export` writes it.
fn export_text(ledger: &Ledger) -> String {
    ledger
        .export(None)
        .unwrap()
        .0
        .iter()
        .map(|l| serde_json::to_string(l).unwrap() + "\n")
        .collect()
}

/// The decision's line of an export, as stored.
fn stored_line(ledger: &Ledger, seq: u64) -> String {
    let (lines, _) = ledger.export(None).unwrap();
    let line = lines
        .into_iter()
        .find(|l| matches!(l, ExportLine::Decision(d) if d.seq == seq))
        .unwrap();
    serde_json::to_string(&line).unwrap()
}

#[test]
fn a_decision_record_is_the_same_size_with_1_10_or_1000_grants_in_force() {
    let (_temp, ledger) = ledger();
    let mut sizes = Vec::new();
    for (session, count) in [("s0001", 1), ("s0010", 10), ("s1000", 1000)] {
        programs_granted(&ledger, session, count);
        let decided = decide_on_view(&ledger, session);
        assert_eq!(decided.request.grants.len(), 1 + count);
        assert_eq!(decided.decision.verdict, codaris_policy::Verdict::Allow);
        // The ledger's grants are named, not copied; the standing grant stays in the record.
        let line = stored_line(&ledger, decided.seq);
        assert!(!line.contains("tool-00000\",\"lifetime"), "{line}");
        sizes.push(line.len());
        // Read back, the record holds every grant it saw, in order.
        let (read, corrupt) = ledger.decisions(Some(session)).unwrap();
        assert!(corrupt.is_empty(), "{corrupt:?}");
        assert_eq!(read, vec![decided]);
    }
    let (smallest, largest) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
    // Only the digits of the grant count and of the sequence number differ.
    assert!(largest - smallest <= 8, "{sizes:?}");
    assert!(*largest < 4096, "{sizes:?}");
    let report = crate::support::audited(&ledger);
    assert!(report.is_clean(), "{report:#?}");
}

#[test]
fn decisions_on_an_unchanged_view_share_one_grant_set() {
    let (_temp, ledger) = ledger();
    programs_granted(&ledger, "s1", 3);
    let first = decide_on_view(&ledger, "s1");
    let second = decide_on_view(&ledger, "s1");
    assert_eq!(first.grant_set, second.grant_set);
    let sets = |ledger: &Ledger| {
        ledger
            .export(None)
            .unwrap()
            .0
            .into_iter()
            .filter(|l| matches!(l, ExportLine::GrantSet(_)))
            .count()
    };
    assert_eq!(sets(&ledger), 1);
    // A spent grant changes the view, and so the set.
    let granted = ledger.grants(Some("s1")).unwrap().0;
    ledger.revoke(&granted[0].id, 9).unwrap();
    let third = decide_on_view(&ledger, "s1");
    assert_eq!(third.request.grants.len(), 3);
    assert_ne!(third.grant_set, first.grant_set);
    assert_eq!(sets(&ledger), 2);
    assert!(crate::support::audited(&ledger).is_clean());
}

#[test]
fn grants_a_set_cannot_name_are_stored_in_the_record_itself() {
    let (_temp, ledger) = ledger();
    let named = programs_granted(&ledger, "s1", 2);
    // The grants in force, one of them without a ledger id (no grant record lists it).
    let mut in_force: Vec<Grant> = named.iter().map(|r| r.grant.clone()).collect();
    in_force.push(Grant::new(
        CapabilityName::RunProgram,
        Some("tool-extra"),
        Lifetime::Session,
    ));
    let request = request(
        "run_command",
        json!({"command": "tool-00000 --version"}),
        task(Activity::Agent),
    );
    let mut seen = request.clone();
    seen.grants.extend(in_force.iter().cloned());
    let decision = seen.evaluate();
    let stored = ledger
        .append_decision_on(DecisionRecord::new("s1", request, decision, 7), &in_force)
        .unwrap();
    assert_eq!(stored.grant_set, None, "no set names them");
    assert_eq!(stored.request.grants, in_force, "copied into the record");
    let line = stored_line(&ledger, stored.seq);
    assert!(line.contains("tool-extra"), "{line}");
    let (read, corrupt) = ledger.decisions(Some("s1")).unwrap();
    assert!(corrupt.is_empty(), "{corrupt:?}");
    assert_eq!(read, vec![stored]);
    assert!(crate::support::audited(&ledger).is_clean());
}

#[test]
fn a_ledger_written_in_the_schema_1_format_replays_clean() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("ledger");
    // A journal as a schema 1 build left it: opening replays it into sled.
    std::fs::write(temp.path().join("ledger.journal"), OLD_JOURNAL).unwrap();
    let ledger = Ledger::open(&path).unwrap();
    let (old, corrupt) = ledger.decisions(None).unwrap();
    assert!(corrupt.is_empty(), "{corrupt:?}");
    assert_eq!(old.len(), 10);
    assert!(old.iter().all(|d| d.schema == 1 && d.grant_set.is_none()));
    // Its decisions carry their grants themselves, and relied on them.
    assert!(old.iter().any(|d| {
        d.decision
            .used_grants
            .iter()
            .any(|u| u.id.as_deref().is_some_and(|id| id.starts_with('g')))
    }));
    let report = crate::support::audited(&ledger);
    assert!(report.is_clean(), "{report:#?}");
    assert_eq!((report.decisions, report.matched), (10, 10));

    // This build goes on writing schema 2 records beside them; both replay. (The fixture is
    // the journal alone, without the id counter sled keeps beside it: ids are taken past the
    // old records' first.)
    for _ in 0..100 {
        ledger.next_id().unwrap();
    }
    let new = decide_on_view(&ledger, "s1");
    assert!(new.grant_set.is_some());
    let report = crate::support::audited(&ledger);
    assert!(report.is_clean(), "{report:#?}");
    assert_eq!(report.decisions, 11);
    drop(ledger);
    let report = crate::support::audited(&Ledger::open(&path).unwrap());
    assert!(report.is_clean(), "{report:#?}");
}

#[test]
fn an_export_written_in_the_schema_1_format_replays_clean() {
    let (lines, corrupt) = read_export(OLD_EXPORT);
    let evidence = Evidence::from_export(lines, corrupt);
    assert!(evidence.grant_sets.is_empty());
    let report = audit(&evidence);
    assert!(report.is_clean(), "{report:#?}");
    assert_eq!((report.decisions, report.matched), (10, 10));
    assert_eq!(report.grants, 3);
}

#[test]
fn an_export_of_schema_2_records_replays_clean_and_a_forged_set_does_not() {
    let (_temp, ledger) = ledger();
    programs_granted(&ledger, "s1", 4);
    decide_on_view(&ledger, "s1");
    let text = export_text(&ledger);
    let (lines, corrupt) = read_export(&text);
    let report = audit(&Evidence::from_export(lines, corrupt));
    assert!(report.is_clean(), "{report:#?}");
    // A set that lists one grant fewer than the decision saw: the decision is not replayed
    // against fewer grants (the set's digest of its grants no longer holds), and the chain
    // shows the set altered.
    let forged: String = text
        .lines()
        .map(|line| {
            let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
            if value["type"] == "grant_set" {
                value["grant_ids"].as_array_mut().unwrap().pop();
            }
            value.to_string() + "\n"
        })
        .collect();
    let (lines, corrupt) = read_export(&forged);
    let report = audit(&Evidence::from_export(lines, corrupt));
    assert_eq!(report.decisions, 0);
    assert!(
        report
            .corrupt
            .iter()
            .any(|c| c.contains("grants cannot be read back")),
        "{:?}",
        report.corrupt
    );
    assert!(!report.chain_findings.is_empty());
}

#[test]
fn a_decision_forged_under_the_seq_of_another_is_reported_by_the_chain() {
    let (_temp, ledger) = ledger();
    programs_granted(&ledger, "s1", 2);
    decide_on_view(&ledger, "s1");
    let text = export_text(&ledger);
    // A second line under the same seq, before the real one: a copy whose time was moved.
    let forged: String = text
        .lines()
        .flat_map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            let mut lines = vec![line.to_owned()];
            if value["type"] == "decision" {
                let mut copy = value.clone();
                copy["decided_at_ms"] = json!(7);
                lines.insert(0, copy.to_string());
            }
            lines.into_iter().map(|l| l + "\n")
        })
        .collect();
    let (lines, corrupt) = read_export(&forged);
    let report = audit(&Evidence::from_export(lines, corrupt));
    assert!(
        report
            .chain_findings
            .iter()
            .any(|f| f.problem == codaris_ledger::ChainProblem::Altered),
        "{:?}",
        report.chain_findings
    );
}
