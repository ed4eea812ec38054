//! `check_run_status` right after `run_built_pipeline` (issue #39, item 8): the run just
//! launched is reported, as starting until Nextflow has recorded it, never the run before it
//! under its name. The stand-in `nextflow` of tests/fixtures is held before it starts by a
//! wrapper while a file exists, which is the JVM's start made as long as the test needs.

#![allow(
    clippy::disallowed_methods,
    reason = "tests set up and inspect files directly, outside any fence"
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codaris_test_support::nextflow::{stand_in_nextflow, stand_in_scenario};
use codaris_tools::nextflow::{MemoryGates, NextflowSetup, nextflow_tools};
use codaris_tools::shell::{PoolConfig, ShellPools};
use codaris_tools::{Fence, Tool, ToolContext, ToolError};
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// How long a run may take to finish before the test gives up (a hang guard, not a speed
/// check: the stand-in's runs take a second or two).
const PATIENCE: Duration = Duration::from_secs(120);

struct Env {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    hold: PathBuf,
    ctx: ToolContext,
    tools: Vec<Arc<dyn Tool>>,
}

/// The stand-in behind a wrapper that waits while `hold` exists, then plays `pass.json`;
/// all inside the root, as the sandbox runs nothing else.
fn wrapper(bin: &Path, hold: &Path) -> std::io::Result<PathBuf> {
    let program = stand_in_nextflow();
    let copy = bin.join("nextflow.stand-in");
    std::fs::copy(&program, &copy)?;
    if let Some(helper) = program.parent().map(|p| p.join("fake_nextflow_run.py")) {
        std::fs::copy(&helper, bin.join("fake_nextflow_run.py"))?;
    }
    let scenario = bin.join("pass.json");
    std::fs::copy(stand_in_scenario("pass.json"), &scenario)?;
    let path = bin.join("nextflow");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nexport FAKE_NXF_SCENARIO='{}'\nwhile [ -e '{}' ]; do sleep 0.05; done\nexec '{}' \"$@\"\n",
            scenario.display(),
            hold.display(),
            copy.display()
        ),
    )?;
    let mut perms = std::fs::metadata(&path)?.permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&path, perms)?;
    Ok(path)
}

fn env() -> Result<Env, Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    let base = tmp.path().canonicalize()?;
    let root = base.join("root");
    let bin = root.join("bin");
    std::fs::create_dir_all(root.join("pipe"))?;
    std::fs::create_dir_all(&bin)?;
    std::fs::write(root.join("pipe/main.nf"), "workflow { }\n")?;
    std::fs::write(root.join("pipe/nextflow.config"), "profiles { test { } }\n")?;
    let hold = root.join("hold");
    let setup = NextflowSetup {
        nextflow: wrapper(&bin, &hold)?.to_string_lossy().into_owned(),
        // `unknown` is allowed here and unknown to the scenario: the stand-in stops on it
        // before it records the run, as Nextflow does on a profile it does not have.
        profiles: codaris_tools::Live::new(vec!["test".to_owned(), "unknown".to_owned()]),
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
        hold,
        ctx,
        tools,
    })
}

impl Env {
    async fn call(&self, name: &str, args: Value) -> Result<String, ToolError> {
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

    /// Launches a run; its name.
    async fn launch(&self, args: Value) -> Result<String, Box<dyn std::error::Error>> {
        // Nextflow's history can say `finished` a moment before the launched process has
        // exited, and a launch is refused while the previous run's process lives: wait for it.
        let start = Instant::now();
        let answer = loop {
            match self.call("run_built_pipeline", args.clone()).await {
                Err(e)
                    if e.to_string().contains("is still running") && start.elapsed() < PATIENCE =>
                {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                other => break other?,
            }
        };
        let name = answer
            .strip_prefix("launched run `")
            .and_then(|rest| rest.split_once('`'))
            .map(|(name, _)| name.to_owned())
            .ok_or_else(|| format!("no run name in {answer}"))?;
        Ok(name)
    }

    /// `check_run_status` of `pipe` until `done` holds of its answer.
    async fn status_until(
        &self,
        args: Value,
        done: impl Fn(&str) -> bool,
    ) -> Result<String, Box<dyn std::error::Error>> {
        let start = Instant::now();
        loop {
            let answer = self
                .call("check_run_status", args.clone())
                .await
                .unwrap_or_else(|e| e.to_string());
            if done(&answer) {
                return Ok(answer);
            }
            if start.elapsed() > PATIENCE {
                return Err(format!("gave up waiting; last answer:\n{answer}").into());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

#[tokio::test]
async fn check_run_status_right_after_a_launch_reports_the_new_run() -> TestResult {
    let env = env()?;
    let first = env.launch(json!({"path": "pipe"})).await?;
    env.status_until(json!({"path": "pipe"}), |a| {
        a.starts_with(&format!("run: {first}\n")) && a.contains("state: finished")
    })
    .await?;

    // The second run is held before Nextflow starts: no history row yet.
    std::fs::write(&env.hold, "")?;
    let second = env.launch(json!({"path": "pipe"})).await?;
    assert_ne!(first, second);
    for args in [
        json!({"path": "pipe"}),
        json!({"path": "pipe", "run": second}),
    ] {
        let answer = env.call("check_run_status", args.clone()).await?;
        assert!(
            answer.starts_with(&format!("run: {second}\nstate: starting\n")),
            "{args}: {answer}"
        );
        assert!(
            answer.contains(&format!("`{first}` (OK), is an earlier one")),
            "{args}: {answer}"
        );
    }
    // Asked by name, the earlier run is still reported as itself.
    let earlier = env
        .call("check_run_status", json!({"path": "pipe", "run": first}))
        .await?;
    assert!(earlier.starts_with(&format!("run: {first}\n")), "{earlier}");

    // Released, the new run is recorded and reported as itself.
    std::fs::remove_file(&env.hold)?;
    let done = env
        .status_until(json!({"path": "pipe"}), |a| {
            a.starts_with(&format!("run: {second}\n")) && a.contains("state: finished")
        })
        .await?;
    assert!(done.contains("status: OK"), "{done}");
    assert!(env.root.join("pipe/.nextflow/history").is_file());
    Ok(())
}

#[tokio::test]
async fn a_launch_that_ends_before_nextflow_records_it_says_so() -> TestResult {
    let env = env()?;
    let name = env
        .launch(json!({"path": "pipe", "profile": "unknown"}))
        .await?;
    let answer = env
        .status_until(json!({"path": "pipe"}), |a| {
            a.contains("state: ended before Nextflow recorded it")
        })
        .await?;
    assert!(answer.starts_with(&format!("run: {name}\n")), "{answer}");
    assert!(answer.contains("analyze_run_log"), "{answer}");
    Ok(())
}
