//! The ledger through the real daemon and CLI: list, revoke, export, and replay the export
//! offline with the policy linked into `codaris`.

use codaris_e2e::{Sandbox, json, stderr, stdout};
use codaris_ledger::{DecisionRecord, Ledger};
use codaris_policy::{Activity, CapabilityName, Grant, Lifetime, Request, Task};
use pretty_assertions::assert_eq;
use serde_json::json as j;

/// Writes grants and decisions as a daemon's dispatcher would, before the daemon starts.
fn seed(sandbox: &Sandbox) -> (String, String) {
    std::fs::create_dir_all(sandbox.state_dir()).unwrap();
    let ledger = Ledger::open(&sandbox.state_dir().join("ledger")).unwrap();
    let session = ledger
        .append_grant(
            "s000001",
            Grant::new(
                CapabilityName::MutateOutsideFence,
                Some("/tmp/out"),
                Lifetime::Session,
            ),
            Some("c1"),
            1_700_000_000_000,
        )
        .unwrap();
    let refusal = ledger
        .append_grant(
            "s000001",
            Grant::new(
                CapabilityName::ReadOutsideFence,
                Some("/etc"),
                Lifetime::Deny,
            ),
            Some("c2"),
            1_700_000_000_500,
        )
        .unwrap();
    let mut review = Task::new("/w/proj");
    review.activity = Activity::Review;
    for (tool, args, task) in [
        ("read_file", j!({"path": "main.nf"}), Task::new("/w/proj")),
        ("write", j!({"path": "notes.md", "content": "x"}), review),
        (
            "write",
            j!({"path": "/tmp/out/report.txt", "content": "x"}),
            Task::new("/w/proj"),
        ),
    ] {
        let request = Request {
            tool: tool.to_owned(),
            args,
            task,
            grants: ledger.grant_view("s000001").unwrap().grants,
            spec: None,
        };
        let decision = request.evaluate();
        ledger
            .append_decision(DecisionRecord {
                schema: 1,
                seq: 0,
                session_id: "s000001".to_owned(),
                decided_at_ms: 1_700_000_001_000,
                policy_version: codaris_policy::POLICY_VERSION.to_owned(),
                request,
                decision,
            })
            .unwrap();
    }
    (session.id, refusal.id)
}

#[test]
fn list_revoke_export_and_replay() {
    let sandbox = Sandbox::new();
    let (session_grant, refusal) = seed(&sandbox);
    let daemon = sandbox.start_daemon(&[]);

    let output = sandbox.cli(&["ledger", "grants", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let grants: Vec<serde_json::Value> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(grants.len(), 2);
    assert_eq!(grants[0]["id"], session_grant.as_str());
    assert_eq!(grants[0]["capability"], "mutate_outside_fence");
    assert_eq!(grants[0]["path"], "/tmp/out");
    assert_eq!(grants[0]["lifetime"], "session");
    assert_eq!(grants[1]["lifetime"], "deny");

    let output = sandbox.cli(&["ledger", "decisions"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains("write: allow allowed_by_grant"),
        "{text}"
    );
    assert!(text.contains("write: deny read_only_activity"), "{text}");

    let output = sandbox.cli(&["ledger", "revoke", &refusal]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).starts_with(&format!("revoked {refusal}")));
    let output = sandbox.cli(&["ledger", "grants", "--json"]);
    assert_eq!(
        stdout(&output).lines().count(),
        1,
        "a revoked grant is no longer in force"
    );
    let output = sandbox.cli(&["ledger", "revoke", "g404"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("no grant `g404`"),
        "{}",
        stderr(&output)
    );

    let export = sandbox.root.path().join("export.jsonl");
    let output = sandbox.cli(&["ledger", "export", "-o", export.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&export)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "header");
    assert_eq!(lines.iter().filter(|l| l["type"] == "grant").count(), 2);
    assert_eq!(lines.iter().filter(|l| l["type"] == "decision").count(), 3);

    // Offline replay of the export while the daemon still runs.
    let output = sandbox.cli(&["audit", "replay", "--from", export.to_str().unwrap()]);
    assert!(
        output.status.success(),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    assert!(
        stdout(&output).contains("3 matched, 0 differ"),
        "{}",
        stdout(&output)
    );

    // The state directory's ledger is the daemon's while it runs; after a stop it replays too.
    let output = sandbox.cli(&["audit", "replay"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("in use by a running codarisd"),
        "{}",
        stderr(&output)
    );
    assert!(sandbox.cli(&["daemon", "stop"]).status.success());
    daemon.wait(std::time::Duration::from_secs(10));
    let output = sandbox.cli(&["audit", "replay", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let report = json(&output);
    assert_eq!(report["decisions"], 3);
    assert_eq!(report["matched"], 3);
}
