//! An IDE plugin in another language: a Python grpcio client over the Unix socket.

use codaris_test_support::sandbox::{Sandbox, stderr, stdout};

#[test]
fn python_grpcio_calls_health_and_status() {
    let sandbox = Sandbox::new();
    let daemon = sandbox.start_daemon(&[]);
    let card_script = sandbox.root.path().join("card.json");
    std::fs::write(
        &card_script,
        r#"{"turns": [{"rounds": [
            {"tool_calls": [{"name": "request_capability",
              "args": {"capability": "read_outside_fence", "path": "/etc/hosts", "reason": "check"}}]},
            {"text": "done"}]}]}"#,
    )
    .unwrap();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("python/client.py");
    let proto_root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../proto");
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let output = std::process::Command::new(python)
        .arg(&script)
        .arg("--socket")
        .arg(sandbox.socket())
        .arg("--proto-root")
        .arg(&proto_root)
        .arg("--out")
        .arg(sandbox.root.path().join("py"))
        .arg("--script")
        .arg(&card_script)
        .output()
        .expect("run python3 (the CI installs grpcio and grpcio-tools)");
    assert!(
        output.status.success(),
        "python client failed: {}{}",
        stdout(&output),
        stderr(&output)
    );
    let lines: Vec<&str> = std::str::from_utf8(&output.stdout)
        .unwrap()
        .lines()
        .collect();
    assert_eq!(lines[0], "health SERVING");
    assert_eq!(lines[1], "health codaris.v1.Daemon SERVING");
    assert_eq!(lines[2], format!("status pid={} api=1", daemon.pid()));
    assert!(lines[3].starts_with("reflection "), "{lines:?}");
    assert!(lines[3].contains("codaris.v1.Daemon"), "{lines:?}");
    assert!(lines[3].contains("grpc.health.v1.Health"), "{lines:?}");
    // A plugin answers a card with the secret its Turn stream carried, and only with it.
    assert_eq!(lines[4], "card wrong-secret PERMISSION_DENIED");
    assert_eq!(lines[5], "card accepted=True grant=yes");
}
