//! The `codaris` binary's own behaviour that needs no daemon: help, versions, errors.

// Always true here (test crates build with `--test`); it makes clippy count the helpers as
// test code, so `clippy.toml` lets them unwrap as the tests do.
#![cfg(test)]

mod audit;
mod policy;
mod tools;

use std::process::{Command, Output};

fn codaris(state: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_codaris"))
        .env_clear()
        .env("CODARIS_STATE_DIR", state)
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn help_lists_the_commands() {
    let temp = tempfile::tempdir().unwrap();
    let output = codaris(temp.path(), &["--help"]);
    assert!(output.status.success());
    let help = text(&output.stdout);
    for command in [
        "status",
        "daemon",
        "completions",
        "--json",
        "--no-autostart",
    ] {
        assert!(help.contains(command), "{command} missing from\n{help}");
    }
}

#[test]
fn version_matches_the_package() {
    let temp = tempfile::tempdir().unwrap();
    let output = codaris(temp.path(), &["--version"]);
    assert_eq!(
        text(&output.stdout).trim(),
        format!("codaris {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn no_daemon_without_autostart_is_one_actionable_line() {
    let temp = tempfile::tempdir().unwrap();
    let output = codaris(temp.path(), &["--no-autostart", "status"]);
    assert_eq!(output.status.code(), Some(1));
    let message = text(&output.stderr);
    assert_eq!(message.lines().count(), 1, "{message}");
    assert!(
        message.starts_with("codaris: codarisd is not running"),
        "{message}"
    );
    assert!(message.contains("codaris daemon start"), "{message}");
}

#[test]
fn daemon_status_without_a_daemon_is_exit_3_with_json() {
    let temp = tempfile::tempdir().unwrap();
    let output = codaris(temp.path(), &["daemon", "status", "--json"]);
    assert_eq!(output.status.code(), Some(3));
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value["running"], false);
    assert_eq!(
        value["socket"],
        temp.path().join("codaris.sock").display().to_string()
    );
}

#[test]
fn a_relative_state_dir_variable_is_refused() {
    let output = Command::new(env!("CARGO_BIN_EXE_codaris"))
        .env_clear()
        .env("CODARIS_STATE_DIR", "relative/state")
        .args(["daemon", "status"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("`CODARIS_STATE_DIR` must be an absolute path"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn missing_logs_name_the_file() {
    let temp = tempfile::tempdir().unwrap();
    let output = codaris(temp.path(), &["daemon", "logs"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("codarisd.log"));
}

#[test]
fn man_prints_a_roff_page_naming_every_command() {
    let temp = tempfile::tempdir().unwrap();
    let output = codaris(temp.path(), &["man"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let page = text(&output.stdout);
    assert!(page.starts_with(".ie \\n(.g .ds Aq"), "{page}");
    assert!(page.contains(".TH codaris 1"), "{page}");
    for command in ["status", "run", "chat", "config", "man"] {
        assert!(
            page.contains(&format!("codaris\\-{command}(1)")),
            "{command} missing from\n{page}"
        );
    }
    // Nothing started: the page needs no daemon.
    assert!(!temp.path().join("codaris.sock").exists());
}
