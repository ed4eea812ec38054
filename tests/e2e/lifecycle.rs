//! Starting, refusing, recovering and stopping the daemon through the real CLI.

use std::io::Write as _;
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use codaris_test_support::sandbox::{Sandbox, alive, json, stderr, stdout, wait_for};
use pretty_assertions::assert_eq;

#[test]
fn status_json_then_stop() {
    let sandbox = Sandbox::new();
    let daemon = sandbox.start_daemon(&[]);
    let pid = daemon.pid();

    let output = sandbox.cli(&["status", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let status = json(&output);
    assert_eq!(status["running"], true);
    assert_eq!(status["pid"], pid);
    assert_eq!(status["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(status["api_version"], 1);
    assert_eq!(
        status["state_dir"],
        sandbox.state_dir().display().to_string()
    );
    assert_eq!(status["socket"], sandbox.socket().display().to_string());
    assert_eq!(status["tcp_listen"], serde_json::Value::Null);
    assert_eq!(
        status["sessions"],
        serde_json::json!({"active": 0, "total": 0})
    );
    assert!(status["uptime_ms"].is_u64());
    let confinement = status["sandbox"].as_str().unwrap();
    assert!(confinement.starts_with("landlock "), "{confinement}");

    let output = sandbox.cli(&["daemon", "stop"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        stdout(&output).trim(),
        format!("codarisd stopped (pid {pid})")
    );
    let exit = daemon.wait(Duration::from_secs(10));
    assert!(exit.success(), "graceful stop exits 0, got {exit}");
    assert!(!sandbox.socket().exists(), "the socket is removed on stop");
    assert!(
        !sandbox.pid_file().exists(),
        "the pid file is removed on stop"
    );
    assert!(
        sandbox.state_dir().join("ledger").is_dir(),
        "the ledger stays"
    );
}

#[test]
fn human_status_names_everything() {
    let sandbox = Sandbox::new();
    let daemon = sandbox.start_daemon(&[]);
    let output = sandbox.cli(&["status"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    for needle in [
        "is running",
        &format!("pid        {}", daemon.pid()),
        &format!("socket     {}", sandbox.socket().display()),
        "sessions   0 active, 0 in all",
        "tcp        off",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
}

#[test]
fn socket_is_0600_in_a_0700_dir() {
    let sandbox = Sandbox::new();
    let _daemon = sandbox.start_daemon(&[]);
    assert_eq!(Sandbox::mode(&sandbox.state_dir()), 0o700);
    assert_eq!(Sandbox::mode(&sandbox.socket()), 0o600);
    assert_eq!(Sandbox::mode(&sandbox.pid_file()), 0o600);
    assert_eq!(
        Sandbox::mode(&sandbox.state_dir().join("codarisd.log")),
        0o600
    );
}

#[test]
fn a_second_daemon_is_refused_and_the_first_keeps_serving() {
    let sandbox = Sandbox::new();
    let first = sandbox.start_daemon(&[]);
    // The first daemon logs "serving" just after its socket answers, then its built-in MCP
    // server's start and tools; let it finish.
    let log = sandbox.state_dir().join("codarisd.log");
    wait_for(Duration::from_secs(40), || {
        std::fs::read_to_string(&log).is_ok_and(|text| {
            text.contains("codarisd serving") && text.contains("MCP tools re-indexed")
        })
    });
    let socket_inode = std::fs::metadata(sandbox.socket()).unwrap().ino();
    let pid_file = std::fs::read_to_string(sandbox.pid_file()).unwrap();
    let log_len = std::fs::metadata(sandbox.state_dir().join("codarisd.log"))
        .unwrap()
        .len();

    let second = sandbox.command("codarisd").output().unwrap();
    // Its own status (75), which the systemd unit does not restart for.
    assert_eq!(second.status.code(), Some(75));
    let message = stderr(&second);
    assert!(
        message.contains(&format!("pid {}", first.pid()))
            && message.contains(&sandbox.socket().display().to_string()),
        "the refusal names the running daemon: {message}"
    );
    assert_eq!(message.lines().count(), 1, "one line: {message}");

    // It touched nothing of the first daemon's.
    assert_eq!(
        std::fs::metadata(sandbox.socket()).unwrap().ino(),
        socket_inode
    );
    assert_eq!(
        std::fs::read_to_string(sandbox.pid_file()).unwrap(),
        pid_file
    );
    let log_after = std::fs::metadata(sandbox.state_dir().join("codarisd.log"))
        .unwrap()
        .len();
    assert_eq!(
        log_after, log_len,
        "the refused daemon wrote nothing to the log"
    );

    let output = sandbox.cli(&["--no-autostart", "status", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(json(&output)["pid"], first.pid());
}

#[test]
fn a_stale_socket_from_a_killed_daemon_is_recovered() {
    let sandbox = Sandbox::new();
    let killed = sandbox.start_daemon(&[]);
    killed.kill_hard();
    assert!(
        sandbox.socket().exists(),
        "SIGKILL leaves the socket behind"
    );

    // The CLI without autostart reports the dead socket clearly.
    let output = sandbox.cli(&["--no-autostart", "status"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("codarisd is not running"),
        "{}",
        stderr(&output)
    );

    let daemon = sandbox.start_daemon(&[]);
    let output = sandbox.cli(&["status", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(json(&output)["pid"], daemon.pid());
}

#[test]
fn sigterm_stops_gracefully() {
    let sandbox = Sandbox::new();
    let daemon = sandbox.start_daemon(&[]);
    daemon.signal(rustix::process::Signal::TERM);
    let exit = daemon.wait(Duration::from_secs(10));
    assert!(exit.success(), "{exit}");
    assert!(!sandbox.socket().exists());
    let log = std::fs::read_to_string(sandbox.state_dir().join("codarisd.log")).unwrap();
    assert!(log.contains("SIGTERM"), "{log}");
    assert!(log.contains("codarisd stopped"), "{log}");
}

/// A client that opened a connection and then reads nothing (a `codaris` suspended with Ctrl-Z,
/// a frozen editor) never answers HTTP/2's goodbye; the stop still completes, after the drain.
#[test]
fn a_connection_nobody_reads_does_not_hold_the_stop() {
    let sandbox = Sandbox::new();
    let daemon = sandbox.start_daemon(&[]);
    let mut stalled = std::os::unix::net::UnixStream::connect(sandbox.socket()).unwrap();
    // HTTP/2's preface and an empty SETTINGS frame; the daemon's SETTINGS are never read.
    stalled
        .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
        .unwrap();

    let output = sandbox.cli(&["daemon", "stop", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        json(&output),
        serde_json::json!({"stopped": true, "pid": daemon.pid()})
    );
    let exit = daemon.wait(Duration::from_secs(30));
    assert!(exit.success(), "{exit}");
    let log = std::fs::read_to_string(sandbox.state_dir().join("codarisd.log")).unwrap();
    assert!(
        log.contains("connections still open after the drain") && log.contains("codarisd stopped"),
        "{log}"
    );
    drop(stalled);
}

#[test]
fn autostart_starts_a_daemon_that_outlives_the_cli() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let output = sandbox.cli(&["status", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let pid = u32::try_from(json(&output)["pid"].as_u64().unwrap()).unwrap();
    assert!(alive(pid));

    let output = sandbox.cli(&["daemon", "stop", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        json(&output),
        serde_json::json!({"stopped": true, "pid": pid})
    );
    wait_for(Duration::from_secs(10), || !alive(pid));
}

#[test]
fn daemon_start_status_and_stop_when_absent() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let output = sandbox.cli(&["daemon", "status"]);
    assert_eq!(output.status.code(), Some(3), "not running is exit 3");
    assert!(stdout(&output).contains("not running"));

    let output = sandbox.cli(&["daemon", "stop"]);
    assert!(output.status.success());
    assert!(stdout(&output).contains("not running"));

    let output = sandbox.cli(&["daemon", "start", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let started = json(&output);
    assert_eq!(started["started"], true);
    let output = sandbox.cli(&["daemon", "start", "--json"]);
    assert_eq!(json(&output)["started"], false);
    assert_eq!(json(&output)["pid"], started["pid"]);

    // The last lines: serving, then the built-in MCP server coming up.
    let output = sandbox.cli(&["daemon", "logs", "-n", "20"]);
    assert!(
        stdout(&output).contains("codarisd serving"),
        "{}",
        stdout(&output)
    );

    assert!(sandbox.cli(&["daemon", "stop"]).status.success());
}

#[test]
fn a_closed_pipe_exits_quietly() {
    let sandbox = Sandbox::new();
    let _daemon = sandbox.start_daemon(&[]);
    let mut child = sandbox
        .command("codaris")
        .args(["completions", "bash"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Close the reading end at once, like `| head -0`.
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
}

#[test]
fn completions_for_each_shell() {
    let sandbox = Sandbox::new();
    for shell in ["bash", "zsh", "fish"] {
        let output = sandbox.cli(&["completions", shell]);
        assert!(output.status.success(), "{shell}: {}", stderr(&output));
        assert!(stdout(&output).contains("codaris"), "{shell}");
    }
    let output = sandbox.cli(&["completions", "tcsh"]);
    assert_eq!(
        output.status.code(),
        Some(2),
        "clap rejects an unknown shell"
    );
}
