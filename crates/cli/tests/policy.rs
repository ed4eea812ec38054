//! `codaris policy eval` over the policy crate's own corpus, and its input handling.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use codaris_policy::{Case, Decision};

fn eval(stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_codaris"))
        .env_clear()
        .args(["policy", "eval"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn the_corpus_decides_the_same_through_the_cli() {
    let corpus_path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../policy/corpus/decisions.jsonl");
    let corpus = std::fs::read_to_string(&corpus_path).unwrap();
    let cases: Vec<Case> = corpus
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| Case::parse(l).unwrap())
        .collect();
    assert!(cases.len() > 100, "the corpus covers every rule");
    let input: String = cases
        .iter()
        .map(|case| serde_json::to_string(&case.request).unwrap() + "\n")
        .collect();
    let output = eval(&input);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<&str> = std::str::from_utf8(&output.stdout)
        .unwrap()
        .lines()
        .collect();
    assert_eq!(lines.len(), cases.len(), "one decision per request");
    for (case, line) in cases.iter().zip(lines) {
        let decision: Decision = serde_json::from_str(line).unwrap();
        case.check_decision(&decision)
            .unwrap_or_else(|err| panic!("{}: {err}", case.name));
        // The contract's fields are all present.
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        for field in ["verdict", "code", "sentence", "capability"] {
            assert!(value.get(field).is_some(), "{}: no `{field}`", case.name);
        }
    }
}

#[test]
fn one_pretty_printed_request_is_one_decision() {
    let request = r#"{
  "tool": "write",
  "args": {"path": "/etc/passwd", "content": "x"},
  "task": {"cwd": "/w/proj", "allowed_roots": ["/w/proj"]}
}"#;
    let output = eval(request);
    assert!(output.status.success());
    let decision: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(decision["verdict"], "deny");
    assert_eq!(decision["code"], "mutate_outside_fence");
    assert_eq!(decision["capability"]["name"], "mutate_outside_fence");
    assert_eq!(decision["capability"]["path"], "/etc/passwd");
}

#[test]
fn a_malformed_line_gets_an_error_in_its_place_and_exit_1() {
    let good = r#"{"tool": "read_file", "args": {"path": "a"}, "task": {"cwd": "/w", "allowed_roots": ["/w"]}}"#;
    let output = eval(&format!("{good}\n{{\"tool\": \"x\"}}\nnot json\n{good}\n"));
    assert_eq!(output.status.code(), Some(1));
    let lines: Vec<serde_json::Value> = std::str::from_utf8(&output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0]["verdict"], "allow");
    assert_eq!(lines[1]["line"], 2);
    assert!(
        lines[1]["error"].as_str().unwrap().contains("task"),
        "{}",
        lines[1]
    );
    assert_eq!(lines[2]["line"], 3);
    assert_eq!(lines[3]["verdict"], "allow");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("line 2:") && stderr.contains("line 3:"),
        "{stderr}"
    );
}

#[test]
fn empty_input_is_a_clear_error() {
    let output = eval("\n  \n");
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no input"));
}
