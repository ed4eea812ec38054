//! The second, independent ACP client: the TypeScript SDK (`@agentclientprotocol/sdk`, pinned
//! in tests/acp-node/package.json and installed there by `.ci/run` with `npm ci`) drives the
//! real `codaris acp` through the same scenario as tests/e2e/acp.rs, on the machine's Node.

use std::path::Path;
use std::time::Duration;

use codaris_test_support::sandbox::{Sandbox, alive, binary, stderr, stdout, wait_for};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

#[test]
fn the_typescript_sdk_drives_the_same_scenario() {
    let client_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("acp-node");
    assert!(
        client_dir
            .join("node_modules/@agentclientprotocol/sdk")
            .is_dir(),
        "the TypeScript SDK is not installed: run `npm ci` in {} (.ci/run does)",
        client_dir.display()
    );
    let sandbox = Sandbox::new();
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(proj.join("README.md"), "hello\n").unwrap();
    std::fs::write(proj.join("main.nf"), "process A {}\n").unwrap();
    let script = sandbox.root.path().join("script.json");
    std::fs::write(&script, super::acp::script().to_string()).unwrap();
    let _daemon = sandbox.start_daemon(&[]);
    let node = std::env::var("NODE").unwrap_or_else(|_| "node".to_owned());
    let output = std::process::Command::new(node)
        .arg(client_dir.join("client.mjs"))
        .arg(binary("codaris"))
        .arg(&script)
        .arg(&proj)
        .arg(binary("codaris-mcp-fixture"))
        .env("HOME", sandbox.root.path().join("home"))
        .env("CODARIS_STATE_DIR", sandbox.state_dir())
        .env("CODARIS_CONFIG", sandbox.root.path().join("config.toml"))
        .output()
        .expect("run node (the machine's Node 20 or later)");
    assert!(
        output.status.success(),
        "the node client failed: {}{}",
        stdout(&output),
        stderr(&output)
    );
    let summary: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(summary["agent"], "codaris");
    // The SDK's stdio server shape is taken: session/new and session/load succeed with it.
    assert_eq!(summary["mcp_http"], true);
    assert_eq!(summary["modes"], json!(["agent", "plan", "ask"]));
    assert_eq!(
        summary["stops"],
        json!(["end_turn", "cancelled", "end_turn"])
    );
    assert_eq!(
        summary["cards"][0],
        json!(["allow_once", "allow_always", "reject_once"])
    );
    assert_eq!(summary["text"], "Reading the readme.");
    assert_eq!(
        summary["edit_diff"],
        json!({"type": "diff", "path": proj.join("main.nf").display().to_string(),
               "oldText": "process A", "newText": "process B"})
    );
    assert_eq!(
        std::fs::read_to_string(proj.join("main.nf")).unwrap(),
        "process B {}\n"
    );
    assert_eq!(
        summary["plan"],
        json!(["completed", "in_progress", "pending"])
    );
    let refused = summary["write_failed"].as_str().unwrap();
    assert!(refused.starts_with("`plan` mode is read-only"), "{refused}");
    assert_eq!(summary["mode"], "plan");
    assert_eq!(summary["replayed"], "read and rename");
    let pid = u32::try_from(summary["pid"].as_u64().unwrap()).unwrap();
    wait_for(Duration::from_secs(10), || !alive(pid));
}
