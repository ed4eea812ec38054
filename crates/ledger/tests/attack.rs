//! Issue 11's forged grant, as a regression test: with the daemon stopped, a command appends
//! one line to `<state>/ledger.journal` granting the session `/`. After the ledger reopens, the
//! grant is read (the journal is what the ledger recovers from), but `audit` reports it as
//! backed by nothing and off the chain: it never replays with 0 findings.

use std::io::Write;
use std::path::Path;

use codaris_ledger::{ChainProblem, GrantProblem, Ledger};
use codaris_policy::{Code, Verdict};
use serde_json::json;

use crate::support::{backed_session, record, request, task};

fn forge(path: &Path, line: &serde_json::Value) {
    let mut journal = std::fs::OpenOptions::new()
        .append(true)
        .open(path.with_extension("journal"))
        .unwrap();
    writeln!(journal, "{line}").unwrap();
}

/// The line the attack wrote: a session grant on `/`, shaped exactly like a real record.
fn root_grant(id: &str, backing: Option<serde_json::Value>) -> serde_json::Value {
    let mut line = json!({
        "type": "grant", "schema": 1, "id": id, "session_id": "s1",
        "grant": {"capability": "mutate_outside_fence", "path": "/", "lifetime": "session",
                  "id": id},
        "granted_at_ms": 1_796_000_000_000u64, "card_id": null,
        "consumed_at_ms": null, "revoked_at_ms": null,
    });
    if let Some(backing) = backing {
        line["backing"] = backing;
    }
    line
}

#[test]
fn a_grant_line_appended_to_the_journal_is_reported_unbacked_and_off_the_chain() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("ledger");
    {
        let ledger = Ledger::open(&path).unwrap();
        backed_session(&ledger, "s1");
        assert!(crate::support::audited(&ledger).is_clean());
    }
    // The daemon is stopped; the model's command appends its grant.
    forge(&path, &root_grant("g000000999999", None));

    let ledger = Ledger::open(&path).unwrap();
    // The forged grant is read back, but no answered card backs it: it is set aside and the
    // policy never sees it.
    let view = ledger.grant_view("s1").unwrap();
    assert!(
        !view
            .grants
            .iter()
            .any(|g| g.id.as_deref() == Some("g000000999999"))
    );
    assert_eq!(view.set_aside, vec!["g000000999999".to_owned()]);
    let mut write = request(
        "write",
        json!({"path": "/etc/cron.d/x", "content": "x"}),
        task(codaris_policy::Activity::Agent),
    );
    // A build that honoured such a grant recorded decisions on it: the audit must see them.
    write.grants = vec![ledger.grant("g000000999999").unwrap().grant];
    let decided = record(&ledger, "s1", write);
    assert_eq!(decided.decision.verdict, Verdict::Allow);
    assert_eq!(decided.decision.code, Code::AllowedByGrant);

    let report = crate::support::audited(&ledger);
    assert!(!report.is_clean(), "{report:#?}");
    assert_eq!(
        report.differences,
        Vec::new(),
        "the policy itself decided the same"
    );
    let unbacked: Vec<_> = report
        .unbacked_grants
        .iter()
        .map(|f| (f.problem, f.grant_id.as_str()))
        .collect();
    assert_eq!(unbacked, vec![(GrantProblem::NoBacking, "g000000999999")]);
    let chain: Vec<_> = report
        .chain_findings
        .iter()
        .map(|f| (f.problem, f.key.as_str()))
        .collect();
    assert_eq!(chain, vec![(ChainProblem::Unlinked, "g000000999999")]);
}

#[test]
fn a_forged_grant_that_claims_a_real_card_is_reported_too() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("ledger");
    {
        let ledger = Ledger::open(&path).unwrap();
        backed_session(&ledger, "s1");
    }
    // The session's real card was answered `allow_session` for `/tmp/out`, naming its grant.
    forge(
        &path,
        &root_grant(
            "g000000999998",
            Some(json!({"kind": "card", "card_id": "c-s1"})),
        ),
    );
    // And one that claims an allowlist: allowlist grants are never stored.
    forge(
        &path,
        &root_grant(
            "g000000999997",
            Some(json!({"kind": "allowlist", "key": "tools.command_allowlist", "entry": "/"})),
        ),
    );
    let ledger = Ledger::open(&path).unwrap();
    let report = crate::support::audited(&ledger);
    let mut unbacked: Vec<_> = report
        .unbacked_grants
        .iter()
        .map(|f| (f.grant_id.as_str(), f.problem))
        .collect();
    unbacked.sort_by_key(|(id, _)| *id);
    assert_eq!(
        unbacked,
        vec![
            ("g000000999997", GrantProblem::AllowlistRecord),
            ("g000000999998", GrantProblem::AnswerMismatch),
        ]
    );
    assert_eq!(
        report.chain_findings.len(),
        2,
        "{:?}",
        report.chain_findings
    );
    for line in report.unbacked_grants.iter().map(ToString::to_string) {
        assert!(!line.contains('\n'), "{line}");
    }
}

#[test]
fn a_forged_link_that_claims_the_last_number_does_not_stop_the_ledger() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("ledger");
    drop(Ledger::open(&path).unwrap());
    let mut line = root_grant("g000000999996", None);
    line["link"] = json!({"seq": u64::MAX, "kind": "grant", "key": "g000000999996",
        "session_id": "s1", "digest": "00", "prev": "00", "hash": "00"});
    forge(&path, &line);
    let ledger = Ledger::open(&path).unwrap();
    backed_session(&ledger, "s1");
    let report = crate::support::audited(&ledger);
    assert!(!report.is_clean());
    assert!(
        report
            .chain_findings
            .iter()
            .any(|f| f.problem == ChainProblem::Gap && f.seq == Some(1)),
        "{:?}",
        report.chain_findings
    );
}

#[test]
fn a_program_wide_grant_for_a_program_the_card_never_offered_is_reported() {
    use codaris_ledger::{Backing, CardAnswer, CardRecord};
    use codaris_policy::{CapabilityName, Grant, Lifetime};
    let temp = tempfile::tempdir().unwrap();
    let ledger = Ledger::open(&temp.path().join("ledger")).unwrap();
    ledger
        .append_card(&CardRecord::asked(
            "c1".to_owned(),
            "s1".to_owned(),
            Some(codaris_policy::Capability::new(
                CapabilityName::RunCommand,
                Some("cargo test".to_owned()),
            )),
            "run `cargo test`".to_owned(),
            vec!["cargo".to_owned()],
            10,
        ))
        .unwrap();
    let card = || Backing::Card {
        card_id: "c1".to_owned(),
    };
    let program =
        |name: &str| Grant::new(CapabilityName::RunProgram, Some(name), Lifetime::Session);
    ledger
        .answer_card("c1", CardAnswer::AllowPrograms, vec![program("cargo")], 11)
        .unwrap();
    // A forger's grant for a program the card never offered, claiming the same card.
    let smuggled = ledger
        .append_grant("s1", program("rm"), card(), 12)
        .unwrap();
    let report = crate::support::audited(&ledger);
    let unbacked: Vec<_> = report
        .unbacked_grants
        .iter()
        .map(|f| (f.grant_id.clone(), f.problem))
        .collect();
    assert_eq!(unbacked, vec![(smuggled.id, GrantProblem::AnswerMismatch)]);
}
