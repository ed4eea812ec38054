use codaris_ledger::{DecisionRecord, Ledger};
use codaris_policy::{Activity, Request, Task};
use serde_json::json;

pub fn ledger() -> (tempfile::TempDir, Ledger) {
    let temp = tempfile::tempdir().unwrap();
    let ledger = Ledger::open(&temp.path().join("ledger")).unwrap();
    (temp, ledger)
}

pub fn task(activity: Activity) -> Task {
    let mut task = Task::new("/w/proj");
    task.activity = activity;
    task.workspace = Some("/s/sessions/s1".to_owned());
    task
}

pub fn request(tool: &str, args: serde_json::Value, task: Task) -> Request {
    Request {
        tool: codaris_policy::ToolId::parse(tool),
        args,
        task,
        grants: Vec::new(),
        spec: None,
    }
}

/// Records what the policy decides now, as the daemon does at dispatch.
pub fn record(ledger: &Ledger, session: &str, request: Request) -> DecisionRecord {
    let decision = request.evaluate();
    ledger
        .append_decision(DecisionRecord::new(session, request, decision, 1_000))
        .unwrap()
}

/// A realistic session: reads, a write outside the fence, a write in a review turn, odd args.
pub fn session_requests() -> Vec<Request> {
    vec![
        request(
            "read_file",
            json!({"path": "src/main.nf"}),
            task(Activity::Agent),
        ),
        request(
            "write",
            json!({"path": "/etc/passwd", "content": "x"}),
            task(Activity::Agent),
        ),
        request(
            "write",
            json!({"path": "out.txt", "content": "x"}),
            task(Activity::Review),
        ),
        request("edit", json!("{\"path\": \"a\"}"), task(Activity::Agent)),
        request(
            "grep",
            json!({"pattern": "process", "path": "/w/proj/modules"}),
            task(Activity::Plan),
        ),
        request(
            "run_command",
            json!({"command": "nextflow run ."}),
            task(Activity::Agent),
        ),
    ]
}

/// What a daemon's card answer records: the card as asked, the grant it gave (backed by the
/// card), then the card's answer naming the grant.
pub fn answered_grant(
    ledger: &Ledger,
    session: &str,
    card_id: &str,
    grant: codaris_policy::Grant,
    answer: codaris_ledger::CardAnswer,
) -> codaris_ledger::GrantRecord {
    ledger
        .append_card(&codaris_ledger::CardRecord::asked(
            card_id.to_owned(),
            session.to_owned(),
            Some(codaris_policy::Capability::new(
                grant.capability,
                grant.path.clone(),
            )),
            "write outside the allowed folders".to_owned(),
            Vec::new(),
            10,
        ))
        .unwrap();
    let mut recorded = ledger
        .answer_card(card_id, answer, vec![grant], 12)
        .unwrap()
        .unwrap();
    recorded.remove(0)
}

/// A session as the daemon records it: a card answered `allow_session` for `/tmp/out`, a
/// standing allowlist grant, and decisions that rely on both (and the session's requests).
/// Returns the grant.
pub fn backed_session(ledger: &Ledger, session: &str) -> codaris_ledger::GrantRecord {
    use codaris_policy::{CapabilityName, Grant, Lifetime};
    let grant = answered_grant(
        ledger,
        session,
        &format!("c-{session}"),
        Grant::new(
            CapabilityName::MutateOutsideFence,
            Some("/tmp/out"),
            Lifetime::Session,
        ),
        codaris_ledger::CardAnswer::AllowSession,
    );
    let standing = Grant::new(
        CapabilityName::RunProgram,
        Some("cargo test"),
        Lifetime::Session,
    )
    .with_id(codaris_ledger::standing_grant_id(
        codaris_ledger::COMMAND_ALLOWLIST,
        "cargo test",
    ));
    let mut requests = session_requests();
    requests.push(request(
        "write",
        json!({"path": "/tmp/out/report.txt", "content": "x"}),
        task(Activity::Agent),
    ));
    requests.push(request(
        "run_command",
        json!({"command": "cargo test -p x"}),
        task(Activity::Agent),
    ));
    for mut request in requests {
        request.grants = vec![standing.clone()];
        request
            .grants
            .extend(ledger.grant_view(session).unwrap().grants);
        record(ledger, session, request);
    }
    grant
}

/// The whole audit of a ledger, made three ways: from all its evidence at once, and a batch of
/// decisions at a time ([`Ledger::audit`], and [`Ledger::audit_each`] showing each decision).
/// All must agree field for field, and the one that shows them must show every decision it
/// replayed, once, in order.
pub fn audited(ledger: &Ledger) -> codaris_ledger::ReplayReport {
    let evidence = ledger.evidence().unwrap();
    let whole = codaris_ledger::audit(&evidence);
    let mut shown = Vec::new();
    let shown_each = ledger.audit_each(|record| shown.push(record.seq)).unwrap();
    pretty_assertions::assert_eq!(shown_each, whole);
    pretty_assertions::assert_eq!(ledger.audit().unwrap(), whole);
    let replayed: Vec<u64> = evidence.decisions.iter().map(|d| d.seq).collect();
    assert_eq!(shown, replayed);
    whole
}

/// The journal file's bytes up to the zeros it writes ahead of its last line.
pub fn journal_lines(journal: &std::path::Path) -> Vec<u8> {
    codaris_test_support::journal_lines(&std::fs::read(journal).unwrap()).to_vec()
}
