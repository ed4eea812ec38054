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
        tool: tool.to_owned(),
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
        .append_decision(DecisionRecord {
            schema: 0,
            seq: 0,
            session_id: session.to_owned(),
            decided_at_ms: 1_000,
            policy_version: codaris_policy::POLICY_VERSION.to_owned(),
            request,
            decision,
        })
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
