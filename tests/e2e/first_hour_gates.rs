//! Issue 46's gates, through the real daemon and CLI with the scripted model: plan and ask mode
//! refuse a change by the mode (never `not_bound`, which sent the model searching in a loop),
//! a pipeline run raises its card only once its arguments passed every check, and a gate's
//! error names the directory a relative path was resolved against.

use codaris_test_support::nextflow::{
    copy_tree, nfcore_template, stand_in_nextflow, stand_in_scenario,
};
use codaris_test_support::sandbox::{Daemon, Sandbox, calls_script, events, stderr, stdout};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// The `tool_result` events of a run, in order.
fn results(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .collect()
}

fn code(result: &Value) -> &str {
    result["decision"]["code"].as_str().unwrap_or_default()
}

#[test]
fn plan_mode_refuses_an_edit_once_by_the_mode_and_a_search_does_not_offer_it() {
    let sandbox = Sandbox::new();
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(proj.join("a.txt"), "before\n").unwrap();
    let _daemon = sandbox.start_daemon(&[]);
    let script = calls_script(&[
        (
            "edit",
            json!({"path": "a.txt", "oldString": "before", "newString": "after"}),
        ),
        ("search_tools", json!({"query": "edit a file"})),
    ]);
    let output = sandbox.run_script(
        &proj,
        &script,
        &["--mode", "plan", "--approve", "once"],
        "change a.txt",
    );
    assert!(
        output.status.success(),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    let events = events(&output);
    let results = results(&events);
    assert_eq!(results.len(), 2, "{events:?}");
    // Refused once, by the mode, naming the change and the way out; no card, no grant asked.
    assert_eq!(code(results[0]), "read_only_activity", "{:?}", results[0]);
    let sentence = results[0]["decision"]["sentence"].as_str().unwrap();
    assert!(
        sentence.starts_with("`plan` mode is read-only"),
        "{sentence}"
    );
    assert!(sentence.contains("`/mode agent`"), "{sentence}");
    assert!(!sentence.contains("search_tools"), "{sentence}");
    assert!(
        !events.iter().any(|e| e.to_string().contains("not_bound")),
        "{events:?}"
    );
    assert!(!events.iter().any(|e| e["type"] == "card"), "{events:?}");
    // The search says the edit tools are not available here instead of binding them.
    let found = results[1]["output"].as_str().unwrap();
    assert!(found.contains("in `plan` mode"), "{found}");
    assert!(found.contains("edit"), "{found}");
    assert!(
        !found
            .lines()
            .any(|l| l.starts_with("Bound for your next step:") && l.contains("edit")),
        "{found}"
    );
    assert_eq!(
        std::fs::read_to_string(proj.join("a.txt")).unwrap(),
        "before\n"
    );
}

#[test]
fn ask_mode_refuses_a_change_as_read_only_and_a_planning_tool_as_outside_its_list() {
    let sandbox = Sandbox::new();
    let proj = sandbox.root.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let _daemon = sandbox.start_daemon(&[]);
    let script = calls_script(&[
        ("write", json!({"path": "new.txt", "content": "x"})),
        ("plan_write", json!({"title": "t", "body": "b"})),
    ]);
    let output = sandbox.run_script(
        &proj,
        &script,
        &["--mode", "ask", "--approve", "once"],
        "write a file",
    );
    assert!(
        output.status.success(),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    let events = events(&output);
    let results = results(&events);
    assert_eq!(results.len(), 2, "{events:?}");
    assert_eq!(code(results[0]), "read_only_activity", "{:?}", results[0]);
    let sentence = results[0]["decision"]["sentence"].as_str().unwrap();
    assert!(
        sentence.starts_with("`ask` mode is read-only"),
        "{sentence}"
    );
    assert_eq!(code(results[1]), "mode_forbids", "{:?}", results[1]);
    let sentence = results[1]["decision"]["sentence"].as_str().unwrap();
    assert!(sentence.contains("`/mode agent`"), "{sentence}");
    assert!(!events.iter().any(|e| e["type"] == "card"), "{events:?}");
    assert!(!proj.join("new.txt").exists());
}

/// A sandbox whose configuration names the stand-in `nextflow` (playing a passing run), the
/// nf-core template copied to `proj/pipe`, and its daemon.
fn pipeline_sandbox() -> (Sandbox, std::path::PathBuf, Daemon) {
    let sandbox = Sandbox::new();
    sandbox.write_config(&format!(
        "[nextflow]\nbin = \"{}\"\n[tools]\nenv_passthrough = [\"FAKE_NXF_SCENARIO\"]\n",
        stand_in_nextflow().display(),
    ));
    let proj = sandbox.root.path().join("proj");
    copy_tree(&nfcore_template(), &proj.join("pipe"));
    let scenario = stand_in_scenario("pass.json");
    let daemon = sandbox.start_daemon_in(
        sandbox.root.path(),
        &[("FAKE_NXF_SCENARIO", scenario.to_str().unwrap())],
        &[],
    );
    (sandbox, proj, daemon)
}

/// The grants the ledger holds, answered cards' included.
fn grants(sandbox: &Sandbox) -> Vec<Value> {
    let output = sandbox.cli(&["ledger", "grants", "--json", "--all"]);
    assert!(output.status.success(), "{}", stderr(&output));
    stdout(&output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_pipeline_run_card_comes_only_for_valid_arguments_and_shows_the_command_line() {
    let (sandbox, proj, _daemon) = pipeline_sandbox();
    let pipe = std::fs::canonicalize(proj.join("pipe")).unwrap();
    // `outdir` inside `params`, a profile the operator did not list: refused by the
    // launches' own checks, before any card.
    let script = calls_script(&[
        (
            "run_built_pipeline",
            json!({"path": "pipe", "params": {"input": "sheet.csv", "outdir": "results"}}),
        ),
        ("test_pipeline", json!({"path": "pipe", "profile": "wave"})),
    ]);
    let output = sandbox.run_script(
        &proj,
        &script,
        &["--approve", "session"],
        "/run the pipeline",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let refused = events(&output);
    assert!(!refused.iter().any(|e| e["type"] == "card"), "{refused:#?}");
    let result = results(&refused)[0];
    assert_eq!(result["failed"], true, "{result}");
    let said = result["output"].as_str().unwrap();
    assert!(
        said.contains("parameter `outdir` is set by its own argument"),
        "{said}"
    );
    let tested = results(&refused)[1]["output"].as_str().unwrap();
    assert!(tested.contains("profile `wave`"), "{tested}");
    assert!(grants(&sandbox).is_empty(), "{:?}", grants(&sandbox));
    assert!(!pipe.join(".nextflow").exists(), "nothing ran");

    // Valid: one card, whose preview is the exact command line the run then uses.
    let script = calls_script(&[
        (
            "run_built_pipeline",
            json!({"path": "pipe", "profile": "test"}),
        ),
        (
            "search_tools",
            json!({"query": "wait for a background task"}),
        ),
        (
            "background_wait",
            json!({"task_id": "bg-1", "timeout_seconds": 120}),
        ),
    ]);
    let output = sandbox.run_script(
        &proj,
        &script,
        &["--approve", "session"],
        "/run the pipeline",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let cards: Vec<&Value> = events.iter().filter(|e| e["type"] == "card").collect();
    assert_eq!(cards.len(), 1, "{events:#?}");
    let preview = &cards[0]["preview"];
    assert_eq!(preview["kind"], "command", "{preview}");
    let text = preview["text"].as_str().unwrap();
    let mut lines = text.lines();
    let command = lines.next().unwrap();
    assert!(
        command.starts_with(&format!("$ nextflow run {} -name codaris-", pipe.display())),
        "{text}"
    );
    assert!(command.contains("-profile test"), "{text}");
    assert_eq!(
        lines.next(),
        Some(format!("in {}", pipe.display()).as_str())
    );
    let launched = results(&events)[0]["output"].as_str().unwrap();
    let shown = command.trim_start_matches("$ ");
    assert!(
        launched.contains(&format!("command: {shown}\n")),
        "the run is the one the card showed:\n{text}\n{launched}"
    );
    assert_eq!(grants(&sandbox).len(), 1);
}

#[test]
fn a_samplesheet_gate_error_names_the_launch_directory_and_the_file_beside_the_sheet() {
    let (sandbox, proj, _daemon) = pipeline_sandbox();
    let pipe = std::fs::canonicalize(proj.join("pipe")).unwrap();
    let sheets = pipe.join("sheets");
    std::fs::create_dir_all(sheets.join("reads")).unwrap();
    std::fs::write(sheets.join("reads/S1_R1.fastq.gz"), "x").unwrap();
    std::fs::write(
        sheets.join("sheet.csv"),
        "sample,fastq_1\nS1,reads/S1_R1.fastq.gz\n",
    )
    .unwrap();
    let script = calls_script(&[(
        "prepare_samplesheet_gate",
        json!({"path": "pipe", "samplesheet": "pipe/sheets/sheet.csv"}),
    )]);
    let output = sandbox.run_script(&proj, &script, &["--approve", "deny"], "/run the pipeline");
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let said = results(&events)[0]["output"].as_str().unwrap().to_owned();
    assert!(
        said.contains(&format!(
            "'reads/S1_R1.fastq.gz' does not exist (relative paths are resolved against the launch directory `{}`)",
            pipe.display()
        )),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "it exists beside the samplesheet, at `{}`",
            sheets.join("reads/S1_R1.fastq.gz").display()
        )),
        "{said}"
    );
}
