//! Sessions a person can list and resume, and chat's own commands, through the real binaries:
//! `codaris sessions`, `run --session` across a daemon restart, `chat --resume`, the
//! `/commands` that never reach the model, the kept line history, and `codaris` alone.

use std::io::Write;
use std::process::{Output, Stdio};

use codaris_test_support::sandbox::{Sandbox, events, json, ok, stderr, stdout};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// Two turns the scripted model plays by their place in the conversation: the second is
/// played only when the request carries the first turn's message too (the scripted
/// provider counts the user messages it is sent), so "Second." proves the history came.
fn two_turns() -> Value {
    json!({"turns": [
        {"rounds": [{"text": "First."}]},
        {"rounds": [{"text": "Second."}]}
    ]})
}

/// `codaris chat` fed `input` on standard input, to its end.
fn chat(sandbox: &Sandbox, args: &[&str], input: &str) -> Output {
    let mut child = sandbox
        .command("codaris")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn script_file(sandbox: &Sandbox, script: &Value) -> String {
    let path = sandbox.root.path().join("chat.json");
    std::fs::write(&path, script.to_string()).unwrap();
    path.display().to_string()
}

/// Every stored session as `codaris sessions --all --json` lists it.
fn all_sessions(sandbox: &Sandbox) -> Vec<Value> {
    json(&sandbox.cli(&["sessions", "--all", "--json"]))
        .as_array()
        .unwrap()
        .clone()
}

fn texts(output: &Output) -> String {
    events(output)
        .iter()
        .filter(|e| e["type"] == "text")
        .map(|e| e["text"].as_str().unwrap().to_owned())
        .collect()
}

fn session_id(output: &Output) -> String {
    events(output)
        .iter()
        .find(|e| e["type"] == "session")
        .and_then(|e| e["id"].as_str())
        .unwrap()
        .to_owned()
}

#[test]
fn sessions_json_is_an_empty_array_then_names_each_sessions_fields() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    assert_eq!(ok(&sandbox.cli(&["sessions", "--json"])), "[]\n");
    assert_eq!(ok(&sandbox.cli(&["sessions", "--all", "--json"])), "[]\n");

    let project = sandbox.root.path().join("proj");
    std::fs::create_dir(&project).unwrap();
    let first = sandbox.run_script(
        &project,
        &two_turns(),
        &[],
        "Tidy the pipeline's config\nand more detail",
    );
    ok(&first);
    // `run` ended its session: listed by default, so a person finds it again to resume it;
    // not among the open ones. `--all` (the old way to see it) lists the same.
    assert_eq!(ok(&sandbox.cli(&["sessions", "--open", "--json"])), "[]\n");
    assert_eq!(
        ok(&sandbox.cli(&["sessions", "--open"])).trim(),
        "no open sessions (`codaris sessions` lists ended ones too)"
    );
    let listed = json(&sandbox.cli(&["sessions", "--json"]))
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(listed, all_sessions(&sandbox));
    assert_eq!(listed.len(), 1, "{listed:?}");
    let session = &listed[0];
    assert_eq!(session["id"], json!(session_id(&first)));
    assert_eq!(session["title"], "Tidy the pipeline's config");
    assert_eq!(session["cwd"], json!(project.display().to_string()));
    assert_eq!(session["state"], "ended");
    assert_eq!(session["turns"], 1);
    assert!(
        session["last_activity_ms"].as_u64().unwrap() >= session["created_at_ms"].as_u64().unwrap()
    );

    // The table for people: a header, then the session.
    let table = ok(&sandbox.cli(&["sessions"]));
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("ID "), "{table}");
    for column in ["TITLE", "TAGS", "CWD", "STATE", "TURNS", "LAST ACTIVITY"] {
        assert!(lines[0].contains(column), "{table}");
    }
    assert!(lines[1].contains("Tidy the pipeline's config"), "{table}");
    assert!(lines[1].contains("ended"), "{table}");

    // A second run: newest first, and `--limit` keeps the most recent.
    let second = sandbox.run_script(&project, &two_turns(), &[], "then the tests");
    ok(&second);
    let ids = |args: &[&str]| -> Vec<Value> {
        json(&sandbox.cli(args))
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].clone())
            .collect()
    };
    assert_eq!(
        ids(&["sessions", "--json"]),
        [json!(session_id(&second)), json!(session_id(&first))]
    );
    assert_eq!(
        ids(&["sessions", "--limit", "1", "--json"]),
        [json!(session_id(&second))]
    );
    assert_eq!(ids(&["sessions", "--limit", "0", "--json"]).len(), 2);
    sandbox.stop_daemon();
}

#[test]
fn run_session_continues_an_ended_session_after_a_restart_and_ends_it_again() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let project = sandbox.root.path().join("proj");
    std::fs::create_dir(&project).unwrap();
    let first = sandbox.run_script(&project, &two_turns(), &[], "start here");
    assert_eq!(texts(&first), "First.");
    let id = session_id(&first);
    // A new daemon: the session and its conversation come from the ledger.
    sandbox.stop_daemon();

    // From another directory: the session runs in its own.
    let again = sandbox.cli(&["run", "--json", "--session", &id, "and continue"]);
    let seen = events(&again);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(texts(&again), "Second.", "{seen:?}");
    let started: Vec<&Value> = seen
        .iter()
        .filter(|e| e["type"] == "turn_started")
        .collect();
    assert_eq!(started[0]["turn"], 1, "the turn after the stored one");
    let stored = all_sessions(&sandbox);
    assert_eq!(stored[0]["id"], json!(id));
    assert_eq!(stored[0]["state"], "ended", "left as it was found");
    assert_eq!(stored[0]["turns"], 2);
    assert_eq!(stored[0]["title"], "start here");
    assert_eq!(stored[0]["cwd"], json!(project.display().to_string()));
    sandbox.stop_daemon();
    sandbox.replay_clean();
}

#[test]
fn resuming_an_unknown_session_fails_plainly_with_exit_1() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    for args in [
        &["run", "--session", "s999999", "hello"][..],
        &["chat", "--resume", "s999999"][..],
    ] {
        let output = sandbox.cli(args);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{args:?}: {}",
            stderr(&output)
        );
        assert_eq!(
            stderr(&output),
            "codaris: no session `s999999`; `codaris sessions --all` lists them\n"
        );
    }
    // A flag that would open the session differently is refused before anything runs.
    let output = sandbox.cli(&["run", "--session", "s1", "--cwd", "/tmp", "hello"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("cannot be used with"),
        "{}",
        stderr(&output)
    );
    sandbox.stop_daemon();
}

#[test]
fn chat_commands_run_in_the_chat_and_never_reach_the_model() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    // One turn only: had any command reached the model as a message, `hello` would be the
    // second turn and the script would be exhausted.
    let script = json!({"turns": [{"rounds": [{"text": "Only turn."}]}]});
    let path = script_file(&sandbox, &script);
    let output = chat(
        &sandbox,
        &["chat", "--script", &path],
        "/help\n/status\n/mode plan\n/mode permission accept_edits\n/mode\n/mode sideways\n/frobnicate now\n/model\nhello\n/sessions\n/exit\nnever read\n",
    );
    let text = stdout(&output);
    assert!(output.status.success(), "{}{text}", stderr(&output));
    for needle in [
        "chat's own commands (never sent to the model):",
        "/mode [MODE]",
        "session   s",
        "provider  scripted",
        "mode      agent (operating) · ask (permission)",
        "operating mode: plan from the next turn",
        "permission mode: accept_edits from the next turn",
        "operating mode: plan · permission mode: accept_edits",
        "unknown mode `sideways`",
        "unknown command /frobnicate; /help lists them\n",
        "model: (the provider's own) (provider scripted)",
        "Only turn.",
        "── turn 1 ended: end_turn",
        "LAST ACTIVITY",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    let stored = all_sessions(&sandbox);
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0]["turns"], 1, "one message reached the model");
    assert_eq!(stored[0]["title"], "hello", "the first message names it");
    assert_eq!(stored[0]["activity"], "plan");
    assert_eq!(stored[0]["permission_mode"], "accept_edits");
    assert_eq!(
        stored[0]["state"], "ended",
        "/exit ended the chat's session"
    );

    // Every line typed is kept, privately, under the state directory; the line after
    // `/exit` was never read.
    let history = sandbox.state_dir().join("chat_history");
    assert_eq!(Sandbox::mode(&history) & 0o777, 0o600);
    let kept = std::fs::read_to_string(&history).unwrap();
    for line in ["/status", "/mode plan", "hello", "/exit"] {
        assert!(
            kept.lines().any(|l| l == line),
            "{line:?} not kept:\n{kept}"
        );
    }
    assert!(!kept.contains("never read"), "{kept}");
    sandbox.stop_daemon();
}

#[test]
fn chat_resume_continues_the_conversation_and_clear_starts_afresh_in_the_same_cwd() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let project = sandbox.root.path().join("proj");
    std::fs::create_dir(&project).unwrap();
    let first = sandbox.run_script(&project, &two_turns(), &[], "start here");
    let id = session_id(&first);

    let output = chat(
        &sandbox,
        &["chat", "--resume", &id],
        "go on\n/clear\n/status\n",
    );
    let text = stdout(&output);
    assert!(output.status.success(), "{}{text}", stderr(&output));
    assert!(
        text.contains(&format!(
            "resumed session {id} (1 turn, reopened): start here"
        )),
        "{text}"
    );
    // The latest messages, then the next turn, which the model played knowing the first.
    assert!(
        text.contains("  you> start here\n  model> First.\n"),
        "no recap in\n{text}"
    );
    assert!(
        text.contains("Second.\n"),
        "the history came along:\n{text}"
    );
    let fresh = text
        .lines()
        .find_map(|l| l.strip_prefix("new session "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no new session in\n{text}"))
        .to_owned();
    assert_ne!(fresh, id);
    assert!(
        text.contains(&format!(
            "{id} ended (`codaris chat --resume {id}` continues it)"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("session   {fresh} (active, 0 turns)")),
        "{text}"
    );
    assert!(
        text.contains(&format!("cwd       {}", project.display())),
        "{text}"
    );
    let stored = all_sessions(&sandbox);
    let state_of = |id: &str| {
        stored
            .iter()
            .find(|s| s["id"] == json!(id))
            .map(|s| s["state"].clone())
    };
    assert_eq!(state_of(&id), Some(json!("ended")));
    assert_eq!(
        state_of(&fresh),
        Some(json!("ended")),
        "ended at end of input"
    );
    sandbox.stop_daemon();
}

#[test]
fn codaris_alone_chats_in_the_current_directory_and_help_still_works() {
    let sandbox = Sandbox::new();
    // A real provider configured (nothing is sent to it: no message is typed).
    sandbox.write_config(
        "[provider]\nname = \"openai\"\nmodel = \"m\"\n[openai]\napi_key = \"sk-unused\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
    );
    let output = chat(&sandbox, &[], "/status\n");
    let text = stdout(&output);
    assert!(output.status.success(), "{}{text}", stderr(&output));
    assert!(text.contains("codaris chat — session "), "{text}");
    assert!(
        text.contains(&format!("cwd       {}", sandbox.root.path().display())),
        "{text}"
    );
    let help = sandbox.cli(&["--help"]);
    assert!(help.status.success());
    assert!(
        stdout(&help).contains("Usage: codaris [OPTIONS] [COMMAND]"),
        "{}",
        stdout(&help)
    );
    // `--json` has no meaning for an interactive chat: refused, not ignored.
    let refused = sandbox.cli(&["--json"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("--json"), "{}", stderr(&refused));
    sandbox.stop_daemon();
}
