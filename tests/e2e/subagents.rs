//! `spawn_agent` through the real binaries with the scripted model: a child session of the
//! same daemon with its own turn, conversation and record, linked to its parent. Each script
//! carries its children's scripts (`children`): the N-th child the session spawns plays the
//! N-th.

use std::path::PathBuf;

use codaris_test_support::sandbox::{Sandbox, events, json, stderr};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn call(name: &str, args: Value) -> Value {
    json!({"tool_calls": [{"name": name, "args": args}]})
}

fn find() -> Value {
    call(
        "search_tools",
        json!({"query": "delegate a task to a subagent"}),
    )
}

fn spawn(args: Value) -> Value {
    call("spawn_agent", args)
}

fn project(sandbox: &Sandbox) -> PathBuf {
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(proj.join("main.nf"), "workflow { }\n").unwrap();
    proj
}

/// The outputs of the turn's results of `tool`, in order.
fn outputs(events: &[Value], tool: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "tool_result" && e["tool"] == tool)
        .map(|e| e["output"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The sessions as `codaris sessions --json` lists them, by id.
fn sessions(sandbox: &Sandbox) -> Vec<Value> {
    let listed = json(&sandbox.cli(&["sessions", "--all", "--json"]));
    listed.as_array().cloned().unwrap_or_default()
}

#[test]
fn a_foreground_child_reports_back_and_is_its_own_session() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = project(&sandbox);
    let script = json!({
        "turns": [{"rounds": [
            find(),
            spawn(json!({"prompt": "read main.nf and say what it holds", "description": "read the workflow"})),
            {"text": "The child says the workflow is empty."}
        ]}],
        "children": [{"turns": [{"rounds": [
            {"text": "Reading it first.", "tool_calls": [{"name": "read_file", "args": {"path": "main.nf"}}]},
            {"text": "main.nf holds an empty workflow."}
        ]}]}]
    });
    let output = sandbox.run_script(&proj, &script, &[], "what is in main.nf? ask a subagent");
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let reports = outputs(&events, "spawn_agent");
    assert_eq!(reports.len(), 1, "{events:#?} {}", stderr(&output));
    assert!(
        reports[0].starts_with("subagent `s000002` (general: read the workflow) reported:\nmain.nf holds an empty workflow."),
        "{}",
        reports[0]
    );
    let progress: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "progress" && e["tool"] == "spawn_agent")
        .collect();
    assert!(
        progress.iter().any(|p| p["message"] == "s000002 (general): read_file"),
        "{progress:#?}"
    );
    let listed = sessions(&sandbox);
    let child = listed.iter().find(|s| s["id"] == "s000002").expect("the child is listed");
    assert_eq!(child["parent_session_id"], "s000001", "{child}");
    assert_eq!(child["turns"], 1);
    let parent = listed.iter().find(|s| s["id"] == "s000001").unwrap();
    assert_eq!(parent["children"], json!(["s000002"]), "{parent}");
}
