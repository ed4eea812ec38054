//! A subagent's decisions are its own session's, decided under the grants of the person's
//! session it descends from: the record names both, the audit finds the grants it relied on
//! backed, and a record that claims another session's grants without saying so is caught.

use codaris_ledger::{CardAnswer, DecisionRecord};
use codaris_policy::{Activity, CapabilityName, Grant, Lifetime};
use serde_json::json;

use crate::support::{answered_grant, audited, ledger, request, task};

/// A child's write outside the fence, allowed by the grant its parent's person gave.
fn child_decision(ledger: &codaris_ledger::Ledger, grants_of: Option<&str>) -> DecisionRecord {
    let mut child_task = task(Activity::Agent);
    child_task.subagent = true;
    let mut request = request(
        "write",
        json!({"path": "/tmp/out/report.txt", "content": "x"}),
        child_task,
    );
    request.grants = ledger.grant_view("s1").unwrap().grants;
    let decision = request.evaluate();
    assert_eq!(decision.verdict, codaris_policy::Verdict::Allow);
    let mut record = DecisionRecord::new("s2", request, decision, 1_000);
    record.parent_session = Some("s1".to_owned());
    record.grants_of = grants_of.map(str::to_owned);
    ledger.append_decision(record).unwrap()
}

#[test]
fn a_childs_decision_on_its_parents_grants_audits_clean_and_names_both() {
    let (_dir, ledger) = ledger();
    answered_grant(
        &ledger,
        "s1",
        "c1",
        Grant::new(
            CapabilityName::MutateOutsideFence,
            Some("/tmp/out"),
            Lifetime::Session,
        ),
        CardAnswer::AllowSession,
    );
    let stored = child_decision(&ledger, Some("s1"));
    assert_eq!(stored.session_id, "s2");
    assert_eq!(stored.grants_session(), "s1");
    let report = audited(&ledger);
    assert!(report.is_clean(), "{report:#?}");
    assert_eq!(report.matched, 1);
    let (lines, _) = ledger.export(Some("s2")).unwrap();
    let text: String = lines
        .iter()
        .map(|l| serde_json::to_string(l).unwrap())
        .collect();
    assert!(text.contains(r#""parent_session":"s1""#), "{text}");
    assert!(text.contains(r#""grants_of":"s1""#), "{text}");
}

#[test]
fn a_childs_decision_that_hides_whose_grants_it_used_is_caught() {
    let (_dir, ledger) = ledger();
    answered_grant(
        &ledger,
        "s1",
        "c1",
        Grant::new(
            CapabilityName::MutateOutsideFence,
            Some("/tmp/out"),
            Lifetime::Session,
        ),
        CardAnswer::AllowSession,
    );
    child_decision(&ledger, None);
    let report = audited(&ledger);
    assert!(
        !report.is_clean(),
        "the parent's grant is not the child's own"
    );
}
