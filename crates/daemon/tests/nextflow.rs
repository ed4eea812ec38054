//! The Nextflow tools through the whole daemon, each forced by its slash command: the real
//! nf-core (from `.ci/nfcore.sh`'s virtual environment) run in the session's sandbox with the
//! stand-in `nextflow` of tests/fixtures, the samplesheet gate kept in the ledger, and the
//! compliance audit, autofix and plan on a copy of the real nf-core template.

use std::path::Path;

use codaris_test_support::nextflow::{
    copy_tree, nfcore_program, nfcore_template, stand_in_nextflow,
};

use codaris_proto::v1;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::InProcess;
use crate::turns::tool_results;

/// A daemon whose `[nextflow]` names the stand-in `nextflow` and `nf_core` (when given).
async fn daemon(nf_core: Option<&Path>) -> InProcess {
    let stand_in = stand_in_nextflow();
    let mut toml = format!("[nextflow]\nbin = \"{}\"\n", stand_in.display());
    if let Some(nf_core) = nf_core {
        toml.push_str(&format!("nf_core = \"{}\"\n", nf_core.display()));
    }
    InProcess::start_with_toml(&toml).await
}

/// Copies the committed nf-core template to `to`.
fn template(to: &Path) {
    copy_tree(&nfcore_template(), to);
}

/// The tool results of one bypass-mode turn that starts with `text` and makes `calls`, in
/// order: (tool, decision code, output).
async fn turn(
    daemon: &InProcess,
    text: &str,
    calls: &[(&str, Value)],
) -> Vec<(String, String, String)> {
    let mut rounds: Vec<Value> = calls
        .iter()
        .map(|(tool, args)| json!({"tool_calls": [{"name": tool, "args": args}]}))
        .collect();
    rounds.push(json!({"text": "done"}));
    tool_results(
        daemon,
        json!({"rounds": rounds}),
        v1::PermissionMode::Bypass,
        text,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extend_creates_a_pipeline_that_nf_core_lints_and_validates_clean() {
    let Some(nf_core) = nfcore_program() else {
        return;
    };
    let daemon = daemon(Some(&nf_core)).await;
    // Not the daemon's own directory: it holds the configuration file, which no tool changes.
    std::fs::create_dir(daemon.temp.path().join("proj")).unwrap();
    let results = turn(
        &daemon,
        "/extend make me a pipeline",
        &[
            (
                "clone_nfcore_base",
                json!({"name": "demo", "description": "A demo pipeline", "author": "Tester",
                       "outdir": "proj/nf-core-demo"}),
            ),
            ("lint_pipeline", json!({"path": "proj/nf-core-demo"})),
            ("validate_pipeline", json!({"path": "proj/nf-core-demo"})),
        ],
    )
    .await;
    let codes: Vec<&str> = results.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(
        codes,
        [
            "allowed_by_mode",
            "allowed_by_default",
            "allowed_by_default"
        ],
        "{results:#?}"
    );
    let created = &results[0].2;
    assert!(
        created.starts_with("created nf-core pipeline `nf-core/demo`"),
        "{created}"
    );
    for branch in ["master", "dev", "TEMPLATE"] {
        assert!(created.contains(branch), "{created}");
    }
    let pipeline = daemon.temp.path().join("proj/nf-core-demo");
    assert!(pipeline.join("main.nf").is_file() && pipeline.join(".git").is_dir());
    let lint = &results[1].2;
    assert!(lint.contains(": 0 failed,"), "{lint}");
    assert!(lint.contains("skipped offline: files_unchanged"), "{lint}");
    assert!(!lint.lines().any(|l| l.starts_with("failed:")), "{lint}");
    let validate = &results[2].2;
    assert!(validate.starts_with("passed"), "{validate}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lint_without_nf_core_says_what_to_install() {
    let daemon =
        InProcess::start_with_toml("[nextflow]\nnf_core = \"/nonexistent/bin/nf-core\"\n").await;
    template(&daemon.temp.path().join("pipe"));
    let results = turn(
        &daemon,
        "/extend lint it",
        &[("lint_pipeline", json!({"path": "pipe"}))],
    )
    .await;
    let (_, code, output) = &results[0];
    assert_eq!(code, "allowed_by_default");
    assert!(output.contains("pip install nf-core==4.2.1"), "{output}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gate_passes_a_good_sheet_and_fails_a_bad_one_in_nf_schema_words() {
    let daemon = daemon(None).await;
    let pipe = daemon.temp.path().join("pipe");
    template(&pipe);
    std::fs::create_dir_all(pipe.join("reads")).unwrap();
    for name in ["a_R1.fastq.gz", "a_R2.fastq.gz"] {
        std::fs::write(pipe.join("reads").join(name), "@r\nA\n+\nI\n").unwrap();
    }
    std::fs::write(
        pipe.join("good.csv"),
        "sample,fastq_1,fastq_2\nA,reads/a_R1.fastq.gz,reads/a_R2.fastq.gz\n",
    )
    .unwrap();
    std::fs::write(
        pipe.join("bad.csv"),
        "sample,fastq_1,fastq_2\nA B,reads/missing.fastq.gz,\n",
    )
    .unwrap();
    let results = turn(
        &daemon,
        "/run check the sheets",
        &[
            (
                "prepare_samplesheet_gate",
                json!({"path": "pipe", "samplesheet": "pipe/good.csv"}),
            ),
            (
                "prepare_samplesheet_gate",
                json!({"path": "pipe", "samplesheet": "pipe/bad.csv"}),
            ),
            // A sheet outside every root is refused before it is read.
            (
                "prepare_samplesheet_gate",
                json!({"path": "pipe", "samplesheet": "/etc/passwd"}),
            ),
        ],
    )
    .await;
    assert_eq!(results[0].2.trim_end(), "passed", "{results:#?}");
    let bad = &results[1].2;
    let mut lines = bad.lines();
    assert_eq!(lines.next(), Some("failed"), "{bad}");
    assert!(
        bad.contains("-> Entry 1: Error for field 'sample' (A B)"),
        "{bad}"
    );
    assert!(
        bad.contains("-> Entry 1: Error for field 'fastq_1' (reads/missing.fastq.gz)"),
        "{bad}"
    );
    assert_eq!(results[2].1, "read_outside_fence", "{results:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_is_pinned_to_report_only_and_lists_findings_as_compilers_do() {
    let daemon = daemon(None).await;
    let pipe = daemon.temp.path().join("pipe");
    template(&pipe);
    std::fs::write(
        pipe.join("modules/nf-core/fastqc/main.nf"),
        std::fs::read_to_string(pipe.join("modules/nf-core/fastqc/main.nf"))
            .unwrap()
            .replacen("label 'process_low'", "container 'ubuntu:latest'", 1),
    )
    .unwrap();
    let results = turn(
        &daemon,
        "/audit",
        &[
            (
                "run_compliance_autofix",
                json!({"path": "pipe", "report_only": true}),
            ),
            (
                "run_compliance_autofix",
                json!({"path": "pipe", "report_only": false}),
            ),
        ],
    )
    .await;
    let audit = &results[0].2;
    let finding = audit
        .lines()
        .find(|l| l.contains("[NF-PROCESS-RESOURCE-LABEL]"))
        .unwrap_or_else(|| panic!("{audit}"));
    assert!(
        finding.starts_with("modules/nf-core/fastqc/main.nf:"),
        "{finding}"
    );
    assert!(
        finding.contains(": [NF-PROCESS-RESOURCE-LABEL] "),
        "{finding}"
    );
    // The fixing form needs /remediate or /autofix: in an audit the call is pinned to its
    // report, and nothing changes.
    assert_eq!(&results[1].2, audit, "{results:#?}");
    assert!(!pipe.join(".codaris").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remediate_fixes_what_it_can_plans_the_rest_and_fix_applies_the_plan() {
    let daemon = daemon(None).await;
    let pipe = daemon.temp.path().join("pipe");
    template(&pipe);
    std::fs::remove_file(pipe.join("CHANGELOG.md")).unwrap();
    let results = turn(
        &daemon,
        "/remediate",
        &[(
            "run_compliance_autofix",
            json!({"path": "pipe", "report_only": false}),
        )],
    )
    .await;
    let fixed = &results[0].2;
    assert_eq!(results[0].1, "allowed_by_mode", "{results:#?}");
    assert!(fixed.starts_with("fixed 1 findings in 1 files"), "{fixed}");
    assert!(pipe.join("CHANGELOG.md").is_file(), "{fixed}");
    assert!(
        pipe.join(".codaris/remediation-plan.json").is_file(),
        "{fixed}"
    );

    let results = turn(
        &daemon,
        "/fix",
        &[("apply_remediation_plan", json!({"path": "pipe"}))],
    )
    .await;
    let applied = &results[0].2;
    assert!(applied.starts_with("applied 0 items"), "{applied}");
    assert!(applied.contains("left:\n0 findings"), "{applied}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn review_and_rules_answer_read_only() {
    let daemon = daemon(None).await;
    let pipe = daemon.temp.path().join("pipe");
    template(&pipe);
    let results = turn(
        &daemon,
        "/review",
        &[("review_pipeline", json!({"path": "pipe"}))],
    )
    .await;
    let pack = &results[0].2;
    for section in [
        "== structure",
        "== params",
        "== compliance",
        "== nf-core lint",
        "== read first",
    ] {
        assert!(pack.contains(section), "{section} missing:\n{pack}");
    }
    assert!(pack.contains("process FASTQC"), "{pack}");
    let results = turn(&daemon, "/rules", &[("list_compliance_rules", json!({}))]).await;
    let rules = &results[0].2;
    assert!(rules.lines().count() >= 20, "{rules}");
    assert!(rules.lines().all(|l| l.starts_with("NF-")), "{rules}");
}

/// A failed run left by the stand-in `nextflow` in a copy of the template: FastQC's script
/// fails with `command not found` (the repair scenario of tests/fixtures/nextflow).
fn failed_run(pipe: &Path) {
    template(pipe);
    let scenario = stand_in_nextflow()
        .parent()
        .unwrap()
        .join("scenarios/repair.json");
    let out = std::process::Command::new(stand_in_nextflow())
        .args(["run", "main.nf", "-with-trace", "-ansi-log", "false"])
        .current_dir(pipe)
        .env("FAKE_NXF_SCENARIO", scenario)
        .env_remove("NXF_AGENT_MODE")
        .env_remove("AGENT")
        .env_remove("CLAUDECODE")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_is_diagnosed_from_what_it_left_on_disk() {
    let daemon = daemon(None).await;
    let pipe = daemon.temp.path().join("pipe");
    failed_run(&pipe);
    let results = turn(
        &daemon,
        "/run why did my run fail?",
        &[
            ("check_run_status", json!({"path": "pipe"})),
            ("analyze_run_log", json!({"path": "pipe"})),
            ("debug_last_run", json!({"path": "pipe"})),
        ],
    )
    .await;
    let codes: Vec<&str> = results.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(codes, ["allowed_by_default"; 3], "{results:#?}");
    let status = &results[0].2;
    assert!(status.contains("failed"), "{status}");
    let analysis = &results[1].2;
    assert!(analysis.contains("FASTQC"), "{analysis}");
    assert!(analysis.contains("127"), "{analysis}");
    assert!(analysis.contains("command not found"), "{analysis}");
    assert!(analysis.contains("likely_cause"), "{analysis}");
    let task = &results[2].2;
    assert!(task.contains("FASTQC"), "{task}");
    assert!(task.contains("fastqc: command not found"), "{task}");
    assert!(task.contains("modules/nf-core/fastqc/main.nf"), "{task}");
    // An older run that is not there is named as not found, and outside the roots is refused.
    let results = turn(
        &daemon,
        "/run",
        &[
            (
                "analyze_run_log",
                json!({"path": "pipe", "run": "no_such_run"}),
            ),
            ("check_run_status", json!({"path": "/etc"})),
        ],
    )
    .await;
    assert!(results[0].2.contains("no_such_run"), "{results:#?}");
    assert_eq!(results[1].1, "read_outside_fence", "{results:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operators_rules_beside_the_configuration_join_the_audit() {
    let daemon = daemon(None).await;
    // The daemon read its configuration from `<temp>/config.toml`: its rules are `<temp>/rules`.
    std::fs::create_dir(daemon.temp.path().join("rules")).unwrap();
    std::fs::write(
        daemon.temp.path().join("rules/acme.toml"),
        r#"
[[rule]]
id = "ACME-NO-SCRATCH"
title = "No paths on /scratch"
severity = "error"
description = "Our clusters wipe /scratch nightly."
[rule.check]
kind = "forbidden_pattern"
files = ["**/*.config"]
pattern = '/scratch/'
message = "a path on /scratch"
"#,
    )
    .unwrap();
    let pipe = daemon.temp.path().join("pipe");
    template(&pipe);
    let config = pipe.join("conf/test.config");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}\nparams.scratch = '/scratch/me'\n")).unwrap();
    let results = turn(&daemon, "/rules", &[("list_compliance_rules", json!({}))]).await;
    assert!(
        results[0]
            .2
            .lines()
            .any(|l| l.starts_with("ACME-NO-SCRATCH ")),
        "{results:#?}"
    );
    let results = turn(
        &daemon,
        "/audit",
        &[(
            "run_compliance_autofix",
            json!({"path": "pipe", "report_only": true}),
        )],
    )
    .await;
    let audit = &results[0].2;
    assert!(
        audit.lines().any(|l| l.starts_with("conf/test.config:")
            && l.contains(": [ACME-NO-SCRATCH] error: a path on /scratch")),
        "{audit}"
    );
    // A broken rule file is the tool's one-line answer, naming the file.
    std::fs::write(
        daemon.temp.path().join("rules/bad.toml"),
        "[[rule]]\nid = 3\n",
    )
    .unwrap();
    let results = turn(&daemon, "/rules", &[("list_compliance_rules", json!({}))]).await;
    assert!(results[0].2.contains("bad.toml"), "{results:#?}");
    assert_eq!(results[0].2.lines().count(), 1, "{results:#?}");
}
