//! The Nextflow run tools through the real binaries, on the stand-in `nextflow` playing a
//! scenario for real (each task's script in a real work directory): a background run that
//! passes, one that fails diagnosed in both console styles, a run in progress, autopilot
//! repairing and giving up, the launches Codaris refuses, and the pipeline's tests (the
//! stand-in `nf-test`, or the test profile).

use std::path::{Path, PathBuf};

use codaris_test_support::nextflow::{
    copy_tree, nfcore_template, stand_in_nextflow, stand_in_nftest,
};
use codaris_test_support::sandbox::{Daemon, Sandbox, calls_script, events, stderr};
use serde_json::{Value, json};

/// The stand-in's scenario files.
fn scenario(name: &str) -> PathBuf {
    stand_in_nextflow()
        .parent()
        .map(|dir| dir.join("scenarios").join(name))
        .expect("the stand-in's directory")
}

/// A sandbox whose configuration names the stand-in, the nf-core template copied to
/// `proj/pipe`, and a daemon whose runs play `scenario` (in agent mode when `agent`).
fn setup(scenario_file: &str, agent: bool) -> (Sandbox, PathBuf, Daemon) {
    let agent_env: &[(&str, &str)] = if agent {
        &[("NXF_AGENT_MODE", "true")]
    } else {
        &[]
    };
    setup_with(scenario_file, agent_env)
}

/// [`setup`] with the stand-in `nf-test` configured too and more environment for the daemon.
fn setup_with(scenario_file: &str, env: &[(&str, &str)]) -> (Sandbox, PathBuf, Daemon) {
    let sandbox = Sandbox::new();
    // The stand-ins read their scenario from the environment, which commands get only
    // through the allowlist.
    sandbox.write_config(&format!(
        "[nextflow]\nbin = \"{}\"\nnf_test = \"{}\"\n[tools]\nenv_passthrough = [\"FAKE_NXF_SCENARIO\", \"FAKE_NFTEST_SCENARIO\"]\n",
        stand_in_nextflow().display(),
        stand_in_nftest().display()
    ));
    let proj = sandbox.root.path().join("proj");
    copy_tree(&nfcore_template(), &proj.join("pipe"));
    let scenario = scenario(scenario_file);
    let mut all = vec![("FAKE_NXF_SCENARIO", scenario.to_str().unwrap_or_default())];
    all.extend_from_slice(env);
    let daemon = sandbox.start_daemon_in(sandbox.root.path(), &all, &[]);
    (sandbox, proj, daemon)
}

/// One turn whose model makes `calls`, one per round, with cards answered `approve`: the
/// turn's events.
fn turn(sandbox: &Sandbox, proj: &Path, calls: &[(&str, Value)], approve: &str) -> Vec<Value> {
    let script = calls_script(calls);
    let output = sandbox.run_script(
        proj,
        &script,
        &["--permission-mode", "accept_edits", "--approve", approve],
        "/run the pipeline",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    events(&output)
}

/// The output of each tool result, in order.
fn results(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .map(|e| e["output"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Binds the background tools for the rest of the turn (the `/run` row has the run tools).
fn bind_waiting() -> (&'static str, Value) {
    (
        "search_tools",
        json!({"query": "wait for a background task"}),
    )
}

fn wait_for_run() -> (&'static str, Value) {
    (
        "background_wait",
        json!({"task_id": "bg-1", "timeout_seconds": 120}),
    )
}

/// The events of one kind.
fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

#[test]
fn a_background_run_is_approved_for_its_pipeline_passes_and_reports_its_status() {
    let (sandbox, proj, _daemon) = setup("pass.json", false);
    let events = turn(
        &sandbox,
        &proj,
        &[
            bind_waiting(),
            (
                "run_built_pipeline",
                json!({"path": "pipe", "profile": "test"}),
            ),
            wait_for_run(),
            ("check_run_status", json!({"path": "pipe"})),
        ],
        "session",
    );
    let pipe = std::fs::canonicalize(proj.join("pipe")).unwrap();
    let cards = of_type(&events, "card");
    assert_eq!(cards.len(), 1, "{events:#?}");
    assert_eq!(cards[0]["capability"]["name"], "run_pipeline");
    assert_eq!(cards[0]["capability"]["path"], pipe.display().to_string());
    let out = results(&events);
    let launched = &out[1];
    let first = launched.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("launched run `codaris-")
            && first.ends_with("in the background (task bg-1)"),
        "{launched}"
    );
    assert!(launched.contains(&format!("work dir: {}", pipe.join("work").display())));
    assert!(launched.contains("-with-trace") && launched.contains("-ansi-log false"));
    assert!(launched.contains("follow it: check_run_status"));
    assert!(out[2].contains("exit code: 0"), "{}", out[2]);
    let status = &out[3];
    assert!(
        status.contains("state: finished") && status.contains("status: OK"),
        "{status}"
    );
    assert!(status.contains("tasks completed: 3"), "{status}");
    // The stand-in really ran each task's script in its work directory.
    assert!(pipe.join("results/multiqc/multiqc_report.html").is_file());
}

/// `analyze_run_log` and `debug_last_run` on the scenario whose FASTQC calls a program that
/// is not installed, with the console in `agent` mode or the classic one.
fn a_failing_run_is_diagnosed(agent: bool) {
    let (sandbox, proj, _daemon) = setup("repair.json", agent);
    let events = turn(
        &sandbox,
        &proj,
        &[
            bind_waiting(),
            ("run_built_pipeline", json!({"path": "pipe"})),
            wait_for_run(),
            ("analyze_run_log", json!({"path": "pipe"})),
            ("debug_last_run", json!({"path": "pipe"})),
        ],
        "session",
    );
    let out = results(&events);
    assert!(out[2].contains("exit code: 1"), "{}", out[2]);
    let analysis = &out[3];
    let style = if agent {
        "agent-mode console"
    } else {
        "classic console"
    };
    assert!(analysis.contains(style), "{analysis}");
    for needle in [
        "NFCORE_DEMO:DEMO:FASTQC (SAMPLE1_PE)",
        "127",
        "command not found",
        "work/",
    ] {
        assert!(analysis.contains(needle), "{needle} in {analysis}");
    }
    let debug = &out[4];
    for needle in [
        ".command.sh",
        "fastqc --quiet",
        "fastqc: command not found",
        ".exitcode",
        "127",
    ] {
        assert!(debug.contains(needle), "{needle} in {debug}");
    }
}

#[test]
fn a_failing_run_is_diagnosed_from_the_classic_console() {
    a_failing_run_is_diagnosed(false);
}

#[test]
fn a_failing_run_is_diagnosed_from_the_agent_mode_console() {
    a_failing_run_is_diagnosed(true);
}

#[test]
fn a_run_in_progress_shows_as_running_and_a_second_launch_or_a_test_is_refused() {
    let (sandbox, proj, _daemon) = setup("long.json", false);
    let release = proj.join("release");
    let events = turn(
        &sandbox,
        &proj,
        &[
            bind_waiting(),
            (
                "run_built_pipeline",
                json!({"path": "pipe", "params": {"release": release.display().to_string()}}),
            ),
            // Long enough for the first task to end; the second waits for `release`.
            (
                "background_wait",
                json!({"task_id": "bg-1", "timeout_seconds": 2}),
            ),
            ("check_run_status", json!({"path": "pipe"})),
            ("run_built_pipeline", json!({"path": "pipe"})),
            ("test_pipeline", json!({"path": "pipe"})),
            ("write", json!({"path": "release", "content": "go\n"})),
            wait_for_run(),
            ("check_run_status", json!({"path": "pipe"})),
        ],
        "session",
    );
    let out = results(&events);
    let name = out[1].split('`').nth(1).unwrap_or_default().to_owned();
    let running = &out[3];
    assert!(running.contains("state: running"), "{running}");
    assert!(
        running.contains("running: [") && running.contains("NFCORE_DEMO:DEMO:ALIGN (SAMPLE1_PE)"),
        "{running}"
    );
    let refused = &out[4];
    assert!(
        refused.contains(&format!("run `{name}`")) && refused.contains("is still running"),
        "{refused}"
    );
    assert!(
        out[5].starts_with("test_pipeline: run `") && out[5].contains("is still running"),
        "{}",
        out[5]
    );
    assert!(
        out[8].contains("state: finished") && out[8].contains("status: OK"),
        "{}",
        out[8]
    );
}

#[test]
fn autopilot_repairs_a_missing_program_and_resumes_with_the_passed_task_cached() {
    let (sandbox, proj, _daemon) = setup("repair.json", false);
    let module = "pipe/modules/nf-core/fastqc/main.nf";
    let events = turn(
        &sandbox,
        &proj,
        &[
            ("autopilot_pipeline", json!({"path": "pipe"})),
            (
                "edit",
                json!({"path": module, "oldString": "process FASTQC {", "newString": "process FASTQC { // repaired"}),
            ),
            ("autopilot_pipeline", json!({"path": "pipe"})),
            ("check_run_status", json!({"path": "pipe"})),
        ],
        "session",
    );
    let out = results(&events);
    let failed = &out[0];
    assert!(failed.starts_with("attempt 1 of 3 on "), "{failed}");
    for needle in [
        "failed",
        "fastqc: command not found",
        ".command.sh",
        "modules/nf-core/fastqc/main.nf",
        "attempt 2 resumes (-resume)",
    ] {
        assert!(failed.contains(needle), "{needle} in {failed}");
    }
    let passed = &out[2];
    assert!(
        passed.starts_with("attempt 2 of 3 on ") && passed.contains("succeeded"),
        "{passed}"
    );
    assert!(passed.contains("-resume"), "{passed}");
    assert!(out[3].contains("tasks cached: 1"), "{}", out[3]);
    // Each attempt told the person how it went, task by task.
    let progress: Vec<&str> = of_type(&events, "progress")
        .iter()
        .filter_map(|e| e["message"].as_str())
        .collect();
    assert!(
        progress
            .iter()
            .any(|m| m.starts_with("attempt 1 of 3: run `codaris-")),
        "{progress:?}"
    );
    assert!(
        progress
            .iter()
            .any(|m| m.starts_with("attempt 2 of 3") && m.ends_with("(-resume)")),
        "{progress:?}"
    );
    assert!(
        progress.contains(&"FAILED NFCORE_DEMO:DEMO:FASTQC (SAMPLE1_PE) (exit 127)"),
        "{progress:?}"
    );
    assert!(
        progress.contains(&"CACHED NFCORE_DEMO:DEMO:SEQTK_SAMPLE (SAMPLE1_PE)"),
        "{progress:?}"
    );
    assert!(
        progress.contains(&"COMPLETED NFCORE_DEMO:DEMO:MULTIQC"),
        "{progress:?}"
    );
}

#[test]
fn autopilot_gives_up_after_its_attempts_with_a_report_of_each() {
    let (sandbox, proj, _daemon) = setup("repair.json", false);
    let attempt = (
        "autopilot_pipeline",
        json!({"path": "pipe", "max_attempts": 2}),
    );
    let events = turn(
        &sandbox,
        &proj,
        &[attempt.clone(), attempt.clone(), attempt],
        "session",
    );
    let out = results(&events);
    assert!(
        out[1].contains("That was the last attempt (max_attempts 2)"),
        "{}",
        out[1]
    );
    let stopped = &out[2];
    assert!(stopped.contains("stopped: 2 attempts made"), "{stopped}");
    for n in ["1. run `codaris-", "2. run `codaris-"] {
        assert!(stopped.contains(n), "{n} in {stopped}");
    }
    assert!(
        stopped.contains("task `NFCORE_DEMO:DEMO:FASTQC (SAMPLE1_PE)` failed with exit 127"),
        "{stopped}"
    );
}

#[test]
fn launches_are_refused_without_a_grant_with_an_unlisted_profile_and_with_an_ungated_samplesheet() {
    let (sandbox, proj, _daemon) = setup("pass.json", false);
    let pipe = proj.join("pipe");
    std::fs::write(pipe.join("a_1.fastq.gz"), "x").unwrap();
    std::fs::write(pipe.join("sheet.csv"), "sample,fastq_1\nA,a_1.fastq.gz\n").unwrap();
    let denied = turn(
        &sandbox,
        &proj,
        &[("run_built_pipeline", json!({"path": "pipe"}))],
        "deny",
    );
    let result = of_type(&denied, "tool_result")[0].clone();
    assert_eq!(result["decision"]["verdict"], "deny", "{result}");
    assert!(!pipe.join(".nextflow").exists(), "nothing ran");

    let sheet = json!({"path": "pipe", "params": {"input": "sheet.csv"}});
    let events = turn(
        &sandbox,
        &proj,
        &[
            bind_waiting(),
            (
                "run_built_pipeline",
                json!({"path": "pipe", "profile": "test,wave"}),
            ),
            ("run_built_pipeline", sheet.clone()),
            (
                "prepare_samplesheet_gate",
                json!({"path": "pipe", "samplesheet": "pipe/sheet.csv"}),
            ),
            ("run_built_pipeline", sheet.clone()),
            wait_for_run(),
            (
                "write",
                json!({"path": "pipe/sheet.csv", "content": "sample,fastq_1\nB,a_1.fastq.gz\n"}),
            ),
            ("run_built_pipeline", sheet),
        ],
        "session",
    );
    let out = results(&events);
    assert!(
        out[1].contains("profile `wave` is not in the operator's allowlist"),
        "{}",
        out[1]
    );
    assert!(out[2].contains("has no passing gate"), "{}", out[2]);
    assert!(out[4].starts_with("launched run `codaris-"), "{}", out[4]);
    assert!(out[4].contains("samplesheet `input`"), "{}", out[4]);
    assert!(
        out[7].contains("changed since its gate passed"),
        "{}",
        out[7]
    );
}

#[test]
fn nf_test_results_are_reported_per_test_and_read_back_under_the_same_grant() {
    let failing = scenario("nftest-fail.json");
    let env = [("FAKE_NFTEST_SCENARIO", failing.to_str().unwrap_or_default())];
    let (sandbox, proj, _daemon) = setup_with("pass.json", &env);
    // The template comes with nf-test (its nf-test.config).
    assert!(proj.join("pipe/nf-test.config").is_file());
    let events = turn(
        &sandbox,
        &proj,
        &[
            ("test_pipeline", json!({"path": "pipe"})),
            ("check_test_result", json!({"path": "pipe"})),
            ("run_built_pipeline", json!({"path": "pipe"})),
        ],
        "session",
    );
    // One card: the grant for the pipeline covers its tests and its runs.
    let cards = of_type(&events, "card");
    assert_eq!(cards.len(), 1, "{events:#?}");
    assert_eq!(cards[0]["capability"]["name"], "run_pipeline");
    let out = results(&events);
    let tested = &out[0];
    assert!(
        tested.starts_with("tests of ")
            && tested.contains(": 1 passed, 2 failed, 1 skipped (nf-test) in "),
        "{tested}"
    );
    for needle in [
        "Assertion failed",
        "assert process.success",
        "snapshot mismatch",
        "md5,bbbb",
    ] {
        assert!(tested.contains(needle), "{needle} in {tested}");
    }
    let read_back = &out[1];
    assert!(read_back.starts_with("last test: nf-test"), "{read_back}");
    assert!(read_back.contains("snapshot mismatch"), "{read_back}");
    assert!(out[2].starts_with("launched run `codaris-"), "{}", out[2]);
    assert!(proj.join("pipe/.codaris/tests/nf-test.xml").is_file());
}

#[test]
fn without_nf_test_the_test_profile_runs_and_its_failing_task_is_named() {
    let (sandbox, proj, _daemon) = setup_with("repair.json", &[]);
    std::fs::remove_file(proj.join("pipe/nf-test.config")).unwrap();
    let events = turn(
        &sandbox,
        &proj,
        &[(
            "test_pipeline",
            json!({"path": "pipe", "profile": "docker"}),
        )],
        "session",
    );
    let out = results(&events);
    let tested = &out[0];
    assert!(tested.contains("(test profile)"), "{tested}");
    assert!(tested.contains("-profile test,docker"), "{tested}");
    assert!(
        tested.contains("NFCORE_DEMO:DEMO:FASTQC (SAMPLE1_PE)") && tested.contains("127"),
        "{tested}"
    );
    assert!(tested.contains("fastqc: command not found"), "{tested}");
}
