//! A disk that fills up under a running daemon (issue 11, item 8, and issue 38, item 7, through
//! the real binaries): the state directory is a small tmpfs, filled while a session asks for a
//! grant. Calls fail with the ledger's error; the daemon, whose store keeps that error for the
//! life of its handle, stops by itself (a log line, `STOPPING=1`, exit status 74, which the
//! systemd unit restarts for) instead of answering every call with an error until someone
//! restarts it. Whatever it acknowledged is in the ledger afterwards, nothing else is, and once
//! space is back the next daemon serves a session and the ledger replays and verifies.
//!
//! Mounting a tmpfs needs root: without it the test fails under CI (`CI=true`) and is skipped,
//! saying why, elsewhere.

use std::io::{Read, Write};
use std::os::unix::net::UnixDatagram;
use std::time::Duration;

use codaris_test_support::sandbox::{Sandbox, events, stderr, stdout};
use codaris_test_support::tmpfs::{Tmpfs, fill};
use serde_json::{Value, json};

/// A script asking for a grant on `path`. The reason is long so that the card's records need
/// more than the room a full tmpfs leaves the journal: the zeros it writes ahead of its last
/// line ([`codaris_ledger::JOURNAL_AHEAD`]) and its last page (4 KiB). Shorter records
/// fit there and are made durable, full disk or not.
fn ask(path: &str) -> Value {
    let past_the_room = codaris_ledger::JOURNAL_AHEAD / "the file system ".len() + 1024;
    let reason = format!("check {}", "the file system ".repeat(past_the_room));
    json!({"turns": [{"rounds": [
        {"tool_calls": [{"name": "request_capability", "args": {
            "capability": "read_outside_fence", "path": path, "reason": reason}}]},
        {"text": "done"}
    ]}]})
}

#[test]
fn a_disk_filled_mid_session_loses_nothing_acknowledged_and_the_ledger_verifies() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let Some(tmpfs) = Tmpfs::mount_or_skip(&sandbox.state_dir(), "48m", "the full-disk test")
    else {
        return;
    };
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let notify = sandbox.root.path().join("notify.sock");
    let listener = UnixDatagram::bind(&notify).unwrap();
    listener
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let first_daemon = sandbox.start_daemon_in(
        sandbox.root.path(),
        &[("NOTIFY_SOCKET", notify.to_str().unwrap())],
        &[],
    );

    // With room: the grant is recorded and acknowledged.
    let first = sandbox.run_script(&proj, &ask("/etc/hosts"), &["--approve", "session"], "a");
    assert!(first.status.success(), "{}", stderr(&first));
    let acknowledged: Vec<String> = events(&first)
        .iter()
        .filter(|e| e["type"] == "card")
        .filter_map(|e| e["grant_id"].as_str().map(str::to_owned))
        .filter(|id| !id.is_empty())
        .collect();
    assert_eq!(acknowledged.len(), 1, "{}", stdout(&first));

    // A card is open when the disk fills: the answer cannot be made durable, so it must not be
    // acknowledged, and the model must not be told it was granted.
    let (mut chat, mut input, mut screen) =
        sandbox.chat_at_a_card(&ask("/etc/shadow"), Some(&proj), "read the shadow file");
    let filler = sandbox.state_dir().join("filler");
    fill(&filler);
    input.write_all(b"s\n").unwrap();
    drop(input);
    let mut rest = String::new();
    screen.read_to_string(&mut rest).unwrap();
    let _ = chat.wait();
    assert!(!rest.contains("granted `"), "{rest}");

    // The disk is still full; the next session asks again (of this daemon: none is started
    // for it). It may fail anywhere (the session's workspace, a decision, the grant): what
    // matters is what it claims, and that a failure says why.
    let mut args = vec!["--no-autostart".to_owned()];
    args.extend(sandbox.run_args(&proj, &ask("/etc/passwd"), &["--approve", "session"], "b"));
    let second = sandbox.command("codaris").args(&args).output().unwrap();
    let claimed: Vec<String> = stdout(&second)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "card")
        .filter_map(|e| e["grant_id"].as_str().map(str::to_owned))
        .filter(|id| !id.is_empty())
        .collect();
    if !second.status.success() {
        let said = stderr(&second);
        assert!(
            said.contains("ledger") || said.contains("No space") || said.contains("not running"),
            "a failure that does not say why: {said}"
        );
    }

    // The ledger's store keeps the full disk's error: the daemon stops by itself, in order,
    // saying why, for the service manager to start it again.
    let (status, said) = first_daemon.wait_said(Duration::from_secs(60));
    assert_eq!(status.code(), Some(74), "{said}");
    assert!(
        said.contains("the ledger records nothing more until codarisd starts again"),
        "{said}"
    );
    let mut stopping = false;
    let mut buf = [0u8; 4096];
    while let Ok(n) = listener.recv(&mut buf) {
        if String::from_utf8_lossy(&buf[..n])
            .lines()
            .any(|l| l == "STOPPING=1")
        {
            stopping = true;
            break;
        }
    }
    assert!(stopping, "no STOPPING=1 on NOTIFY_SOCKET");

    // Room again: the service manager's restart serves a new session.
    std::fs::remove_file(&filler).unwrap();
    let _restarted = sandbox.start_daemon(&[]);
    let third = sandbox.run_script(&proj, &ask("/etc/group"), &["--approve", "session"], "c");
    assert!(
        third.status.success(),
        "{}{}",
        stdout(&third),
        stderr(&third)
    );
    sandbox.stop_daemon();

    // Everything acknowledged is there; the ledger reads whole, replays and verifies.
    let replay = sandbox.replay_clean();
    assert!(stdout(&replay).contains(" 0 differ"), "{}", stdout(&replay));
    // The CLI lists grants through a daemon: start one to ask.
    let _again = sandbox.start_daemon(&[]);
    let grants = sandbox.cli(&["ledger", "grants", "--all", "--json"]);
    assert!(grants.status.success(), "{}", stderr(&grants));
    let listed = stdout(&grants);
    for id in acknowledged.iter().chain(&claimed) {
        assert!(
            listed.contains(id.as_str()),
            "acknowledged `{id}` is gone: {listed}"
        );
    }
    drop(tmpfs);
}
