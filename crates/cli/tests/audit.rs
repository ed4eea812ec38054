//! `codaris audit replay` over ledgers written by the ledger library, offline.

use std::process::{Command, Output};

use codaris_ledger::{DecisionRecord, Ledger};
use codaris_policy::{Activity, Code, Request, Task, Verdict};
use serde_json::json;

fn codaris(state: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_codaris"))
        .env_clear()
        .env("CODARIS_STATE_DIR", state)
        .args(args)
        .output()
        .unwrap()
}

fn requests() -> Vec<Request> {
    let task = |activity| {
        let mut task = Task::new("/w/proj");
        task.activity = activity;
        task
    };
    let request = |tool: &str, args, activity| Request {
        tool: codaris_policy::ToolId::parse(tool),
        args,
        task: task(activity),
        grants: Vec::new(),
        spec: None,
    };
    vec![
        request("read_file", json!({"path": "main.nf"}), Activity::Agent),
        request(
            "write",
            json!({"path": "notes.md", "content": "x"}),
            Activity::Review,
        ),
        request(
            "write",
            json!({"path": "/etc/hosts", "content": "x"}),
            Activity::Agent,
        ),
    ]
}

/// Writes a session to `<state>/ledger`; `tamper` alters the recorded decision of a review write,
/// as an older policy without the read-only rule would have decided it.
fn record_session(state: &std::path::Path, tamper: bool) {
    let ledger = Ledger::open(&state.join("ledger")).unwrap();
    for request in requests() {
        let mut decision = request.evaluate();
        if tamper && decision.code == Code::ReadOnlyActivity {
            decision.verdict = Verdict::Allow;
            decision.code = Code::AllowedByDefault;
            decision.sentence = "allowed".to_owned();
        }
        ledger
            .append_decision(DecisionRecord {
                schema: 1,
                seq: 0,
                session_id: "s1".to_owned(),
                decided_at_ms: 1,
                policy_version: "1".to_owned(),
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
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_recorded_session_replays_clean() {
    let temp = tempfile::tempdir().unwrap();
    record_session(temp.path(), false);
    let output = codaris(temp.path(), &["audit", "replay", "--explain"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(stdout.contains("replayed 3 decisions"), "{stdout}");
    assert!(stdout.contains("3 matched, 0 differ"), "{stdout}");
    assert!(stdout.contains("deny read_only_activity"), "{stdout}");
    // One line per decision, oldest first, before the summary (a live ledger is audited a
    // batch at a time, and each line printed as its decision is replayed).
    let lines: Vec<&str> = stdout.lines().collect();
    let explained: Vec<&str> = lines.iter().take(3).map(|l| &l[..2]).collect();
    assert_eq!(explained, ["#1", "#2", "#3"], "{stdout}");
    assert!(lines[3].starts_with("replayed 3 decisions"), "{stdout}");

    let output = codaris(temp.path(), &["audit", "replay", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["decisions"], 3);
    assert_eq!(report["matched"], 3);
    assert_eq!(report["differences"], json!([]));
}

#[test]
fn a_changed_rule_is_reported_with_both_decisions_and_exit_1() {
    let temp = tempfile::tempdir().unwrap();
    record_session(temp.path(), true);
    let output = codaris(temp.path(), &["audit", "replay"]);
    assert_eq!(output.status.code(), Some(1));
    let stdout = text(&output.stdout);
    assert!(stdout.contains("2 matched, 1 differ"), "{stdout}");
    assert!(
        stdout.contains("recorded: {\"verdict\":\"allow\""),
        "{stdout}"
    );
    assert!(
        stdout.contains("replayed: {\"verdict\":\"deny\",\"code\":\"read_only_activity\""),
        "{stdout}"
    );
}

#[test]
fn replay_from_an_export_file() {
    let temp = tempfile::tempdir().unwrap();
    record_session(temp.path(), false);
    let ledger = Ledger::open(&temp.path().join("ledger")).unwrap();
    let (lines, _) = ledger.export(None).unwrap();
    drop(ledger);
    let file = temp.path().join("export.jsonl");
    let body: String = lines
        .iter()
        .map(|l| serde_json::to_string(l).unwrap() + "\n")
        .collect();
    std::fs::write(
        &file,
        body + "{\"type\": \"decision\", \"garbage\": true}\n",
    )
    .unwrap();
    let output = codaris(
        temp.path(),
        &["audit", "replay", "--from", file.to_str().unwrap()],
    );
    assert_eq!(
        output.status.code(),
        Some(1),
        "an unreadable line is never skipped quietly"
    );
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("3 matched, 0 differ, 1 unreadable"),
        "{stdout}"
    );
    // The header, three decisions and their three chain links come first.
    assert!(stdout.contains("export line 8"), "{stdout}");
}

#[test]
fn a_ledger_held_by_a_running_daemon_is_refused_clearly() {
    let temp = tempfile::tempdir().unwrap();
    record_session(temp.path(), false);
    let _held = Ledger::open(&temp.path().join("ledger")).unwrap();
    let output = codaris(temp.path(), &["audit", "replay"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("in use by a running codarisd"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1);
}

#[test]
fn no_ledger_is_a_clear_error() {
    let temp = tempfile::tempdir().unwrap();
    let output = codaris(temp.path(), &["audit", "replay"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("no ledger at"),
        "{}",
        text(&output.stderr)
    );
}
