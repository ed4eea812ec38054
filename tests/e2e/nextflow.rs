//! The Nextflow slash rows through the real binaries: `codaris run --json` with the scripted
//! provider, each command forcing its tool (the binding says so) and the tool answering; the
//! `/audit` call pinned to `report_only`; and `codaris status` naming the domain programs,
//! the stand-in `nextflow` as one.

use std::path::{Path, PathBuf};

use codaris_test_support::nextflow::{copy_tree, nfcore_template, stand_in_nextflow};

use codaris_test_support::sandbox::{Sandbox, events, json, stderr};
use serde_json::{Value, json as j};

/// A sandbox whose configuration names the stand-in `nextflow`, with the nf-core template
/// copied to `proj/pipe`.
fn setup() -> (Sandbox, PathBuf) {
    let sandbox = Sandbox::new();
    let stand_in = stand_in_nextflow();
    sandbox.write_config(&format!("[nextflow]\nbin = \"{}\"\n", stand_in.display()));
    let proj = sandbox.root.path().join("proj");
    copy_tree(&nfcore_template(), &proj.join("pipe"));
    (sandbox, proj)
}

/// One `codaris run --json` turn typed as `text` whose model calls `tool` with `args`: the
/// turn's events.
fn run(sandbox: &Sandbox, proj: &Path, text: &str, tool: &str, args: Value) -> Vec<Value> {
    let script = j!({"turns": [{"rounds": [
        {"tool_calls": [{"name": tool, "args": args}]},
        {"text": "done"}
    ]}]});
    let path = sandbox.root.path().join("script.json");
    std::fs::write(&path, script.to_string()).unwrap();
    let output = sandbox.cli(&[
        "run",
        "--json",
        "--script",
        path.to_str().unwrap(),
        "--cwd",
        proj.to_str().unwrap(),
        "--permission-mode",
        "bypass",
        text,
    ]);
    assert!(output.status.success(), "{text}: {}", stderr(&output));
    events(&output)
}

fn first(events: &[Value], kind: &str) -> Value {
    events
        .iter()
        .find(|e| e["type"] == kind)
        .cloned()
        .unwrap_or_else(|| panic!("no {kind} event in {events:#?}"))
}

#[test]
fn each_slash_row_forces_its_tool_and_the_audit_is_pinned_to_report_only() {
    let (sandbox, proj) = setup();
    let _daemon = sandbox.start_daemon(&[]);
    let rows: [(&str, &str, Value, &str); 7] = [
        ("/rules", "list_compliance_rules", j!({}), "NF-"),
        (
            "/review",
            "review_pipeline",
            j!({"path": "pipe"}),
            "review of ",
        ),
        // The model asks to fix; the audit's pin makes it the report.
        (
            "/audit",
            "run_compliance_autofix",
            j!({"path": "pipe", "report_only": false}),
            "0 findings",
        ),
        (
            "/review --compliance",
            "run_compliance_autofix",
            j!({"path": "pipe", "report_only": false}),
            "0 findings",
        ),
        (
            "/autofix",
            "run_compliance_autofix",
            j!({"path": "pipe", "report_only": false}),
            "fixed 0 findings",
        ),
        (
            "/remediate",
            "run_compliance_autofix",
            j!({"path": "pipe", "report_only": false}),
            "fixed 0 findings",
        ),
        (
            "/fix",
            "apply_remediation_plan",
            j!({"path": "pipe"}),
            "applied 0 items",
        ),
    ];
    for (text, tool, args, answer) in rows {
        let events = run(&sandbox, &proj, text, tool, args);
        let binding = first(&events, "binding");
        // The tools after the always-on ones are the forced ones (nothing was searched).
        let always_on = usize::try_from(binding["always_on"].as_u64().unwrap()).unwrap();
        let forced = &binding["tools"].as_array().unwrap()[always_on..];
        assert!(
            forced.iter().any(|t| t == tool) && binding["found"] == j!(0),
            "{text} did not force {tool}: {binding}"
        );
        // The model's `report_only: false` in an audit is decided and run as the report.
        let result = first(&events, "tool_result");
        assert_eq!(result["tool"], j!(tool), "{result}");
        assert_eq!(
            result["decision"]["verdict"],
            j!("allow"),
            "{text}: {result}"
        );
        let output = result["output"].as_str().unwrap();
        assert!(output.starts_with(answer), "{text}: {output}");
    }
    // The audit changed nothing; the remediation wrote only its plan.
    assert!(proj.join("pipe/.codaris/remediation-plan.json").is_file());
}

#[test]
fn status_names_the_domain_programs_and_the_stand_in_as_one() {
    let (sandbox, _) = setup();
    let _daemon = sandbox.start_daemon(&[]);
    // The probe runs in the background after start: wait for its answer.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let programs = loop {
        let status = json(&sandbox.cli(&["status", "--json"]));
        let programs = status["programs"].as_array().cloned().unwrap_or_default();
        if !programs.is_empty() {
            break programs;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no programs in {status}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let names: Vec<&str> = programs
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["nf-core", "nextflow", "git"]);
    let nextflow = &programs[1];
    assert!(
        nextflow["version"]
            .as_str()
            .is_some_and(|v| v.contains("fake")),
        "{programs:#?}"
    );
    assert!(
        nextflow["note"].as_str().unwrap().contains("stand-in"),
        "{nextflow}"
    );
    let human = codaris_test_support::sandbox::stdout(&sandbox.cli(&["status"]));
    assert!(
        human.contains("program    nextflow 25.10.4.fake"),
        "{human}"
    );
}
