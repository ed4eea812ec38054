//! A search never claims a tool the turn will not be sent: in an `/audit` turn
//! `review_pipeline` is withheld, so `search_tools("review pipeline pack")` names it with the
//! reason instead of binding it (issue 41, item 4), and a call to it is refused as withheld.

use codaris_test_support::sandbox::{Sandbox, calls_script, events, stderr};
use serde_json::json;

#[test]
fn in_an_audit_turn_review_pipeline_is_named_withheld_and_never_bound() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let project = sandbox.root.path().join("pipeline");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(project.join("main.nf"), "workflow {}\n").unwrap();
    let script = calls_script(&[("search_tools", json!({"query": "review pipeline pack"}))]);
    let output = sandbox.run_script(&project, &script, &[], "/audit");
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let answer = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["tool"] == "search_tools")
        .and_then(|e| e["output"].as_str())
        .expect("the search's answer")
        .to_owned();
    assert!(answer.contains("- review_pipeline"), "{answer}");
    let bound_line = answer
        .lines()
        .find(|l| l.starts_with("Bound for your next step:"))
        .unwrap();
    assert!(!bound_line.contains("review_pipeline"), "{answer}");
    assert!(
        answer.contains("Withheld from this turn, so not bound: review_pipeline (is withheld in an `/audit` turn"),
        "{answer}"
    );
    // The next round's surface does not carry it either.
    let bindings: Vec<&serde_json::Value> =
        events.iter().filter(|e| e["type"] == "binding").collect();
    let last = bindings.last().unwrap();
    assert!(
        !last["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "review_pipeline"),
        "{last}"
    );
}

/// In an `/extend` turn the planner is withheld (an extension workspace keeps no session
/// checklist): a search that finds it names it with the reason and never binds it, and the
/// model's call to it is refused as withheld, never run.
#[test]
fn in_an_extend_turn_the_planner_is_named_withheld_and_never_bound() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let project = sandbox.root.path().join("pipeline");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(project.join("main.nf"), "workflow {}\n").unwrap();
    let script = calls_script(&[
        ("search_tools", json!({"query": "planner checklist"})),
        (
            "planner",
            json!({"todos": [{"content": "x", "status": "pending"}]}),
        ),
    ]);
    let output = sandbox.run_script(&project, &script, &[], "/extend add a trimming step");
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let result = |tool: &str| {
        events
            .iter()
            .find(|e| e["type"] == "tool_result" && e["tool"] == tool)
            .cloned()
            .unwrap_or_else(|| panic!("no {tool} result in {events:?}"))
    };
    let answer = result("search_tools")["output"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(answer.contains("- planner"), "{answer}");
    let bound_line = answer
        .lines()
        .find(|l| l.starts_with("Bound for your next step:"))
        .unwrap();
    assert!(!bound_line.contains("planner"), "{answer}");
    assert!(
        answer.contains(
            "Withheld from this turn, so not bound: planner (is withheld in an extension workspace"
        ),
        "{answer}"
    );
    let call = result("planner");
    assert_eq!(call["failed"], json!(true), "{call}");
    assert_eq!(call["decision"]["code"], json!("tool_withheld"), "{call}");
}
