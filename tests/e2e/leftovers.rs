//! No daemon outlives its state directory: a daemon whose directory is removed or replaced
//! stops by itself (nobody could reach its socket to stop it), and a test's sandbox stops
//! whatever the test started through it, even a daemon that would not stop in order.

use std::process::{Child, ChildStdin};
use std::time::Duration;

use codaris_test_support::sandbox::{Sandbox, alive, pid_in};
use serde_json::{Value, json};

/// How long a daemon may take to notice its directory is gone and stop: it looks every two
/// seconds, and a machine running the whole suite is slow.
const NOTICE: Duration = Duration::from_secs(60);

/// A chat whose first turn asks for a card, and leaves it open.
fn ask() -> Value {
    json!({"turns": [{"rounds": [
        {"tool_calls": [{"name": "request_capability", "args": {
            "capability": "mutate_outside_fence", "path": "/tmp/out", "reason": "save"}}]},
        {"text": "done"}
    ]}]})
}

/// `codaris chat` at the card of one message (while it is open, the card waits).
fn chat_at_a_card(sandbox: &Sandbox) -> (Child, ChildStdin) {
    let (chat, input, _screen) = sandbox.chat_at_a_card(&ask(), None, "save it");
    (chat, input)
}

#[test]
fn a_daemon_whose_state_directory_is_removed_stops() {
    let sandbox = Sandbox::new();
    let daemon = sandbox.start_daemon(&[]);
    std::fs::remove_dir_all(sandbox.state_dir()).unwrap();
    let status = daemon.wait(NOTICE);
    assert!(status.success(), "an orderly stop exits 0, got {status}");
}

#[test]
fn a_daemon_whose_state_directory_is_replaced_stops() {
    let sandbox = Sandbox::new();
    let daemon = sandbox.start_daemon(&[]);
    std::fs::rename(sandbox.state_dir(), sandbox.root.path().join("moved")).unwrap();
    std::fs::create_dir(sandbox.state_dir()).unwrap();
    let status = daemon.wait(NOTICE);
    assert!(status.success(), "an orderly stop exits 0, got {status}");
    assert!(
        sandbox.root.path().join("moved/ledger").is_dir(),
        "the ledger is left where it went"
    );
}

#[test]
fn a_daemon_whose_pid_file_is_removed_stops() {
    let sandbox = Sandbox::new();
    let daemon = sandbox.start_daemon(&[]);
    // Without the pid file (and its lock) a second daemon could claim the same directory.
    std::fs::remove_file(sandbox.pid_file()).unwrap();
    let status = daemon.wait(NOTICE);
    assert!(status.success(), "an orderly stop exits 0, got {status}");
}

#[test]
fn a_daemon_waiting_for_a_card_still_stops_when_its_state_directory_is_removed() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let daemon = sandbox.start_daemon(&[]);
    let (mut chat, _input) = chat_at_a_card(&sandbox);
    // An orderly stop waits for the turn, which waits for the card: the daemon exits anyway,
    // by itself (not killed by a signal).
    std::fs::remove_dir_all(sandbox.state_dir()).unwrap();
    let status = daemon.wait(NOTICE);
    assert!(status.code().is_some(), "{status}");
    let _ = chat.kill();
    let _ = chat.wait();
}

#[test]
fn a_dropped_sandbox_leaves_no_process_behind_even_a_daemon_busy_with_a_card() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    // The chat starts the daemon itself (autostart): no handle of the test holds it.
    let (mut chat, _input) = chat_at_a_card(&sandbox);
    let daemon = pid_in(&sandbox.pid_file());
    let client = chat.id();
    assert!(alive(daemon) && alive(client));
    drop(sandbox);
    assert!(!alive(daemon), "the daemon {daemon} outlived its sandbox");
    let _ = chat.wait();
    assert!(!alive(client));
}
