use codaris_ledger::{DecisionRecord, ExportLine, Ledger, read_export, replay};
use codaris_policy::{Code, Verdict};
use pretty_assertions::assert_eq;

use crate::support::{ledger, record, session_requests};

#[test]
fn a_recorded_session_replays_with_zero_differences() {
    let (_temp, ledger) = ledger();
    for request in session_requests() {
        record(&ledger, "s1", request);
    }
    let (records, corrupt) = ledger.decisions(Some("s1")).unwrap();
    let report = replay(&records, &corrupt);
    assert_eq!(report.decisions, 6);
    assert_eq!(report.matched, 6);
    assert!(report.is_clean(), "{report:?}");
}

/// An older policy that lacked the read-only rule: it let writes through in review turns.
fn decide_with_old_rule(request: &codaris_policy::Request) -> codaris_policy::Decision {
    let mut decision = request.evaluate();
    if decision.code == Code::ReadOnlyActivity {
        decision.verdict = Verdict::Allow;
        decision.code = Code::AllowedByDefault;
        decision.sentence = "allowed".to_owned();
        decision.capability = None;
        decision.rules.clear();
    }
    decision
}

#[test]
fn a_changed_rule_shows_up_as_differences_with_both_decisions() {
    let (_temp, ledger) = ledger();
    for request in session_requests() {
        let decision = decide_with_old_rule(&request);
        ledger
            .append_decision(DecisionRecord {
                schema: 0,
                seq: 0,
                session_id: "s1".to_owned(),
                decided_at_ms: 1,
                policy_version: "0".to_owned(),
                request,
                decision,
                grant_set: None,
                parent_session: None,
                grants_of: None,
                shadow: None,
                launch_body_sha256: None,
            })
            .unwrap();
    }
    let (records, corrupt) = ledger.decisions(None).unwrap();
    let report = replay(&records, &corrupt);
    assert_eq!(report.decisions, 6);
    assert_eq!(report.matched, 5);
    assert_eq!(report.differences.len(), 1);
    let difference = &report.differences[0];
    assert_eq!(difference.tool, "write");
    assert_eq!(difference.recorded.verdict, Verdict::Allow);
    assert_eq!(difference.replayed.verdict, Verdict::Deny);
    assert_eq!(difference.replayed.code, Code::ReadOnlyActivity);
    assert_eq!(difference.recorded_policy_version, "0");
}

#[test]
fn an_export_reads_back_and_replays_the_same() {
    let (_temp, ledger) = ledger();
    for request in session_requests() {
        record(&ledger, "s1", request);
    }
    let (lines, corrupt) = ledger.export(None).unwrap();
    assert!(corrupt.is_empty());
    let text: String = lines
        .iter()
        .map(|l| serde_json::to_string(l).unwrap() + "\n")
        .collect();
    let (read, corrupt) = read_export(&text);
    assert!(corrupt.is_empty(), "{corrupt:?}");
    assert_eq!(read, lines);
    assert!(matches!(read[0], ExportLine::Header { .. }));
    let decisions: Vec<DecisionRecord> = read
        .into_iter()
        .filter_map(|l| match l {
            ExportLine::Decision(d) => Some(*d),
            _ => None,
        })
        .collect();
    assert!(replay(&decisions, &[]).is_clean());
}

#[test]
fn a_damaged_export_line_is_reported_not_skipped() {
    let (lines, corrupt) = read_export("{\"type\": \"decision\", \"schema\": 1}\nnot json\n\n");
    assert!(lines.is_empty());
    assert_eq!(corrupt.len(), 2);
    assert_eq!(corrupt[0].place, "export line 1");
    assert_eq!(corrupt[1].place, "export line 2");
    let report = replay(&[], &corrupt);
    assert!(!report.is_clean());
}

#[test]
fn an_unreadable_decision_makes_the_replay_unclean() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("ledger");
    {
        let db = sled::open(&path).unwrap();
        db.open_tree("decisions")
            .unwrap()
            .insert(7u64.to_be_bytes(), &b"{]"[..])
            .unwrap();
        db.flush().unwrap();
    }
    let ledger = Ledger::open(&path).unwrap();
    let (records, corrupt) = ledger.decisions(None).unwrap();
    let report = replay(&records, &corrupt);
    assert_eq!(report.decisions, 0);
    assert_eq!(report.corrupt.len(), 1);
    assert!(
        report.corrupt[0].contains("decisions record `7`"),
        "{:?}",
        report.corrupt
    );
}

/// A call the person refused at its card alone is recorded with that answer in its task; the
/// replay decides it again the same, from the ledger and from an export, and the stored task
/// of every other decision carries no trace of the field.
#[test]
fn a_call_refused_at_its_card_replays_the_same() {
    let (_temp, ledger) = ledger();
    let write = crate::support::request(
        "write",
        serde_json::json!({"path": "notes.md", "content": "x"}),
        crate::support::task(codaris_policy::Activity::Agent),
    );
    let asked = record(&ledger, "s1", write.clone());
    assert_eq!(asked.decision.code, Code::NeedsApproval);
    let mut refused = write;
    refused.task.refused_at_card = asked.decision.capability.clone();
    let recorded = record(&ledger, "s1", refused);
    assert_eq!(recorded.decision.code, Code::DeniedByUser);
    assert_eq!(recorded.decision.capability, asked.decision.capability);

    let (records, corrupt) = ledger.decisions(Some("s1")).unwrap();
    let report = replay(&records, &corrupt);
    assert_eq!((report.decisions, report.matched), (2, 2));
    assert!(report.is_clean(), "{report:?}");
    let (lines, _) = ledger.export(None).unwrap();
    let text: Vec<String> = lines
        .iter()
        .map(|l| serde_json::to_string(l).unwrap())
        .collect();
    let with_field: Vec<bool> = text
        .iter()
        .filter(|l| l.starts_with(r#"{"type":"decision""#))
        .map(|l| l.contains("refused_at_card"))
        .collect();
    assert_eq!(with_field, [false, true]);
    let (read, corrupt) = read_export(&(text.join("\n") + "\n"));
    assert!(corrupt.is_empty(), "{corrupt:?}");
    let decisions: Vec<DecisionRecord> = read
        .into_iter()
        .filter_map(|l| match l {
            ExportLine::Decision(d) => Some(*d),
            _ => None,
        })
        .collect();
    assert_eq!(replay(&decisions, &[]).matched, 2);
}
