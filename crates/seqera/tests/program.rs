//! `codaris-seqera-mcp` as `codarisd` starts it: a program on stdin and stdout that answers the
//! MCP handshake, and refuses arguments it was never meant to take. (An integration test of this
//! package is also what has `cargo test --workspace` build the program beside `codarisd`, where
//! the daemon and the end-to-end tests look for it.)

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

const PROGRAM: &str = env!("CARGO_BIN_EXE_codaris-seqera-mcp");

#[test]
fn the_program_answers_the_handshake_on_stdio() {
    let mut child = Command::new(PROGRAM)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"test","version":"0"}}}}}}"#
    )
    .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    let answer: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(answer["id"], 1, "{line}");
    assert!(answer["result"]["serverInfo"]["name"].is_string(), "{line}");
}

#[test]
fn the_program_takes_no_arguments() {
    let output = Command::new(PROGRAM)
        .arg("seqera")
        .env_clear()
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("takes no arguments"), "{stderr}");
}
