//! `codaris run` through the real daemon: the scripted provider, search binding nothing but a
//! skill, a refusal, a card answered, the grant durable, and the session replayed clean.

use codaris_test_support::sandbox::{Sandbox, events, stderr, stdout};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const SCRIPT: &str = r#"{"turns": [
 {"rounds": [
   {"text": "Let me find help.", "tool_calls": [{"name": "search_tools", "args": {"query": "debug a failed nextflow run"}}]},
   {"tool_calls": [{"name": "read_file", "args": {"path": "/etc/hosts"}}]},
   {"tool_calls": [{"name": "request_capability", "args": {"capability": "read_outside_fence", "path": "/etc/hosts", "reason": "to check the host names"}}]},
   {"text": "Done.", "usage": {"input_tokens": 100, "cache_read_tokens": 900, "cache_write_tokens": 0, "output_tokens": 20}}
 ]},
 {"rounds": [{"tool_calls": [{"name": "search_tools", "args": {"query": "x"}}]}]}
]}"#;

fn setup() -> (Sandbox, std::path::PathBuf) {
    let sandbox = Sandbox::new();
    let skill = sandbox.root.path().join("skills/debug");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: debugging-failed-runs\ndescription: How to debug a failed Nextflow run\n---\n",
    )
    .unwrap();
    sandbox.write_config(&format!(
        "skills_dirs = [\"{}\"]\n",
        sandbox.root.path().join("skills").display()
    ));
    let script = sandbox.root.path().join("script.json");
    std::fs::write(&script, SCRIPT).unwrap();
    std::fs::create_dir_all(sandbox.root.path().join("proj")).unwrap();
    (sandbox, script)
}

#[test]
fn a_scripted_session_streams_its_events_and_replays_clean() {
    let (sandbox, script) = setup();
    let proj = sandbox.root.path().join("proj");
    let output = sandbox.cli(&[
        "run",
        "--json",
        "--script",
        script.to_str().unwrap(),
        "--cwd",
        proj.to_str().unwrap(),
        "--approve",
        "session",
        "help me debug",
        "and again",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "session",
            "turn_started",
            "binding",
            "text",
            "tool_call",
            "tool_result",
            "binding",
            "tool_call",
            "tool_result",
            "binding",
            "tool_call",
            "card",
            "tool_result",
            "binding",
            "text",
            "usage",
            "turn_ended",
            "turn_started",
            "binding",
            "tool_call",
            "tool_result",
            "binding",
            "usage",
            "turn_ended",
        ]
    );
    let binding = &events[2];
    assert_eq!(
        binding["tools"],
        json!([
            "search_tools",
            "request_capability",
            "read_file",
            "glob",
            "grep",
            "edit",
            "write",
            "run_command",
            "planner"
        ])
    );
    assert_eq!(binding["always_on"], 9);
    assert_eq!(binding["found"], 0);
    assert!(
        binding["line"]
            .as_str()
            .unwrap()
            .starts_with("Lean tools active: bound 9 tools to model (9 always-on, 0 forced, 0 found by search; filtered from ")
    );
    let search = &events[5];
    assert_eq!(search["decision"]["verdict"], "allow");
    assert!(
        search["output"]
            .as_str()
            .unwrap()
            .contains("debugging-failed-runs [skill]"),
        "{search}"
    );
    let refused = &events[8];
    assert_eq!(refused["tool"], "read_file");
    assert_eq!(refused["decision"]["code"], "read_outside_fence");
    let card = &events[11];
    assert_eq!(
        card["capability"],
        json!({"name": "read_outside_fence", "path": "/etc/hosts"})
    );
    assert_eq!(card["answer"], "session");
    assert!(
        events[12]["output"]
            .as_str()
            .unwrap()
            .starts_with("granted `read_outside_fence` on `/etc/hosts` for this session")
    );
    assert_eq!(
        events[15]["line"],
        "Usage: input 100 tokens, output 20 tokens, cache read 900 (90%), cache written 0. Context: 1000 of 200000 tokens (1%)."
    );
    assert_eq!(
        events[16],
        json!({"type": "turn_ended", "turn": 0, "reason": "end_turn", "error": null})
    );
    assert_eq!(events[23]["reason"], "script_exhausted");

    // The grant was recorded durably, with the card that gave it.
    let grants = sandbox.cli(&["ledger", "grants", "--json"]);
    let grant: Value = serde_json::from_str(stdout(&grants).lines().next().unwrap()).unwrap();
    assert_eq!(grant["capability"], "read_outside_fence");
    assert_eq!(grant["lifetime"], "session");

    // Every decision replays with the same answer once the daemon has stopped.
    sandbox.stop_daemon();
    let output = sandbox.replay_clean();
    assert!(
        stdout(&output).contains("4 matched, 0 differ"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn a_denied_card_is_recorded_as_a_refusal() {
    let (sandbox, script) = setup();
    let output = sandbox.cli(&["run", "--script", script.to_str().unwrap(), "help me debug"]);
    assert!(output.status.success(), "{}", stderr(&output));
    // The card and the refusal are lines for people: standard error.
    let text = stderr(&output);
    assert!(text.contains("? the model asks for `read_outside_fence` on `/etc/hosts`: to check the host names → deny"), "{text}");
    assert!(
        text.contains("the person refused `read_outside_fence` on `/etc/hosts`; do not ask again"),
        "{text}"
    );
    let grants = sandbox.cli(&["ledger", "grants", "--json"]);
    let grant: Value = serde_json::from_str(stdout(&grants).lines().next().unwrap()).unwrap();
    assert_eq!(grant["lifetime"], "deny");
    assert!(sandbox.cli(&["daemon", "stop"]).status.success());
}

#[test]
fn the_scripted_provider_without_a_script_is_a_clear_error() {
    let (sandbox, _) = setup();
    let output = sandbox.cli(&["run", "--provider", "scripted", "hello"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("give `--script FILE`"),
        "{}",
        stderr(&output)
    );
    assert!(sandbox.cli(&["daemon", "stop"]).status.success());
}

#[test]
fn approving_programs_lets_the_same_programs_run_anywhere_without_another_card() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(proj.join("sub")).unwrap();
    let call = |command: &str, cwd: &str| json!({"tool_calls": [{"name": "run_command", "args": {"command": command, "cwd": cwd}}]});
    let body = json!({"turns": [{"rounds": [
        call("echo first | tr a-z A-Z", "."),
        call("echo second", "sub"),
        {"text": "done"}
    ]}]});
    let output = sandbox.run_script(&proj, &body, &["--approve", "programs"], "run them");
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let cards: Vec<&Value> = events.iter().filter(|e| e["type"] == "card").collect();
    assert_eq!(cards.len(), 1, "{events:?}");
    assert_eq!(cards[0]["programs"], json!(["echo", "tr"]));
    assert_eq!(cards[0]["answer"], "programs");
    let outputs: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .map(|e| e["output"].as_str().unwrap())
        .collect();
    assert!(outputs[0].contains("FIRST"), "{outputs:?}");
    assert!(outputs[1].contains("second"), "{outputs:?}");

    let grants = sandbox.cli(&["ledger", "grants", "--json"]);
    assert!(grants.status.success(), "{}", stderr(&grants));
    let text = stdout(&grants);
    assert!(text.contains("run_program"), "{text}");

    // Each program's grant stands on the card that offered it: the ledger verifies.
    sandbox.stop_daemon();
    sandbox.replay_clean();
}

#[test]
fn a_shared_file_is_listed_and_downloaded_and_never_overwrites() {
    let sandbox = Sandbox::new();
    sandbox.write_config("[tools]\nlean_surface = false\n");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(proj.join("report.txt"), "the results\n").unwrap();
    let body = json!({"turns": [{"rounds": [
        {"tool_calls": [{"name": "share_file", "args": {"path": "report.txt"}}]},
        {"text": "done"}
    ]}]});
    let output = sandbox.run_script(&proj, &body, &["--approve", "once"], "share it");
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let session = events[0]["id"].as_str().unwrap().to_owned();

    let listed = sandbox.cli(&["shared", "list", &session, "--json"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    let file: Value = serde_json::from_str(stdout(&listed).lines().next().unwrap()).unwrap();
    assert_eq!(file["name"], "report.txt");
    assert_eq!(file["size"], 12);

    let target = sandbox.root.path().join("downloaded.txt");
    let get = |what: &str| {
        sandbox.cli(&[
            "shared",
            "get",
            &session,
            what,
            "-o",
            target.to_str().unwrap(),
        ])
    };
    let got = get("report.txt");
    assert!(got.status.success(), "{}", stderr(&got));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "the results\n");

    let again = get(&file["sha256"].as_str().unwrap()[..12]);
    assert!(!again.status.success());
    let err = stderr(&again);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("downloaded.txt"), "{err}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "the results\n");

    let missing = sandbox.cli(&["shared", "get", &session, "nothing-like-it"]);
    assert!(!missing.status.success());
    assert!(
        stderr(&missing).contains("no shared file"),
        "{}",
        stderr(&missing)
    );
}
