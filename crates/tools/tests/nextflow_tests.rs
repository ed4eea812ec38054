//! test_pipeline and check_test_result without a daemon: the stand-in `nf-test` and
//! `nextflow` of tests/fixtures, each behind a small wrapper that names its scenario, run in a
//! session's sandbox.

#![allow(
    clippy::disallowed_methods,
    reason = "tests set up and inspect files directly, outside any fence"
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use codaris_test_support::nextflow::{stand_in_nextflow, stand_in_nftest, stand_in_scenario};
use codaris_tools::nextflow::{MemoryGates, NextflowSetup, nextflow_tools};
use codaris_tools::shell::{PoolConfig, ShellPools};
use codaris_tools::{Fence, Tool, ToolContext, ToolError};
use serde_json::json;

type TestResult = Result<(), Box<dyn std::error::Error>>;

struct Env {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    ctx: ToolContext,
    tools: Vec<Arc<dyn Tool>>,
}

/// `program` behind a wrapper that sets `var` to the scenario `scenario`, all copied into
/// `dir` (inside the fence: the sandbox runs and reads nothing else).
fn wrapper(
    dir: &Path,
    name: &str,
    program: &Path,
    var: &str,
    scenario: &str,
) -> std::io::Result<PathBuf> {
    let path = dir.join(name);
    let copy = dir.join(format!("{name}.stand-in"));
    std::fs::copy(program, &copy)?;
    if let Some(helper) = program.parent().map(|p| p.join("fake_nextflow_run.py")) {
        std::fs::copy(&helper, dir.join("fake_nextflow_run.py"))?;
    }
    let played = dir.join(scenario);
    std::fs::copy(stand_in_scenario(scenario), &played)?;
    let script = format!(
        "#!/bin/sh\nexport {var}='{}'\nexec '{}' \"$@\"\n",
        played.display(),
        copy.display()
    );
    std::fs::write(&path, script)?;
    let mut perms = std::fs::metadata(&path)?.permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&path, perms)?;
    Ok(path)
}

/// A pipeline at `root/pipe` (with nf-test when `nftest`), the stand-ins playing `scenario`.
fn env(nftest: bool, scenario: &str) -> Result<Env, Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    let base = tmp.path().canonicalize()?;
    let root = base.join("root");
    let bin = root.join("bin");
    std::fs::create_dir_all(root.join("pipe"))?;
    std::fs::create_dir_all(&bin)?;
    std::fs::create_dir_all(base.join("outside"))?;
    std::fs::write(root.join("pipe/main.nf"), "workflow { }\n")?;
    std::fs::write(root.join("pipe/nextflow.config"), "profiles { test { } }\n")?;
    if nftest {
        std::fs::write(root.join("pipe/nf-test.config"), "config { }\n")?;
    }
    let setup = NextflowSetup {
        nf_test: wrapper(
            &bin,
            "nf-test",
            &stand_in_nftest(),
            "FAKE_NFTEST_SCENARIO",
            scenario,
        )?
        .to_string_lossy()
        .into_owned(),
        nextflow: wrapper(
            &bin,
            "nextflow",
            &stand_in_nextflow(),
            "FAKE_NXF_SCENARIO",
            scenario,
        )?
        .to_string_lossy()
        .into_owned(),
        ..NextflowSetup::default()
    };
    let ctx = ToolContext {
        checkpoint: None,
        session_id: "s".into(),
        cwd: root.clone(),
        fence: Fence::new([root.clone()]),
        workspace: root.clone(),
        read: Default::default(),
    };
    let (pools, _notices) = ShellPools::new(PoolConfig::default());
    let tools = nextflow_tools(&Arc::new(pools), &setup, Arc::new(MemoryGates::default()));
    Ok(Env {
        _tmp: tmp,
        root,
        ctx,
        tools,
    })
}

impl Env {
    async fn call(&self, name: &str, args: serde_json::Value) -> Result<String, ToolError> {
        let tool = self
            .tools
            .iter()
            .find(|t| t.name() == name)
            .ok_or_else(|| ToolError::model("no such tool"))?;
        let output = tool.call(&self.ctx, &args).await?;
        Ok(output
            .content
            .iter()
            .filter_map(|c| match c {
                codaris_tools::Content::Text(text) => Some(text.clone()),
                codaris_tools::Content::Image { .. } => None,
            })
            .collect())
    }
}

/// The model's error sentence; anything else (an answer, a fatal error) as the same text
/// marked, which the callers' assertions then reject.
fn refused(result: Result<String, ToolError>) -> String {
    match result {
        Err(ToolError::Model { message }) => message,
        other => format!("NOT REFUSED: {other:?}"),
    }
}

#[tokio::test]
async fn nf_test_passing_answers_every_test_passed() -> TestResult {
    let env = env(true, "nftest-pass.json")?;
    let text = env.call("test_pipeline", json!({"path": "pipe"})).await?;
    let first = text.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("tests of pipe: 2 passed, 0 failed, 0 skipped (nf-test) in "),
        "{text}"
    );
    assert!(
        text.contains("passed   Test Process FASTQC > sarscov2 single-end [fastq]"),
        "{text}"
    );
    assert!(env.root.join("pipe/.codaris/tests/nf-test.xml").is_file());
    assert!(env.root.join("pipe/.codaris/tests/nf-test.tap").is_file());
    Ok(())
}

#[tokio::test]
async fn nf_test_failing_shows_the_assertion_and_the_snapshot_diff() -> TestResult {
    let env = env(true, "nftest-fail.json")?;
    let text = env.call("test_pipeline", json!({"path": "pipe"})).await?;
    assert!(
        text.starts_with("tests of pipe: 1 passed, 2 failed, 1 skipped (nf-test) in "),
        "{text}"
    );
    assert!(
        text.contains("FAILED   Test Process FASTQC > sarscov2 paired-end [fastq]"),
        "{text}"
    );
    assert!(
        text.contains("  assertion:\n    Assertion failed: "),
        "{text}"
    );
    assert!(text.contains("  snapshot mismatch:"), "{text}");
    assert!(text.contains("\"multiqc_report.html:md5,bbbb\""), "{text}");
    assert!(
        text.contains("skipped  Test Workflow NFCORE_DEMO > stub run"),
        "{text}"
    );
    // check_test_result reads the same back, without the run.
    let again = env
        .call("check_test_result", json!({"path": "pipe"}))
        .await?;
    assert!(again.starts_with("last test: nf-test, started "), "{again}");
    assert!(again.contains(", exit code 1\n"), "{again}");
    assert!(again.contains("  snapshot mismatch:"), "{again}");
    Ok(())
}

#[tokio::test]
async fn the_test_profile_run_passing_lists_its_tasks() -> TestResult {
    let env = env(false, "pass.json")?;
    let text = env
        .call(
            "test_pipeline",
            json!({"path": "pipe", "profile": "docker"}),
        )
        .await?;
    assert!(
        text.starts_with("tests of pipe: 3 passed, 0 failed, 0 skipped (test profile) in "),
        "{text}"
    );
    assert!(
        text.contains(" -profile test,docker")
            && text.contains(" -with-trace ")
            && text.contains(" -name codaris-"),
        "{text}"
    );
    assert!(text.contains("passed   NFCORE_DEMO:DEMO:MULTIQC"), "{text}");
    Ok(())
}

#[tokio::test]
async fn the_test_profile_run_failing_names_the_task_and_its_exit() -> TestResult {
    let env = env(false, "repair.json")?;
    let text = env.call("test_pipeline", json!({"path": "pipe"})).await?;
    assert!(
        text.starts_with("tests of pipe: 1 passed, 1 failed, "),
        "{text}"
    );
    assert!(
        text.contains("FAILED   NFCORE_DEMO:DEMO:FASTQC (SAMPLE1_PE): FAILED, exit 127"),
        "{text}"
    );
    assert!(text.contains("the failing task:"), "{text}");
    Ok(())
}

#[tokio::test]
async fn check_test_result_before_any_test_says_so() -> TestResult {
    let env = env(true, "nftest-pass.json")?;
    let why = refused(env.call("check_test_result", json!({"path": "pipe"})).await);
    assert!(
        why.contains("test_pipeline has not run on this pipeline"),
        "{why}"
    );
    Ok(())
}

#[tokio::test]
async fn an_unlisted_profile_is_refused_before_anything_runs() -> TestResult {
    let env = env(false, "pass.json")?;
    let why = refused(
        env.call("test_pipeline", json!({"path": "pipe", "profile": "wave"}))
            .await,
    );
    assert!(
        why.contains("profile `wave` is not in the operator's allowlist"),
        "{why}"
    );
    assert!(!env.root.join("pipe/work").exists());
    Ok(())
}

#[tokio::test]
async fn paths_out_of_the_fence_are_refused() -> TestResult {
    let env = env(true, "nftest-pass.json")?;
    for path in ["../outside", "/etc", "pipe/../../outside"] {
        for tool in ["test_pipeline", "check_test_result"] {
            let why = refused(env.call(tool, json!({"path": path})).await);
            assert!(!why.starts_with("NOT REFUSED"), "{tool} {path}: {why}");
        }
    }
    // A `.codaris` planted as a symlink out of the fence is not followed.
    let outside = env.root.join("../outside");
    std::os::unix::fs::symlink(&outside, env.root.join("pipe/.codaris"))?;
    let why = refused(env.call("test_pipeline", json!({"path": "pipe"})).await);
    assert!(why.contains("is a symlink"), "{why}");
    assert!(!outside.join("tests").exists());
    let why = refused(env.call("check_test_result", json!({"path": "pipe"})).await);
    assert!(why.contains("is a symlink"), "{why}");
    Ok(())
}

/// A test profile's run writes its tasks where the pipeline's config says, as a launch does:
/// a `workDir` outside the session's roots, or a folder inside that is a symlink leading out,
/// is refused before anything runs (no reports' folder made), and the card of one inside
/// shows where its tasks go. nf-test is not judged by it: it gives each test a work
/// directory of its own (`-w`) under the pipeline's `.nf-test`.
#[tokio::test]
async fn a_test_profile_run_s_work_dir_outside_the_roots_is_refused() -> TestResult {
    let env = env(false, "pass.json")?;
    let outside = env.root.join("../outside").canonicalize()?;
    let config = env.root.join("pipe/nextflow.config");
    let set_work_dir = |dir: &str| {
        std::fs::write(
            &config,
            format!("profiles {{ test {{ workDir = '{dir}' }} }}\n"),
        )
    };
    set_work_dir(&outside.display().to_string())?;
    let why = refused(env.call("test_pipeline", json!({"path": "pipe"})).await);
    assert!(
        why.starts_with("test_pipeline: refused: the work dir ")
            && why.contains("is outside the session's roots"),
        "{why}"
    );
    assert!(!env.root.join("pipe/.codaris").exists());

    std::os::unix::fs::symlink(&outside, env.root.join("pipe/scratch"))?;
    set_work_dir("scratch")?;
    let why = refused(env.call("test_pipeline", json!({"path": "pipe"})).await);
    assert!(why.contains("is outside the session's roots"), "{why}");
    assert!(std::fs::read_dir(&outside)?.next().is_none());

    // Inside the roots: the card says where, and the tests run.
    set_work_dir("tmp-work")?;
    let tool = env
        .tools
        .iter()
        .find(|t| t.name() == "test_pipeline")
        .ok_or("no test_pipeline")?;
    let card = tool
        .card_check(&env.ctx, &json!({"path": "pipe"}))
        .ok_or("no card check")??;
    let expected = format!("work dir: {} (", env.root.join("pipe/tmp-work").display());
    assert!(card.text.contains(&expected), "{}", card.text);
    let text = env.call("test_pipeline", json!({"path": "pipe"})).await?;
    assert!(text.starts_with("tests of pipe: "), "{text}");
    Ok(())
}

#[tokio::test]
async fn an_nf_test_run_is_not_judged_by_the_pipeline_s_work_dir() -> TestResult {
    let env = env(true, "nftest-pass.json")?;
    std::fs::write(
        env.root.join("pipe/nextflow.config"),
        "profiles { test { workDir = '/elsewhere/work' } }\n",
    )?;
    let text = env.call("test_pipeline", json!({"path": "pipe"})).await?;
    assert!(text.starts_with("tests of pipe: "), "{text}");
    Ok(())
}
