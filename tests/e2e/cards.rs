//! Cards through the real binaries: the model cannot answer its own card from a command it
//! starts, the answer's reply names its durable grant, and a recorded deny asks nothing again.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use codaris_test_support::sandbox::{Sandbox, events, stderr, stdout};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// `codaris run --json` in `cwd` playing `body`, every card answered `approve`; the events.
fn run(sandbox: &Sandbox, cwd: &Path, body: &Value, approve: &str) -> Vec<Value> {
    let output = sandbox.run_script(cwd, body, &["--approve", approve], "go");
    assert!(
        output.status.success(),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    events(&output)
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn grants(sandbox: &Sandbox) -> Vec<Value> {
    let output = sandbox.cli(&["ledger", "grants", "--json", "--all"]);
    assert!(output.status.success(), "{}", stderr(&output));
    stdout(&output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The test's card-answering client, copied into the project so the sandbox may run it.
fn planted_client(proj: &Path) -> PathBuf {
    let client = proj.join("answer_card");
    std::fs::copy(env!("CARGO_BIN_EXE_answer_card"), &client).unwrap();
    std::fs::set_permissions(&client, std::fs::Permissions::from_mode(0o755)).unwrap();
    client
}

#[test]
fn a_command_the_model_starts_cannot_answer_its_card() {
    let sandbox = Sandbox::new();
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("planted.txt");
    let client = planted_client(&proj);
    // The client runs without a card, so the attack really starts; every card is denied.
    sandbox.write_config(&format!(
        "[tools]\ncommand_allowlist = [\"{}\"]\n",
        client.display()
    ));
    let command = |line: String, background: bool| json!({"tool_calls": [{"name": "run_command", "args": {"command": line, "background": background}}]});
    // The client starts in the background and watches the ledger for the card the next call
    // raises; the turn collects its report at the end.
    let body = json!({"turns": [{"rounds": [
        command(format!("{} {} report.txt", client.display(), sandbox.socket().display()), true),
        {"tool_calls": [{"name": "request_capability", "args": {
            "capability": "mutate_outside_fence", "path": target.display().to_string(),
            "reason": "save the results"}}]},
        {"tool_calls": [{"name": "write", "args": {"path": target.display().to_string(), "content": "planted"}}]},
        command(format!("{} --wait report.txt", client.display()), false),
        {"text": "done"}
    ]}]});
    let events = run(&sandbox, &proj, &body, "deny");
    let results = of_type(&events, "tool_result");
    assert_eq!(results.len(), 4, "{events:#?}");
    assert_eq!(
        results[0]["decision"]["code"], "allowed_by_grant",
        "the client was started: {events:#?}"
    );
    let report = std::fs::read_to_string(proj.join("report.txt")).unwrap();
    assert!(report.starts_with("refused: "), "{report}");
    assert!(
        results[3]["output"].as_str().unwrap().contains("refused: "),
        "{:#?}",
        results[3]
    );

    let write = results[2];
    assert_eq!(write["tool"], "write");
    assert_eq!(write["decision"]["verdict"], "deny", "{write:#?}");
    assert_ne!(write["decision"]["code"], "allowed_by_grant", "{write:#?}");
    assert!(!target.exists(), "nothing was written outside the roots");
    assert!(
        std::fs::read_dir(outside.path()).unwrap().next().is_none(),
        "nothing was created outside the roots"
    );
    // The only grant is the person's deny.
    let lifetimes: Vec<Value> = grants(&sandbox)
        .iter()
        .map(|g| g["lifetime"].clone())
        .collect();
    assert_eq!(lifetimes, [json!("deny")]);

    // The daemon said whom it refused.
    sandbox.stop_daemon();
    let log = std::fs::read_to_string(sandbox.state_dir().join("codarisd.log")).unwrap();
    assert!(
        log.contains("refused a connection from a process the daemon started"),
        "{log}"
    );
    let card = of_type(&events, "card");
    assert_eq!(card.len(), 1, "{events:#?}");
    // The ledger verifies: every decision replays, every grant is backed, the chain is whole.
    sandbox.replay_clean();
    // No line carries anything shaped like a card's secret (64 hex digits in a row).
    let longest_hex = log
        .split(|c: char| !c.is_ascii_hexdigit())
        .map(str::len)
        .max()
        .unwrap_or(0);
    assert!(longest_hex < 64, "{log}");
}

#[test]
fn the_card_event_names_the_grant_its_answer_recorded() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let body = json!({"turns": [{"rounds": [
        {"tool_calls": [{"name": "request_capability", "args": {
            "capability": "read_outside_fence", "path": "/etc/hosts", "reason": "check"}}]},
        {"text": "done"}
    ]}]});
    let events = run(&sandbox, &proj, &body, "session");
    let cards = of_type(&events, "card");
    assert_eq!(cards.len(), 1, "{events:#?}");
    let grant_id = cards[0]["grant_id"].as_str().unwrap();
    assert!(!grant_id.is_empty());
    assert!(
        cards[0].get("answer_secret").is_none(),
        "the secret is not printed"
    );
    let grants = grants(&sandbox);
    assert_eq!(grants.len(), 1, "{grants:?}");
    assert_eq!(grants[0]["id"], grant_id);
    assert_eq!(grants[0]["lifetime"], "session");
}

#[test]
fn a_recorded_deny_is_told_at_once_and_never_as_granted() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let ask = json!({"tool_calls": [{"name": "request_capability", "args": {
        "capability": "read_outside_fence", "path": "/etc/hosts", "reason": "check"}}]});
    let read = json!({"tool_calls": [{"name": "read_file", "args": {"path": "/etc/hosts"}}]});

    // Asked twice under `--approve deny`: one card, and the same refusal both times.
    let body = json!({"turns": [{"rounds": [ask, ask, {"text": "done"}]}]});
    let events = run(&sandbox, &proj, &body, "deny");
    assert_eq!(of_type(&events, "card").len(), 1, "{events:#?}");
    let outputs: Vec<&str> = of_type(&events, "tool_result")
        .iter()
        .map(|r| r["output"].as_str().unwrap().lines().next().unwrap())
        .collect();
    let refused = "the person refused `read_outside_fence` on `/etc/hosts`; do not ask again";
    assert_eq!(outputs, [refused, refused]);

    // The repro at a chat's prompt: the first card answered no, and a second one (there must
    // be none) would be answered yes; the real read stays refused by the person.
    let mut child = sandbox.spawn_chat(
        &json!({"turns": [{"rounds": [ask, ask, read, {"text": "done"}]}]}),
        Some(&proj),
    );
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"read the hosts\nd\ns\n")
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert_eq!(text.matches("? the model asks for").count(), 1, "{text}");
    assert_eq!(text.matches(refused).count(), 2, "{text}");
    assert!(!text.contains("granted `"), "{text}");
    // The refused read reads as a refusal, with the reason's code.
    assert!(
        text.contains("✗ read_file refused (denied_by_user): "),
        "{text}"
    );
}

/// Issue 48: the person refuses one call at its card (the end of input at a chat's card, like
/// Ctrl-C). The model reads the policy's decision, recorded with the refusal as its input, and
/// `codaris audit replay` decides it again the same, from an export and from the ledger.
#[test]
fn a_call_refused_at_its_card_is_recorded_from_the_policy_and_replays_the_same() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let daemon = sandbox.start_daemon(&[]);
    let write =
        json!({"tool_calls": [{"name": "write", "args": {"path": "a.txt", "content": "x"}}]});
    let mut child = sandbox.spawn_chat(
        &json!({"turns": [{"rounds": [write, {"text": "done"}]}]}),
        Some(&proj),
    );
    // The message, then no answer at the card: this call alone is refused.
    child.stdin.take().unwrap().write_all(b"write a\n").unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let shown = stdout(&output);
    assert!(
        shown.contains("✗ write refused (denied_by_user): "),
        "{shown}"
    );
    assert!(!proj.join("a.txt").exists());

    let export = sandbox.root.path().join("export.jsonl");
    let output = sandbox.cli(&["ledger", "export", "-o", export.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let decisions: Vec<Value> = std::fs::read_to_string(&export)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["type"] == "decision")
        .collect();
    let target = proj.join("a.txt").display().to_string();
    let capability = json!({"name": "write", "path": target});
    // Asked, then refused: both decided by the policy and recorded, the refusal with the
    // person's answer as its input.
    let codes: Vec<(&str, &Value)> = decisions
        .iter()
        .map(|d| {
            (
                d["decision"]["code"].as_str().unwrap(),
                &d["request"]["task"]["refused_at_card"],
            )
        })
        .collect();
    assert_eq!(
        codes,
        [
            ("needs_approval", &Value::Null),
            ("denied_by_user", &capability)
        ]
    );
    let refused = &decisions[1]["decision"];
    let sentence = format!(
        "the user refused this call (`write` on `{target}`); do not repeat it unchanged, find another way or ask them"
    );
    assert_eq!(refused["sentence"], sentence.as_str());
    assert_eq!(refused["capability"], capability);
    // The model read that decision: the same sentence is the call's result.
    assert!(shown.contains(&sentence), "{shown}");

    let output = sandbox.cli(&["audit", "replay", "--from", export.to_str().unwrap()]);
    assert!(
        output.status.success(),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    assert!(
        stdout(&output).contains("2 matched, 0 differ"),
        "{}",
        stdout(&output)
    );
    assert!(sandbox.cli(&["daemon", "stop"]).status.success());
    daemon.wait(std::time::Duration::from_secs(10));
    let output = sandbox.cli(&["audit", "replay", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(
        (
            &report["decisions"],
            &report["matched"],
            &report["differences"]
        ),
        (&json!(2), &json!(2), &json!([]))
    );
}
