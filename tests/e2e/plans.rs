//! Plan documents and plan mode through the real binaries: a plan-mode session writes its plan,
//! asks to leave the mode with `plan_exit`, and the person's answer at the card decides whether
//! the next turn may change files; and a call to a tool that is not built (or misspelt) is
//! answered `unknown_tool` with the closest names.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use codaris_test_support::sandbox::{Sandbox, binary, events, json, stderr, stdout, wait_for};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const PLAN: &str = "# Split the main workflow\n\n1. move the QC steps into a subworkflow\n";

/// Turn 1 (plan mode): find and write a plan, find `plan_exit` and call it, then try a write
/// (plan mode's tools still hold in this turn). Turn 2: the same write.
fn script() -> Value {
    let write = json!({"name": "write", "args": {"path": "out.txt", "content": "done\n"}});
    json!({"turns": [
        {"rounds": [
            {"tool_calls": [{"name": "search_tools", "args": {"query": "write a plan document"}}]},
            {"tool_calls": [{"name": "plan_write", "args": {"slug": "split-workflow", "content": PLAN}}]},
            {"tool_calls": [{"name": "search_tools", "args": {"query": "leave plan mode"}}]},
            {"tool_calls": [{"name": "plan_exit", "args": {}}]},
            {"tool_calls": [write.clone()]},
            {"text": "Planned."}
        ]},
        {"rounds": [
            {"tool_calls": [write]},
            {"text": "Done."}
        ]}
    ]})
}

/// `codaris run --json --mode plan` of [`script`] in `proj`, every card answered `approve`,
/// under permission mode `accept_edits`: a write needs no card, so the only card is
/// `plan_exit`'s, which no permission mode skips.
fn run_plan(sandbox: &Sandbox, proj: &Path, approve: &str) -> Output {
    let path = sandbox.root.path().join("plan.json");
    std::fs::write(&path, script().to_string()).unwrap();
    sandbox.cli(&[
        "run",
        "--json",
        "--script",
        path.to_str().unwrap(),
        "--cwd",
        proj.to_str().unwrap(),
        "--mode",
        "plan",
        "--permission-mode",
        "accept-edits",
        "--approve",
        approve,
        "plan it",
        "now do it",
    ])
}

fn results(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .collect()
}

fn result_of<'a>(events: &'a [Value], tool: &str) -> Vec<&'a Value> {
    results(events)
        .into_iter()
        .filter(|r| r["tool"] == tool)
        .collect()
}

fn code(result: &Value) -> &str {
    result["decision"]["code"].as_str().unwrap_or_default()
}

/// The plan document the session wrote, wherever its workspace is.
fn plan_files(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                walk(&path, out);
            } else if path.ends_with("plans/split-workflow.plan.md") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(root, &mut out);
    out
}

fn session_activity(sandbox: &Sandbox) -> String {
    let listed = json(&sandbox.cli(&["sessions", "--all", "--json"]));
    let sessions = listed.as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{listed:#}");
    sessions[0]["activity"].as_str().unwrap().to_owned()
}

fn setup() -> (Sandbox, PathBuf) {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    (sandbox, proj)
}

#[test]
fn search_finds_the_plan_tools() {
    let (sandbox, _proj) = setup();
    let output = sandbox.cli(&["tools", "search", "--json", "write a plan"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let hits: Vec<String> = json(&output)["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(hits.contains(&"plan_write".to_owned()), "{hits:?}");
}

#[test]
fn plan_exit_accepted_on_its_card_puts_the_next_turn_in_agent_mode() {
    let (sandbox, proj) = setup();
    let output = run_plan(&sandbox, &proj, "once");
    assert!(
        output.status.success(),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    let events = events(&output);

    let wrote = result_of(&events, "plan_write");
    assert_eq!(code(wrote[0]), "allowed_by_default", "{wrote:#?}");
    let files = plan_files(sandbox.root.path());
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(std::fs::read_to_string(&files[0]).unwrap(), PLAN);

    // The one card is plan_exit's, under accept_edits, and shows the plan agreed to.
    let cards: Vec<&Value> = events.iter().filter(|e| e["type"] == "card").collect();
    assert_eq!(cards.len(), 1, "{cards:#?}");
    let card = cards[0].to_string();
    assert!(card.contains("leave plan mode"), "{card}");
    assert!(card.contains("plans/split-workflow.plan.md"), "{card}");
    assert!(card.contains("# Split the main workflow"), "{card}");
    let exit = result_of(&events, "plan_exit");
    assert_eq!(exit.len(), 1, "{exit:#?}");
    assert_eq!(code(exit[0]), "allowed_by_grant", "{exit:#?}");
    assert!(
        exit[0]["output"]
            .as_str()
            .unwrap()
            .starts_with("the user agreed to leave plan mode"),
        "{exit:#?}"
    );

    // The turn that left keeps plan mode's tools; the next one writes.
    let writes = result_of(&events, "write");
    assert_eq!(writes.len(), 2, "{writes:#?}");
    assert_eq!(writes[0]["decision"]["verdict"], "deny", "{writes:#?}");
    assert_eq!(code(writes[1]), "allowed_by_mode", "{writes:#?}");
    assert_eq!(
        std::fs::read_to_string(proj.join("out.txt")).unwrap(),
        "done\n"
    );
    assert_eq!(session_activity(&sandbox), "agent");
}

#[test]
fn plan_exit_refused_on_its_card_stays_in_plan_mode() {
    let (sandbox, proj) = setup();
    let output = run_plan(&sandbox, &proj, "deny");
    assert!(
        output.status.success(),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    let events = events(&output);
    let exit = result_of(&events, "plan_exit");
    assert_eq!(exit.len(), 1, "{exit:#?}");
    assert_eq!(code(exit[0]), "denied_by_user", "{exit:#?}");
    // Both writes are refused by the mode, the second turn's too.
    let writes = result_of(&events, "write");
    assert_eq!(writes.len(), 2, "{writes:#?}");
    for write in &writes {
        assert_eq!(code(write), "read_only_activity", "{writes:#?}");
    }
    assert!(!proj.join("out.txt").exists());
    assert_eq!(session_activity(&sandbox), "plan");
}

#[test]
fn plan_exit_in_agent_mode_asks_nothing_and_says_so() {
    let (sandbox, proj) = setup();
    let body = json!({"turns": [{"rounds": [
        {"tool_calls": [{"name": "search_tools", "args": {"query": "leave plan mode"}}]},
        {"tool_calls": [{"name": "plan_exit", "args": {}}]},
        {"text": "ok"}
    ]}]});
    let output = sandbox.run_script(&proj, &body, &["--approve", "deny"], "go");
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    assert!(!events.iter().any(|e| e["type"] == "card"), "{events:#?}");
    let exit = result_of(&events, "plan_exit");
    assert_eq!(
        exit[0]["output"],
        "the session is not in plan mode but in `agent` mode; nothing changed"
    );
    assert_eq!(session_activity(&sandbox), "agent");
}

#[test]
fn a_misspelt_tool_is_unknown_with_the_closest_names_and_an_unbound_one_is_found_by_search() {
    let (sandbox, proj) = setup();
    let body = json!({"turns": [{"rounds": [
        {"tool_calls": [{"name": "config_get", "args": {"path": "tools"}}]},
        {"tool_calls": [{"name": "reed_file", "args": {"path": "a"}}]},
        {"text": "ok"}
    ]}]});
    let output = sandbox.run_script(&proj, &body, &[], "go");
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let results = results(&events);
    assert_eq!(results.len(), 2, "{results:#?}");
    // Every tool of the surface is built: one not bound this turn is a search away.
    assert_eq!(code(results[0]), "not_bound", "{:#?}", results[0]);
    let unbound = results[0]["decision"]["sentence"].as_str().unwrap();
    assert!(
        unbound.contains("call `search_tools` to bind it"),
        "{unbound}"
    );
    assert_eq!(code(results[1]), "unknown_tool", "{:#?}", results[1]);
    let misspelt = results[1]["decision"]["sentence"].as_str().unwrap();
    assert!(!misspelt.contains("to bind it"), "{misspelt}");
    assert!(
        misspelt.starts_with("no tool is named `reed_file`; the closest names are `read_file`, "),
        "{misspelt}"
    );
    // The recorded decisions replay the same offline, once the daemon let go of the ledger.
    assert!(sandbox.cli(&["daemon", "stop"]).status.success());
    let mut replay = sandbox.cli(&["audit", "replay", "--json"]);
    for _ in 0..100 {
        if replay.status.success() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        replay = sandbox.cli(&["audit", "replay", "--json"]);
    }
    assert!(
        replay.status.success(),
        "{}{}",
        stdout(&replay),
        stderr(&replay)
    );
    let report = json(&replay);
    assert_eq!(report["differences"], json!([]), "{report:#}");
    assert_eq!(report["decisions"], 2, "{report:#}");
}

#[test]
fn a_misspelt_mcp_tool_is_unknown_with_the_servers_tools_among_the_closest() {
    let (sandbox, proj) = setup();
    let fixture = binary("codaris-mcp-fixture").display().to_string();
    sandbox.write_config(&format!("[mcp.servers.fixture]\ncommand = {fixture:?}\n"));
    let daemon = sandbox.start_daemon(&[]);
    wait_for(Duration::from_secs(60), || {
        let listed = json(&sandbox.cli(&["mcp", "list", "--json"]));
        let state = listed[0]["state"].clone();
        assert_ne!(state, "failed", "{listed}");
        state == "ready"
    });
    let body = json!({"turns": [{"rounds": [
        {"tool_calls": [{"name": "fixture__ecoh", "args": {"text": "hi"}}]},
        {"text": "ok"}
    ]}]});
    let output = sandbox.run_script(&proj, &body, &[], "go");
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let results = results(&events);
    assert_eq!(code(results[0]), "unknown_tool", "{results:#?}");
    let sentence = results[0]["decision"]["sentence"].as_str().unwrap();
    assert!(
        sentence
            .starts_with("no tool is named `fixture__ecoh`; the closest names are `fixture__echo`"),
        "{sentence}"
    );
    // The server's tools are the decision's recorded input: offline, with no server running,
    // the replay names the same.
    assert!(sandbox.cli(&["daemon", "stop"]).status.success());
    daemon.wait(Duration::from_secs(10));
    let replay = sandbox.cli(&["audit", "replay", "--json"]);
    assert!(
        replay.status.success(),
        "{}{}",
        stdout(&replay),
        stderr(&replay)
    );
    let report = json(&replay);
    assert_eq!(report["differences"], json!([]), "{report:#}");
    assert_eq!(report["decisions"], 1, "{report:#}");
}
