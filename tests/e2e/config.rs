//! A bad configuration stops the daemon at start with one clear line, leaving nothing behind.

use codaris_test_support::sandbox::{Sandbox, stderr};

fn assert_refused(sandbox: &Sandbox, needles: &[&str]) {
    let output = sandbox.command("codarisd").output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    for needle in needles {
        assert!(
            message.contains(needle),
            "missing {needle:?} in {message:?}"
        );
    }
    assert!(!sandbox.socket().exists(), "no socket left behind");
    assert!(!sandbox.pid_file().exists(), "no pid file left behind");

    // The CLI's autostart surfaces the same reason and leaves no daemon either.
    let output = sandbox.cli(&["status"]);
    assert_eq!(output.status.code(), Some(1));
    let cli_message = stderr(&output);
    assert!(
        cli_message.starts_with("codaris: codarisd exited while starting"),
        "{cli_message}"
    );
    assert!(cli_message.contains(needles[0]), "{cli_message}");
    assert_eq!(cli_message.trim_end().lines().count(), 1, "{cli_message}");
    assert!(!sandbox.socket().exists());
}

#[test]
fn unknown_key() {
    let sandbox = Sandbox::new();
    sandbox.write_config("[daemon]\nlisten_on = \"127.0.0.1:1\"\n");
    let file = sandbox.root.path().join("config.toml");
    assert_refused(
        &sandbox,
        &["listen_on", &file.display().to_string(), "line 2"],
    );
}

#[test]
fn bad_value() {
    let sandbox = Sandbox::new();
    sandbox.write_config("[provider]\nname = \"skynet\"\n");
    assert_refused(&sandbox, &["provider.name", "skynet"]);
}

#[test]
fn non_loopback_listen() {
    let sandbox = Sandbox::new();
    sandbox.write_config("[daemon]\nlisten = \"0.0.0.0:7457\"\n");
    assert_refused(&sandbox, &["daemon.listen", "loopback"]);
}

#[test]
fn unreadable_file() {
    let sandbox = Sandbox::new();
    // A directory where the file should be cannot be read, even by root.
    std::fs::create_dir(sandbox.root.path().join("config.toml")).unwrap();
    assert_refused(&sandbox, &["cannot read configuration file"]);
}

#[test]
fn missing_explicit_file() {
    let sandbox = Sandbox::new();
    assert_refused(&sandbox, &["cannot read configuration file", "config.toml"]);
}

#[test]
fn bad_environment_value() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let output = sandbox
        .command("codarisd")
        .env("CODARIS_LEAN_7_TOOLS", "sometimes")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("CODARIS_LEAN_7_TOOLS"),
        "{}",
        stderr(&output)
    );
    assert!(!sandbox.socket().exists());
}
