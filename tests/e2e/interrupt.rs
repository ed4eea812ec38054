//! `codaris run` stopped early — Ctrl-C (SIGINT), SIGTERM, or its standard output closed under
//! it (`codaris run … | head -c1`) — cancels its turn and ends its session: the daemon reports
//! no active session and the command the turn was running is gone, within seconds.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use codaris_test_support::sandbox::{Sandbox, alive, json, stderr, wait_for};
use pretty_assertions::assert_eq;
use rustix::process::{Pid, Signal, kill_process};
use serde_json::json;

/// How long the daemon may take to end the session and stop the command after the CLI left.
const SETTLE: Duration = Duration::from_secs(10);

/// A turn whose only call runs a command that records its pid, then sleeps far longer than
/// any test waits (`exec` keeps the pid).
fn sleeping_script() -> serde_json::Value {
    json!({"turns": [{"rounds": [
        {"tool_calls": [{"name": "run_command",
                         "args": {"command": "echo $$ > sleep.pid && exec sleep 300"}}]},
        {"text": "done"}
    ]}]})
}

/// `codaris run --json` of the sleeping script in a fresh project, output piped, once the
/// command is running: the CLI and the sleeping command's pid.
fn run_until_sleeping(sandbox: &Sandbox, name: &str) -> (Child, u32) {
    let proj = sandbox.root.path().join(name);
    std::fs::create_dir_all(&proj).unwrap();
    let child = sandbox
        .command("codaris")
        .args(sandbox.run_args(
            &proj,
            &sleeping_script(),
            &["--permission-mode", "bypass"],
            "sleep",
        ))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = sleeping_pid(&proj.join("sleep.pid"));
    (child, pid)
}

/// Waits until the command wrote its pid and runs.
fn sleeping_pid(file: &Path) -> u32 {
    let mut pid = 0;
    wait_for(Duration::from_secs(30), || {
        pid = std::fs::read_to_string(file)
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(0);
        pid != 0 && alive(pid)
    });
    pid
}

fn active_sessions(sandbox: &Sandbox) -> u64 {
    let output = sandbox.cli(&["status", "--json", "--no-autostart"]);
    assert!(output.status.success(), "{}", stderr(&output));
    json(&output)["sessions"]["active"].as_u64().unwrap()
}

/// The CLI's exit status once it exits by itself.
fn exit_code(child: &mut Child) -> Option<i32> {
    let mut status = None;
    wait_for(SETTLE, || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    status.and_then(|s| s.code())
}

/// The CLI's exit status once it exits by itself, and what it wrote to standard error.
fn ended(child: &mut Child) -> (Option<i32>, String) {
    let code = exit_code(child);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (code, err)
}

/// No session is left active and the command is gone.
fn cleaned_up(sandbox: &Sandbox, sleeping: u32) {
    wait_for(SETTLE, || active_sessions(sandbox) == 0);
    wait_for(SETTLE, || !alive(sleeping));
}

fn signal(child: &Child, signal: Signal) {
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    kill_process(pid, signal).unwrap();
}

#[test]
fn a_signal_cancels_the_turn_ends_the_session_and_exits_128_plus_its_number() {
    let sandbox = Sandbox::new();
    let _daemon = sandbox.start_daemon(&[]);
    for (sig, code, name) in [(Signal::INT, 130, "int"), (Signal::TERM, 143, "term")] {
        let (mut child, sleeping) = run_until_sleeping(&sandbox, name);
        assert_eq!(active_sessions(&sandbox), 1, "{name}");
        signal(&child, sig);
        let (code_seen, err) = ended(&mut child);
        assert_eq!(code_seen, Some(code), "{name}: {err}");
        cleaned_up(&sandbox, sleeping);
    }
}

#[test]
fn a_closed_standard_output_cancels_the_turn_ends_the_session_and_exits_0() {
    let sandbox = Sandbox::new();
    let _daemon = sandbox.start_daemon(&[]);
    let (mut child, sleeping) = run_until_sleeping(&sandbox, "proj");
    // `| head -c1`: the reader takes one byte and goes away while the command runs.
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 1];
    stdout.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"{");
    drop(stdout);
    let (code, err) = ended(&mut child);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(err, "");
    cleaned_up(&sandbox, sleeping);
}

/// The next run in the same daemon is not refused by a turn left behind.
#[test]
fn after_an_interrupt_the_daemon_runs_the_next_session() {
    let sandbox = Sandbox::new();
    let _daemon = sandbox.start_daemon(&[]);
    let (mut child, sleeping) = run_until_sleeping(&sandbox, "first");
    signal(&child, Signal::INT);
    assert_eq!(exit_code(&mut child), Some(130));
    cleaned_up(&sandbox, sleeping);
    let proj: PathBuf = sandbox.root.path().join("first");
    let output = sandbox.run_script(
        &proj,
        &json!({"turns": [{"rounds": [{"text": "hello again"}]}]}),
        &[],
        "hi",
    );
    assert!(output.status.success(), "{}", stderr(&output));
}
