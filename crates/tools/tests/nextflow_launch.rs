//! The launch tools' checks on their own (no daemon, no grant: the policy decides that before
//! a call arrives): every path they take is held to the fence, the profile allowlist, the
//! arguments' shapes, and the samplesheet gate, each refused before anything starts.

#![allow(
    clippy::disallowed_methods,
    reason = "tests set up and inspect files directly, outside any fence"
)]

use std::path::PathBuf;
use std::sync::Arc;

use codaris_test_support::nextflow::{copy_tree, nfcore_template, stand_in_nextflow};
use codaris_tools::nextflow::{MemoryGates, NextflowSetup, nextflow_tools};
use codaris_tools::shell::{PoolConfig, ShellPools};
use codaris_tools::{Fence, Tool, ToolContext, ToolError};
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

struct Env {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    ctx: ToolContext,
    tools: Vec<Arc<dyn Tool>>,
}

fn env() -> Result<Env, Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    let base = tmp.path().canonicalize()?;
    let root = base.join("root");
    let outside = base.join("outside");
    copy_tree(&nfcore_template(), &root.join("pipe"));
    std::fs::create_dir_all(&outside)?;
    std::fs::write(
        outside.join("sheet.csv"),
        "sample,fastq_1\nA,a_1.fastq.gz\n",
    )?;
    std::fs::write(outside.join("params.json"), r#"{"input": "sheet.csv"}"#)?;
    let ctx = ToolContext {
        checkpoint: None,
        session_id: "s".into(),
        cwd: root.clone(),
        fence: Fence::new([root.clone()]),
        workspace: root.clone(),
        read: Default::default(),
    };
    let (pools, _notices) = ShellPools::new(PoolConfig::default());
    let setup = NextflowSetup {
        nextflow: stand_in_nextflow().display().to_string(),
        profiles: codaris_tools::Live::new(vec!["test".to_owned(), "docker".to_owned()]),
        ..NextflowSetup::default()
    };
    let tools = nextflow_tools(&Arc::new(pools), &setup, Arc::new(MemoryGates::default()));
    Ok(Env {
        _tmp: tmp,
        root,
        outside,
        ctx,
        tools,
    })
}

impl Env {
    /// The refusal of `tool` called with `args`.
    async fn refusal(&self, tool: &str, args: Value) -> String {
        let Some(found) = self.tools.iter().find(|t| t.name() == tool) else {
            return format!("no tool {tool}");
        };
        match found.call(&self.ctx, &args).await {
            Err(ToolError::Model { message }) => message,
            Err(other) => format!("not a refusal: {other}"),
            Ok(output) => format!("not refused: {output:?}"),
        }
    }
}

#[tokio::test]
async fn every_path_a_launch_takes_is_held_to_the_fence() -> TestResult {
    let env = env()?;
    let outside = env.outside.display().to_string();
    std::os::unix::fs::symlink(&env.outside, env.root.join("pipe/escape"))?;
    for tool in ["run_built_pipeline", "autopilot_pipeline"] {
        for (args, want) in [
            (json!({"path": outside}), "outside"),
            (json!({"path": "pipe/../../outside"}), "outside"),
            (json!({"path": "pipe/escape"}), "outside"),
            (
                json!({"path": "pipe", "params": {"input": "escape/sheet.csv"}}),
                "outside",
            ),
            (
                json!({"path": "pipe", "params": {"input": format!("{outside}/sheet.csv")}}),
                "outside",
            ),
            (
                json!({"path": "pipe", "params": {"input": "https://example.org/s.csv"}}),
                "is a URL",
            ),
            (
                json!({"path": "pipe", "params": {"input": "missing.csv"}}),
                "missing.csv",
            ),
        ] {
            let refused = env.refusal(tool, args.clone()).await;
            assert!(refused.contains(want), "{tool} {args}: {refused}");
            assert!(
                !refused.starts_with("not refused"),
                "{tool} {args}: {refused}"
            );
        }
    }
    for (args, want) in [
        (
            json!({"path": "pipe", "params_file": format!("{outside}/params.json")}),
            "outside",
        ),
        (
            json!({"path": "pipe", "launch_dir": format!("{outside}/run")}),
            "outside",
        ),
        (
            json!({"path": "pipe", "launch_dir": "pipe/.git/hooks"}),
            ".git",
        ),
        (
            json!({"path": "pipe", "outdir": format!("{outside}/results")}),
            "outside",
        ),
    ] {
        let refused = env.refusal("run_built_pipeline", args.clone()).await;
        assert!(refused.contains(want), "{args}: {refused}");
    }
    // Nothing started: no run left its files.
    assert!(!env.root.join("pipe/.nextflow").exists());
    assert!(!env.outside.join("run").exists());
    Ok(())
}

#[tokio::test]
async fn bad_arguments_and_unlisted_profiles_are_refused_with_one_line() -> TestResult {
    let env = env()?;
    for (tool, args, want) in [
        (
            "run_built_pipeline",
            json!({"path": "pipe", "profile": "wave"}),
            "profile `wave` is not in the operator's allowlist ([nextflow] profiles: test, docker)",
        ),
        (
            "run_built_pipeline",
            json!({"path": "pipe", "profile": "test,"}),
            "empty name",
        ),
        (
            "run_built_pipeline",
            json!({"path": "pipe", "params": ["input"]}),
            "`params` must be an object",
        ),
        (
            "run_built_pipeline",
            json!({"path": "pipe", "params": {"genomes": {"x": 1}}}),
            "is an object",
        ),
        (
            "run_built_pipeline",
            json!({"path": "pipe", "params": {"--x": 1}}),
            "not one Nextflow accepts",
        ),
        (
            "run_built_pipeline",
            json!({"path": "pipe", "params": {"outdir": "r"}}),
            "set by its own argument",
        ),
        (
            "run_built_pipeline",
            json!({"path": "pipe", "resume": "yes"}),
            "resume",
        ),
        (
            "run_built_pipeline",
            json!({"path": "pipe/assets"}),
            "has no main.nf",
        ),
        (
            "autopilot_pipeline",
            json!({"path": "pipe", "max_attempts": 0}),
            "from 1 to 10",
        ),
        (
            "autopilot_pipeline",
            json!({"path": "pipe", "max_attempts": "3"}),
            "from 1 to 10",
        ),
        (
            "autopilot_pipeline",
            json!({"path": "pipe", "profile": "conda"}),
            "not in the operator's allowlist",
        ),
    ] {
        let refused = env.refusal(tool, args.clone()).await;
        assert!(refused.contains(want), "{tool} {args}: {refused}");
        assert!(!refused.contains('\n'), "one line: {refused}");
    }
    Ok(())
}

#[tokio::test]
async fn a_samplesheet_in_a_params_file_needs_its_gate_too() -> TestResult {
    let env = env()?;
    let pipe = env.root.join("pipe");
    std::fs::write(pipe.join("sheet.csv"), "sample,fastq_1\nA,a_1.fastq.gz\n")?;
    std::fs::write(pipe.join("params.yaml"), "input: 'sheet.csv'\n")?;
    std::fs::write(pipe.join("block.yaml"), "input: >\n  sheet.csv\n")?;
    let refused = env
        .refusal(
            "run_built_pipeline",
            json!({"path": "pipe", "params_file": "pipe/params.yaml"}),
        )
        .await;
    assert!(refused.contains("has no passing gate"), "{refused}");
    let refused = env
        .refusal(
            "run_built_pipeline",
            json!({"path": "pipe", "params_file": "pipe/block.yaml"}),
        )
        .await;
    assert!(refused.contains("not written as a plain"), "{refused}");
    Ok(())
}

/// A work directory the chosen profile or the launch directory's config sets, `NXF_WORK` not
/// counting here (the test's own environment has none): one outside the roots is refused
/// before any card, by path, `..` or symlink; a cloud URL passes and the card says so.
#[tokio::test]
async fn a_work_dir_outside_the_roots_is_refused_before_the_card() -> TestResult {
    let env = env()?;
    let Some(tool) = env.tools.iter().find(|t| t.name() == "run_built_pipeline") else {
        return Err("no run_built_pipeline".into());
    };
    let card = |args: Value| {
        tool.card_check(&env.ctx, &args)
            .ok_or("no card check")
            .map(|checked| checked.map(|preview| preview.text))
    };
    let pipe = env.root.join("pipe");
    let mut config = std::fs::read_to_string(pipe.join("nextflow.config"))?;
    config.push_str("\nprofiles {\n  docker {\n    workDir = '/etc/x'\n  }\n}\n");
    std::fs::write(pipe.join("nextflow.config"), config)?;
    let launch = |name: &str, text: &str| -> Result<String, std::io::Error> {
        std::fs::create_dir_all(env.root.join(name))?;
        std::fs::write(env.root.join(name).join("nextflow.config"), text)?;
        Ok(name.to_owned())
    };
    let up = launch("up", "workDir = '../../outside'\n")?;
    let linked = launch("linked", "")?;
    std::os::unix::fs::symlink(&env.outside, env.root.join("linked/work"))?;
    let cloud = launch("cloud", "workDir = 's3://lab/work'\n")?;

    for (args, want) in [
        (
            json!({"path": "pipe", "profile": "docker"}),
            "the work dir `/etc/x` (`workDir` of profile `docker`",
        ),
        (
            json!({"path": "pipe", "launch_dir": up}),
            "the work dir `../../outside`",
        ),
        (
            json!({"path": "pipe", "launch_dir": linked}),
            "the work dir `work` → ",
        ),
    ] {
        match card(args.clone())? {
            Err(ToolError::Model { message }) => {
                assert!(message.contains(want), "{args}: {message}");
                assert!(message.contains("outside the session's roots"), "{message}");
                assert!(!message.contains('\n'), "{message}");
            }
            other => panic!("{args}: a card for {other:?}"),
        }
    }
    // Not chosen, the profile's setting does not count: the default is inside.
    let local = card(json!({"path": "pipe", "profile": "test"}))?.map_err(|e| e.to_string())?;
    assert!(
        local.contains(&format!(
            "work dir: {} (Nextflow's default)",
            pipe.join("work").display()
        )),
        "{local}"
    );
    let shown = card(json!({"path": "pipe", "launch_dir": cloud}))?.map_err(|e| e.to_string())?;
    assert!(
        shown.contains("work dir: s3://lab/work (`workDir` in ") && shown.contains("a cloud URL"),
        "{shown}"
    );
    Ok(())
}
