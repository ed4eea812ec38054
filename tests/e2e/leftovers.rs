//! No daemon outlives its state directory: a test's sandbox stops whatever the test started
//! through it, even a daemon that would not stop in order.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin};

use codaris_test_support::sandbox::{Sandbox, alive};
use serde_json::{Value, json};

/// A chat whose first turn asks for a card, and leaves it open.
fn ask() -> Value {
    json!({"turns": [{"rounds": [
        {"tool_calls": [{"name": "request_capability", "args": {
            "capability": "mutate_outside_fence", "path": "/tmp/out", "reason": "save"}}]},
        {"text": "done"}
    ]}]})
}

/// Starts `codaris chat`, sends one message and returns once the card's prompt is on screen,
/// with the chat's input (while it is open, the card waits for its answer).
fn chat_at_a_card(sandbox: &Sandbox) -> (Child, ChildStdin) {
    let mut chat = sandbox.spawn_chat(&ask(), None);
    let mut input = chat.stdin.take().unwrap();
    input.write_all(b"save it\n").unwrap();
    let mut screen = BufReader::new(chat.stdout.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("the model asks for") {
        let mut line = String::new();
        assert!(screen.read_line(&mut line).unwrap() > 0, "no card: {seen}");
        seen.push_str(&line);
    }
    (chat, input)
}

fn pid_in(sandbox: &Sandbox) -> u32 {
    std::fs::read_to_string(sandbox.pid_file())
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn a_dropped_sandbox_leaves_no_process_behind_even_a_daemon_busy_with_a_card() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    // The chat starts the daemon itself (autostart): no handle of the test holds it.
    let (mut chat, _input) = chat_at_a_card(&sandbox);
    let daemon = pid_in(&sandbox);
    let client = chat.id();
    assert!(alive(daemon) && alive(client));
    drop(sandbox);
    assert!(!alive(daemon), "the daemon {daemon} outlived its sandbox");
    let _ = chat.wait();
    assert!(!alive(client));
}
