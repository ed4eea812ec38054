//! The command line's contract with other programs: every command either honours `--json` or
//! refuses it with exit code 2, and the exit codes docs/cli.md tables.

use codaris_test_support::sandbox::{Sandbox, stderr, stdout};

#[test]
fn commands_without_json_output_refuse_the_flag_with_exit_code_2_and_start_nothing() {
    let sandbox = Sandbox::new();
    for args in [
        &["chat", "--json"][..],
        &["--json", "completions", "bash"],
        &["demo", "--json"],
        &["daemon", "logs", "--json"],
    ] {
        let output = sandbox.cli(args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
        let message = stderr(&output);
        assert!(
            message.starts_with("codaris: `codaris ") && message.contains("has no --json output"),
            "{args:?}: {message}"
        );
        assert_eq!(message.lines().count(), 1, "one line: {message}");
        assert!(
            stdout(&output).is_empty(),
            "{args:?} printed {}",
            stdout(&output)
        );
    }
    // Refused before anything ran: no daemon was started for `chat`.
    assert!(
        !sandbox.socket().exists(),
        "a refused command started a daemon"
    );
}

#[test]
fn exit_codes_follow_the_table() {
    let sandbox = Sandbox::new();
    // A usage error is clap's: 2.
    let output = sandbox.cli(&["ledger", "decisions", "-n", "many"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    // Not running, asked not to start one: 3 from `daemon status`, 1 from anything else.
    let output = sandbox.cli(&["daemon", "status"]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let output = sandbox.cli(&["--no-autostart", "status"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("codarisd is not running"),
        "{}",
        stderr(&output)
    );
    // A command that honours --json prints one JSON document even when the daemon is down.
    let output = sandbox.cli(&["daemon", "status", "--json"]);
    assert_eq!(output.status.code(), Some(3));
    let value: serde_json::Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(value["running"], false, "{value}");
}
