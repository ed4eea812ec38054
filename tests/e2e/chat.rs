//! `codaris chat` driven through standard input: lines are messages, a card is answered at its
//! prompt, end of input ends the session.

use std::io::Write;
use std::process::Stdio;

use codaris_test_support::sandbox::{Sandbox, stderr, stdout};

#[test]
fn a_chat_answers_a_card_at_the_prompt_and_ends_at_end_of_input() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let script = sandbox.root.path().join("script.json");
    std::fs::write(
        &script,
        r#"{"turns": [{"rounds": [
            {"text": "Asking.", "tool_calls": [{"name": "request_capability",
              "args": {"capability": "mutate_outside_fence", "path": "/tmp/out", "reason": "save the report"}}]},
            {"text": "Saved."}]}]}"#,
    )
    .unwrap();
    let mut child = sandbox
        .command("codaris")
        .args(["chat", "--script", script.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"save the report\nmaybe\ns\n")
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    for needle in [
        "Asking.\n→ request_capability",
        "? the model asks for `mutate_outside_fence` on `/tmp/out`: save the report",
        "answered: session",
        "granted `mutate_outside_fence` on `/tmp/out` for this session",
        "Saved.\n",
        "── turn 1 ended: end_turn",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    assert!(sandbox.cli(&["daemon", "stop"]).status.success());
}
