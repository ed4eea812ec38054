//! Issue 44, items 3 and 4, through the real binaries: `codaris audit replay --config` decides
//! the recorded calls again under a candidate configuration's operator inputs and lists what
//! would change, and `[policy] shadow` decides every live call a second time, recording the
//! differences beside the live decisions that stand (`codaris audit shadow` lists them).

use std::path::{Path, PathBuf};
use std::process::Output;

use codaris_test_support::sandbox::{Sandbox, events, json, stderr, stdout};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// A project with one file, and a directory outside it with another.
fn places(sandbox: &Sandbox) -> (PathBuf, PathBuf) {
    let root = sandbox.root.path().canonicalize().unwrap();
    let proj = root.join("proj");
    let outside = root.join("outside");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(proj.join("a.txt"), "a").unwrap();
    std::fs::write(outside.join("b.txt"), "b").unwrap();
    (proj, outside)
}

/// One scripted turn of `calls` in `cwd`, every card refused, through `codaris run --json`.
fn run_calls(sandbox: &Sandbox, cwd: &Path, calls: &[(&str, Value)]) -> Vec<Value> {
    let output = sandbox.run_script(
        cwd,
        &codaris_test_support::sandbox::calls_script(calls),
        &["--approve", "deny"],
        "go",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    events(&output)
}

fn results(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .collect()
}

fn write(sandbox: &Sandbox, name: &str, text: &str) -> PathBuf {
    let path = sandbox.root.path().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn replay_under(sandbox: &Sandbox, candidate: &Path, from: Option<&Path>) -> Output {
    let mut args = vec!["audit", "replay", "--config", candidate.to_str().unwrap()];
    if let Some(from) = from {
        args.extend(["--from", from.to_str().unwrap()]);
    }
    args.push("--json");
    sandbox.cli(&args)
}

/// The sequence numbers of a `--json` answer's changes.
fn changed_seqs(answer: &Value) -> Vec<u64> {
    answer["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["seq"].as_u64().unwrap())
        .collect()
}

/// The decisions of an export whose `run_command` line starts with `prefix`, by `seq`.
fn seqs_of_commands(export: &str, prefix: &str) -> Vec<u64> {
    export
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|line| line["type"] == "decision" && line["request"]["tool"] == "run_command")
        .filter(|line| {
            line["request"]["args"]["command"]
                .as_str()
                .is_some_and(|c| c.starts_with(prefix))
        })
        .map(|line| line["seq"].as_u64().unwrap())
        .collect()
}

const ALLOWLIST: &str = "[tools]\ncommand_allowlist = [\"echo hello\", \"true\"]\n";

#[test]
fn a_narrowed_allowlist_changes_exactly_the_calls_it_no_longer_covers() {
    let sandbox = Sandbox::new();
    let (proj, _) = places(&sandbox);
    sandbox.write_config(ALLOWLIST);
    let _daemon = sandbox.start_daemon(&[]);
    let events = run_calls(
        &sandbox,
        &proj,
        &[
            ("run_command", json!({"command": "echo hello"})),
            ("run_command", json!({"command": "true"})),
            ("read_file", json!({"path": "a.txt"})),
            ("run_command", json!({"command": "echo hello"})),
        ],
    );
    let codes: Vec<&str> = results(&events)
        .iter()
        .map(|r| r["decision"]["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes.len(), 4, "{events:#?}");
    let export = sandbox.root.path().join("export.jsonl");
    let exported = sandbox.cli(&["ledger", "export", "-o", export.to_str().unwrap()]);
    assert!(exported.status.success(), "{}", stderr(&exported));
    sandbox.stop_daemon();
    let exported = std::fs::read_to_string(&export).unwrap();
    let echoes = seqs_of_commands(&exported, "echo hello");
    assert_eq!(echoes.len(), 2, "{exported}");

    let narrowed = write(
        &sandbox,
        "narrowed.toml",
        "[tools]\ncommand_allowlist = [\"true\"]\n",
    );
    // From the state directory, and from the export: exactly the two `echo` calls.
    for from in [None, Some(export.as_path())] {
        let output = replay_under(&sandbox, &narrowed, from);
        assert!(output.status.success(), "{}", stderr(&output));
        let answer = json(&output);
        assert_eq!(changed_seqs(&answer), echoes, "{answer:#}");
        assert_eq!(answer["decisions"], 4);
        assert_eq!(answer["groups"].as_array().unwrap().len(), 1, "{answer:#}");
        let group = &answer["groups"][0];
        assert_eq!(
            (&group["recorded"], &group["candidate"], &group["tool"]),
            (&json!("allow"), &json!("ask"), &json!("run_command"))
        );
        assert_eq!(
            group["subject"],
            json!({"kind": "program", "value": "echo"})
        );
    }
    let text = sandbox.cli(&["audit", "replay", "--config", narrowed.to_str().unwrap()]);
    let text = stdout(&text);
    assert!(
        text.contains("allow → ask: 2 run_command calls of echo\n2 of 4 decisions would change"),
        "{text}"
    );

    // The same configuration as the recorded one: nothing changes, and it says so.
    let same = write(&sandbox, "same.toml", ALLOWLIST);
    let output = sandbox.cli(&["audit", "replay", "--config", same.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).ends_with("none of the 4 decisions would change\n"),
        "{}",
        stdout(&output)
    );
    assert_eq!(json(&replay_under(&sandbox, &same, None))["changed"], 0);
}

#[test]
fn a_widened_root_turns_a_refusal_into_an_allow() {
    let sandbox = Sandbox::new();
    let (proj, outside) = places(&sandbox);
    let _daemon = sandbox.start_daemon(&[]);
    let outside_file = outside.join("b.txt").display().to_string();
    let events = run_calls(
        &sandbox,
        &proj,
        &[
            ("read_file", json!({"path": outside_file})),
            ("read_file", json!({"path": "a.txt"})),
        ],
    );
    assert_eq!(results(&events)[0]["decision"]["verdict"], "deny");
    sandbox.stop_daemon();
    let widened = write(
        &sandbox,
        "widened.toml",
        &format!("allowed_dirs = [\"{}\"]\n", outside.display()),
    );
    let answer = json(&replay_under(&sandbox, &widened, None));
    assert_eq!(answer["changed"], 1, "{answer:#}");
    let change = &answer["changes"][0];
    assert_eq!(
        (&change["recorded"], &change["candidate"], &change["tool"]),
        (&json!("deny"), &json!("allow"), &json!("read_file"))
    );
    assert_eq!(
        change["subject"],
        json!({"kind": "root", "value": outside.display().to_string()})
    );
}

#[test]
fn an_invalid_candidate_is_refused_line_by_line_and_nothing_is_replayed() {
    let sandbox = Sandbox::new();
    let (proj, _) = places(&sandbox);
    let _daemon = sandbox.start_daemon(&[]);
    run_calls(&sandbox, &proj, &[("read_file", json!({"path": "a.txt"}))]);
    sandbox.stop_daemon();
    let bad = write(
        &sandbox,
        "bad.toml",
        "allowed_dirs = [\"relative/dir\"]\n[tools]\ncommand_allowlist = \"echo\"\n",
    );
    let output = sandbox.cli(&["audit", "replay", "--config", bad.to_str().unwrap()]);
    assert!(!output.status.success());
    assert_eq!(stdout(&output), "", "nothing replayed");
    let said = stderr(&output);
    let lines: Vec<&str> = said.lines().collect();
    assert!(
        lines.iter().any(|l| l.contains("bad.toml:1:"))
            && lines.iter().any(|l| l.contains("bad.toml:3:")),
        "{said}"
    );
    assert!(said.contains("nothing replayed"), "{said}");
    let answer = json(&replay_under(&sandbox, &bad, None));
    assert_eq!(answer["ok"], false);
    assert_eq!(
        answer["problems"].as_array().unwrap().len(),
        2,
        "{answer:#}"
    );
    assert!(answer.get("changes").is_none());
}

#[test]
fn the_shadow_records_its_differences_while_the_live_decisions_stand() {
    let sandbox = Sandbox::new();
    let (proj, outside) = places(&sandbox);
    // Stricter on commands, wider on roots: both ways a verdict can differ.
    let strict = write(
        &sandbox,
        "strict.toml",
        &format!("allowed_dirs = [\"{}\"]\n", outside.display()),
    );
    sandbox.write_config(&format!(
        "{ALLOWLIST}[policy]\nshadow = \"{}\"\n",
        strict.display()
    ));
    let _daemon = sandbox.start_daemon(&[]);
    let shown = json(&sandbox.cli(&["config", "show", "--json"]));
    let entry = shown["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["key"] == "policy.shadow")
        .cloned();
    assert_eq!(
        entry.map(|e| (e["value"].clone(), e["source"].clone())),
        Some((json!(strict.display().to_string()), json!("file")))
    );
    let outside_file = outside.join("b.txt").display().to_string();
    let events = run_calls(
        &sandbox,
        &proj,
        &[
            ("run_command", json!({"command": "echo hello"})),
            ("read_file", json!({"path": outside_file})),
            ("read_file", json!({"path": "a.txt"})),
        ],
    );
    let results = results(&events);
    // Live policy: the command ran, the read outside the project was refused.
    assert_eq!(results[0]["decision"]["verdict"], "allow");
    assert!(
        results[0]["output"]
            .as_str()
            .unwrap_or("")
            .contains("hello"),
        "{:#?}",
        results[0]
    );
    assert_eq!(results[1]["decision"]["verdict"], "deny");
    sandbox.stop_daemon();

    let output = sandbox.cli(&["audit", "shadow", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let answer = json(&output);
    assert_eq!(
        (&answer["decisions"], &answer["changed"]),
        (&json!(3), &json!(2))
    );
    assert_eq!(answer["configs"], json!([strict.display().to_string()]));
    let lines: Vec<String> = answer["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| format!("{} {} {}", g["recorded"], g["candidate"], g["tool"]))
        .collect();
    assert_eq!(
        lines,
        vec![
            "\"allow\" \"ask\" \"run_command\"",
            "\"deny\" \"allow\" \"read_file\""
        ]
    );
    let text = stdout(&sandbox.cli(&["audit", "shadow"]));
    assert!(
        text.contains("allow → ask: 1 run_command call of echo")
            && text.ends_with("2 of 3 decisions would change\n"),
        "{text}"
    );
    // The recorded decisions are the live ones, and the ledger with the shadow's beside
    // them still replays and verifies.
    sandbox.replay_clean();
}

#[test]
fn a_shadow_the_daemon_cannot_use_is_refused_at_start() {
    for (shadow, said) in [
        ("/nonexistent/strict.toml".to_owned(), "cannot read"),
        ("strict.toml".to_owned(), "not an absolute path"),
        ("BAD".to_owned(), "bad.toml:1:"),
    ] {
        let sandbox = Sandbox::new();
        let shadow = if shadow == "BAD" {
            write(&sandbox, "bad.toml", "allowed_dirs = \"x\"\n")
                .display()
                .to_string()
        } else {
            shadow
        };
        sandbox.write_config(&format!("[policy]\nshadow = \"{shadow}\"\n"));
        // A daemon that took the shadow would serve on: it gets 20 s to refuse, then is stopped.
        let mut daemon = sandbox
            .command("codarisd")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let began = std::time::Instant::now();
        while daemon.try_wait().unwrap().is_none() && began.elapsed().as_secs() < 20 {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let started = daemon.try_wait().unwrap().is_none();
        if started {
            daemon.kill().unwrap();
        }
        let output = daemon.wait_with_output().unwrap();
        assert!(
            !started && !output.status.success(),
            "{shadow}: codarisd started"
        );
        let text = stderr(&output);
        let last = text.lines().last().unwrap_or("");
        assert!(
            last.contains("policy.shadow") && last.contains(said),
            "{shadow}: {text}"
        );
        // `codaris config check` says so before a start is tried.
        let checked = sandbox.cli(&["config", "check"]);
        assert!(!checked.status.success(), "{shadow}: {}", stdout(&checked));
        assert!(
            stderr(&checked).contains("policy.shadow"),
            "{}",
            stderr(&checked)
        );
    }
}
