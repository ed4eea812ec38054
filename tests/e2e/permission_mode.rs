//! `--permission-mode accept_edits`, the spelling of the policy, the configuration and the
//! `run` contract, and `accept-edits`, the older CLI spelling, both run a session that writes
//! inside its project without a card.

use codaris_test_support::sandbox::{Sandbox, events, stderr, stdout};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// One turn writing `file` in the project, then a closing text.
fn write_script(file: &str) -> Value {
    json!({"turns": [{"rounds": [
        {"tool_calls": [{"name": "write", "args": {"path": file, "content": "written\n"}}]},
        {"text": "done"}
    ]}]})
}

/// The write's decision code and whether any card was raised.
fn write_outcome(events: &[Value]) -> (String, usize) {
    let code = events
        .iter()
        .find(|e| e["type"] == "tool_result")
        .map(|e| e["decision"]["code"].as_str().unwrap_or("").to_owned())
        .unwrap_or_default();
    let cards = events.iter().filter(|e| e["type"] == "card").count();
    (code, cards)
}

#[test]
fn accept_edits_and_its_alias_write_without_a_card_and_ask_still_asks() {
    let sandbox = Sandbox::new();
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let _daemon = sandbox.start_daemon(&[]);
    for (mode, file) in [("accept_edits", "snake.txt"), ("accept-edits", "kebab.txt")] {
        let output = sandbox.run_script(
            &proj,
            &write_script(file),
            &["--permission-mode", mode, "--approve", "deny"],
            "write it",
        );
        assert!(
            output.status.success(),
            "{mode}: {}{}",
            stdout(&output),
            stderr(&output)
        );
        let events = events(&output);
        assert_eq!(
            write_outcome(&events),
            ("allowed_by_mode".to_owned(), 0),
            "{mode}: {events:?}"
        );
        assert_eq!(
            std::fs::read_to_string(proj.join(file)).unwrap(),
            "written\n",
            "{mode}"
        );
    }
    // The control: under `ask` the same write raises a card, which `--approve deny` refuses.
    let output = sandbox.run_script(
        &proj,
        &write_script("asked.txt"),
        &["--permission-mode", "ask", "--approve", "deny"],
        "write it",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        write_outcome(&events(&output)),
        ("denied_by_user".to_owned(), 1)
    );
    assert!(!proj.join("asked.txt").exists());
}

#[test]
fn help_names_accept_edits_as_the_policy_spells_it() {
    let sandbox = Sandbox::new();
    let output = sandbox.cli(&["run", "--help"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let help = stdout(&output);
    assert!(help.contains("accept_edits"), "{help}");
    assert!(!help.contains("accept-edits"), "{help}");
    let output = sandbox.cli(&["run", "--permission-mode", "accept_edit", "x"]);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("accept_edits"),
        "{}",
        stderr(&output)
    );
}
