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
        progress
            .iter()
            .any(|p| p["message"] == "s000002 (general): read_file"),
        "{progress:#?}"
    );
    let listed = sessions(&sandbox);
    let child = listed
        .iter()
        .find(|s| s["id"] == "s000002")
        .expect("the child is listed");
    assert_eq!(child["parent_session_id"], "s000001", "{child}");
    assert_eq!(child["turns"], 1);
    let parent = listed.iter().find(|s| s["id"] == "s000001").unwrap();
    assert_eq!(parent["children"], json!(["s000002"]), "{parent}");
}

/// The ledger's decisions of `session`, oldest first, as `codaris ledger decisions` lists them.
fn decisions(sandbox: &Sandbox, session: &str) -> Vec<Value> {
    let output = sandbox.cli(&[
        "ledger",
        "decisions",
        "--session",
        session,
        "--limit",
        "100",
        "--json",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let mut listed = events(&output);
    listed.reverse();
    listed
}

/// The decision of `session`'s call of `tool` (the last one).
fn decision_of(sandbox: &Sandbox, session: &str, tool: &str) -> Value {
    decisions(sandbox, session)
        .into_iter()
        .rev()
        .find(|d| d["tool"] == tool)
        .unwrap_or_else(|| panic!("no decision of `{tool}` in {session}"))
}

/// A child never asks the person, rewrites the configuration or leaves plan mode, and its
/// definition's `tools` only ever remove: each refusal is the policy's, recorded under the
/// child with its parent named, and the parent's own report still arrives.
#[test]
fn a_childs_narrowed_set_refuses_question_config_set_and_what_its_definition_leaves_out() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = project(&sandbox);
    std::fs::create_dir_all(proj.join(".codaris/agents")).unwrap();
    std::fs::write(
        proj.join(".codaris/agents/reader.md"),
        "---\nname: reader\ndescription: reads files and reports\ntools: read_file, question, config_set\n---\nRead, never write.\n",
    )
    .unwrap();
    let script = json!({
        "turns": [{"rounds": [
            find(),
            spawn(json!({"agent": "reader", "prompt": "try everything", "description": "probe the limits"})),
            {"text": "done"}
        ]}],
        "children": [{"turns": [{"rounds": [
            {"tool_calls": [
                {"name": "question", "args": {"questions": [{"question": "ok?", "options": [{"label": "yes"}]}]}},
                {"name": "config_set", "args": {"commands": ["set tools.background=false"]}},
                {"name": "run_command", "args": {"command": "ls"}},
                {"name": "read_file", "args": {"path": "main.nf"}}
            ]},
            {"text": "I could only read."}
        ]}]}]
    });
    let output = sandbox.run_script(&proj, &script, &["--permission-mode", "bypass"], "probe");
    assert!(output.status.success(), "{}", stderr(&output));
    let report = &outputs(&events(&output), "spawn_agent")[0];
    assert!(
        report.ends_with("reported:\nI could only read."),
        "{report}"
    );
    let question = decision_of(&sandbox, "s000002", "question");
    assert_eq!(question["decision"]["code"], "tool_withheld", "{question}");
    let sentence = question["decision"]["sentence"].as_str().unwrap();
    assert!(
        sentence.contains("never offered to a subagent"),
        "{sentence}"
    );
    assert_eq!(question["parent_session_id"], "s000001");
    assert_eq!(question["request"]["task"]["subagent"], true);
    // The configuration tools are not built yet, so the policy refuses `config_set` as unknown
    // before it would withhold it (its withholding from a subagent is the policy's own test);
    // either way the child cannot run it.
    let config_set = decision_of(&sandbox, "s000002", "config_set");
    assert_eq!(config_set["decision"]["verdict"], "deny", "{config_set}");
    assert_eq!(config_set["request"]["task"]["subagent"], true);
    let left_out = decision_of(&sandbox, "s000002", "run_command");
    assert_eq!(left_out["decision"]["code"], "tool_withheld", "{left_out}");
    assert!(
        left_out["decision"]["sentence"]
            .as_str()
            .unwrap()
            .contains("definition gives it"),
        "{left_out}"
    );
    assert_eq!(
        left_out["request"]["task"]["narrowed"],
        json!({"agent": "reader", "tools": ["read_file", "question", "config_set"]})
    );
    assert_eq!(
        decision_of(&sandbox, "s000002", "read_file")["decision"]["verdict"],
        "allow"
    );
    sandbox.stop_daemon();
    let replay = sandbox.replay_clean();
    assert!(replay.status.success(), "{}", stderr(&replay));
}

/// A plan-mode parent's child stays in plan mode: its write is refused as the parent's would be,
/// and it cannot leave plan mode itself.
#[test]
fn a_write_in_a_plan_mode_parents_child_is_refused() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = project(&sandbox);
    let script = json!({
        "turns": [{"rounds": [
            find(),
            spawn(json!({"prompt": "write the notes", "description": "write notes"})),
            {"text": "done"}
        ]}],
        "children": [{"turns": [{"rounds": [
            {"tool_calls": [
                {"name": "write", "args": {"path": "notes.md", "content": "x"}},
                {"name": "plan_exit", "args": {}}
            ]},
            {"text": "Both were refused."}
        ]}]}]
    });
    let output = sandbox.run_script(
        &proj,
        &script,
        &["--mode", "plan", "--permission-mode", "bypass"],
        "plan it",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        !proj.join("notes.md").exists(),
        "the child wrote in plan mode"
    );
    let write = decision_of(&sandbox, "s000002", "write");
    assert_eq!(write["decision"]["verdict"], "deny", "{write}");
    assert_eq!(write["request"]["task"]["activity"], "plan", "{write}");
    let exit = decision_of(&sandbox, "s000002", "plan_exit");
    assert_eq!(exit["decision"]["code"], "tool_withheld", "{exit}");
    let child = sessions(&sandbox)
        .into_iter()
        .find(|s| s["id"] == "s000002")
        .unwrap();
    assert_eq!(child["activity"], "plan");
}

/// A child's card reaches the parent's person on the parent's stream, marked as the child's;
/// answered there, it grants for the family, and the child's decisions are recorded under the
/// child with its parent and whose grants it used. The audit replays them clean.
#[test]
fn a_childs_card_is_answered_by_the_parents_person_and_recorded_under_the_child() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = project(&sandbox);
    let script = json!({
        "turns": [{"rounds": [
            find(),
            spawn(json!({"prompt": "write the notes", "description": "write notes"})),
            {"text": "done"}
        ]}],
        "children": [{"turns": [{"rounds": [
            {"tool_calls": [{"name": "write", "args": {"path": "notes.md", "content": "from the child\n"}}]},
            {"text": "Wrote notes.md."}
        ]}]}]
    });
    let output = sandbox.run_script(&proj, &script, &["--approve", "session"], "notes please");
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let cards: Vec<&Value> = events.iter().filter(|e| e["type"] == "card").collect();
    assert_eq!(cards.len(), 1, "{events:#?}");
    assert_eq!(cards[0]["raised_in"], "s000002", "{}", cards[0]);
    assert_eq!(cards[0]["raised_in_agent"], "general: write notes");
    assert_eq!(
        std::fs::read_to_string(proj.join("notes.md")).unwrap(),
        "from the child\n"
    );
    let child = decisions(&sandbox, "s000002");
    let writes: Vec<&Value> = child.iter().filter(|d| d["tool"] == "write").collect();
    assert_eq!(
        writes
            .iter()
            .map(|d| d["decision"]["verdict"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["ask", "allow"]
    );
    for write in writes {
        assert_eq!(write["session_id"], "s000002");
        assert_eq!(write["parent_session_id"], "s000001");
        assert_eq!(write["grants_of"], "s000001");
    }
    let grants = codaris_test_support::sandbox::events(
        &sandbox.cli(&["ledger", "grants", "--all", "--json"]),
    );
    assert_eq!(grants.len(), 1, "{grants:?}");
    assert_eq!(
        grants[0]["session_id"], "s000001",
        "the grant is the person's session's"
    );
    sandbox.stop_daemon();
    let replay = sandbox.replay_clean();
    assert!(replay.status.success(), "{}", stderr(&replay));
}

/// `resume` continues a finished child in its own session (its second turn, its conversation
/// kept); a session that is not this one's child is refused; a child may spawn a grandchild,
/// which plays its own entry of the script.
#[test]
fn resume_continues_a_finished_child_and_children_nest() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let proj = project(&sandbox);
    let script = json!({
        "turns": [{"rounds": [
            find(),
            spawn(json!({"prompt": "count the files", "description": "count"})),
            spawn(json!({"prompt": "and now the lines", "description": "count more", "resume": "s000002"})),
            spawn(json!({"prompt": "x", "description": "not mine", "resume": "s000001"})),
            {"text": "done"}
        ]}],
        "children": [{
            "turns": [
                {"rounds": [
                    find(),
                    {"tool_calls": [{"name": "spawn_agent", "args": {"prompt": "help me", "description": "grandchild"}}]},
                    {"text": "One file, with help."}
                ]},
                {"rounds": [{"text": "One line."}]}
            ],
            "children": [{"turns": [{"rounds": [{"text": "grandchild here"}]}]}]
        }]
    });
    let output = sandbox.run_script(&proj, &script, &[], "count");
    assert!(output.status.success(), "{}", stderr(&output));
    let reports = outputs(&events(&output), "spawn_agent");
    assert_eq!(reports.len(), 3, "{reports:#?}");
    assert!(
        reports[0].ends_with("reported:\nOne file, with help."),
        "{}",
        reports[0]
    );
    assert!(
        reports[1].ends_with("reported:\nOne line."),
        "{}",
        reports[1]
    );
    assert!(
        reports[2].starts_with(
            "spawn_agent: `s000001` is not a child of this session; its children: `s000002`"
        ),
        "{}",
        reports[2]
    );
    let listed = sessions(&sandbox);
    let child = listed.iter().find(|s| s["id"] == "s000002").unwrap();
    assert_eq!(child["turns"], 2, "resumed in its own session: {child}");
    assert_eq!(child["children"], json!(["s000003"]));
    let grandchild = listed.iter().find(|s| s["id"] == "s000003").unwrap();
    assert_eq!(grandchild["parent_session_id"], "s000002");
    let said = decision_of(&sandbox, "s000002", "spawn_agent");
    assert_eq!(said["decision"]["verdict"], "allow", "{said}");
}

/// `subagents.max_depth` bounds nesting: with 1, a child is refused `spawn_agent` by the policy
/// (and never offered it), while its parent spawned it.
#[test]
fn the_depth_limit_stops_a_child_spawning_another() {
    let sandbox = Sandbox::new();
    sandbox.write_config("[subagents]\nmax_depth = 1\n");
    let proj = project(&sandbox);
    let script = json!({
        "turns": [{"rounds": [
            find(),
            spawn(json!({"prompt": "go deeper", "description": "deeper"})),
            {"text": "done"}
        ]}],
        "children": [{"turns": [{"rounds": [
            find(),
            {"tool_calls": [{"name": "spawn_agent", "args": {"prompt": "deeper still", "description": "deepest"}}]},
            {"text": "I could not go deeper."}
        ]}]}]
    });
    let output = sandbox.run_script(&proj, &script, &[], "depth");
    assert!(output.status.success(), "{}", stderr(&output));
    let refused = decision_of(&sandbox, "s000002", "spawn_agent");
    assert_eq!(refused["decision"]["code"], "tool_withheld", "{refused}");
    assert!(
        refused["decision"]["sentence"]
            .as_str()
            .unwrap()
            .contains("subagents.max_depth"),
        "{refused}"
    );
    assert_eq!(sessions(&sandbox).len(), 2, "no grandchild was made");
}
