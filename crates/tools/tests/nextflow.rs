//! The Nextflow tools on their own (no daemon): the samplesheet gate kept and checked the way
//! the run tools check it before a launch, and the fence on every path they take.

#![allow(
    clippy::disallowed_methods,
    reason = "tests set up and inspect files directly, outside any fence"
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use codaris_tools::nextflow::{GateStore, MemoryGates, NextflowSetup, gate_holds, nextflow_tools};
use codaris_tools::shell::{PoolConfig, ShellPools};
use codaris_tools::{Fence, Tool, ToolContext, ToolError};
use serde_json::json;

#[path = "nextflow/readers.rs"]
mod readers;

#[path = "nextflow/compliance.rs"]
mod compliance;

type TestResult = Result<(), Box<dyn std::error::Error>>;

struct Env {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    ctx: ToolContext,
    tools: Vec<Arc<dyn Tool>>,
    gates: Arc<MemoryGates>,
}

fn env() -> Result<Env, Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    let base = tmp.path().canonicalize()?;
    let root = base.join("root");
    std::fs::create_dir_all(root.join("pipe/assets"))?;
    std::fs::create_dir_all(base.join("outside"))?;
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../nextflow/tests/fixtures/nfcore-template/assets/schema_input.json"),
        root.join("pipe/assets/schema_input.json"),
    )?;
    std::fs::write(root.join("pipe/a_1.fastq.gz"), "x")?;
    std::fs::write(
        root.join("pipe/sheet.csv"),
        "sample,fastq_1\nA,a_1.fastq.gz\n",
    )?;
    std::fs::write(
        base.join("outside/sheet.csv"),
        "sample,fastq_1\nA,a_1.fastq.gz\n",
    )?;
    let ctx = ToolContext {
        checkpoint: None,
        session_id: "s".into(),
        cwd: root.clone(),
        fence: Fence::new([root.clone()]),
        workspace: root.clone(),
        read: Default::default(),
    };
    let (pools, _notices) = ShellPools::new(PoolConfig::default());
    let gates = Arc::new(MemoryGates::default());
    let tools = nextflow_tools(&Arc::new(pools), &NextflowSetup::default(), gates.clone());
    Ok(Env {
        _tmp: tmp,
        root,
        ctx,
        tools,
        gates,
    })
}

impl Env {
    async fn gate(&self, args: serde_json::Value) -> Result<String, ToolError> {
        let tool = self
            .tools
            .iter()
            .find(|t| t.name() == "prepare_samplesheet_gate")
            .ok_or_else(|| ToolError::model("no gate tool"))?;
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

    fn holds(&self) -> Result<(), String> {
        let store: &dyn GateStore = self.gates.as_ref();
        gate_holds(
            store,
            &self.root.join("pipe"),
            &self.root.join("pipe/sheet.csv"),
        )
        .map(|_| ())
    }
}

#[tokio::test]
async fn a_launch_is_refused_once_the_sheet_or_the_schema_changed_since_its_gate() -> TestResult {
    let env = env()?;
    let refused = env.holds().unwrap_err();
    assert!(refused.contains("has no passing gate"), "{refused}");

    let answer = env
        .gate(json!({"path": "pipe", "samplesheet": "pipe/sheet.csv"}))
        .await?;
    assert_eq!(answer.lines().next(), Some("passed"), "{answer}");
    env.holds()?;

    // One byte more in the sheet: the gate no longer holds.
    std::fs::write(
        env.root.join("pipe/sheet.csv"),
        "sample,fastq_1\nA,a_1.fastq.gz\n\n",
    )?;
    let refused = env.holds().unwrap_err();
    assert!(
        refused.contains("samplesheet") && refused.contains("changed since"),
        "{refused}"
    );

    // Checked again it holds; a changed schema undoes it too.
    env.gate(json!({"path": "pipe", "samplesheet": "pipe/sheet.csv"}))
        .await?;
    env.holds()?;
    let schema = env.root.join("pipe/assets/schema_input.json");
    let text = std::fs::read_to_string(&schema)?;
    std::fs::write(&schema, format!("{text}\n"))?;
    let refused = env.holds().unwrap_err();
    assert!(refused.contains("input schema"), "{refused}");

    // A failing check takes the gate away, whatever passed before.
    std::fs::write(&schema, text)?;
    env.gate(json!({"path": "pipe", "samplesheet": "pipe/sheet.csv"}))
        .await?;
    env.holds()?;
    std::fs::write(
        env.root.join("pipe/sheet.csv"),
        "sample,fastq_1\nA B,a_1.fastq.gz\n",
    )?;
    let answer = env
        .gate(json!({"path": "pipe", "samplesheet": "pipe/sheet.csv"}))
        .await?;
    assert_eq!(answer.lines().next(), Some("failed"), "{answer}");
    assert!(env.holds().unwrap_err().contains("has no passing gate"));
    Ok(())
}

#[tokio::test]
async fn a_sheet_outside_the_roots_is_refused_even_through_a_symlink() -> TestResult {
    let env = env()?;
    let outside = env.root.join("../outside/sheet.csv");
    std::os::unix::fs::symlink(&outside, env.root.join("pipe/link.csv"))?;
    for sheet in ["../outside/sheet.csv", "pipe/link.csv"] {
        let refused = env
            .gate(json!({"path": "pipe", "samplesheet": sheet}))
            .await
            .unwrap_err();
        assert!(
            refused.to_string().contains("outside"),
            "{sheet}: {refused}"
        );
    }
    // A sheet inside that names a file outside: that file is not looked at, whether it exists
    // or not, and the sheet fails.
    std::fs::write(
        env.root.join("pipe/peek.csv"),
        "sample,fastq_1\nA,../../outside/sheet.csv\nB,../../outside/none.fq.gz\n",
    )?;
    let answer = env
        .gate(json!({"path": "pipe", "samplesheet": "pipe/peek.csv"}))
        .await?;
    assert_eq!(answer.lines().next(), Some("failed"), "{answer}");
    assert_eq!(
        answer
            .matches("is outside the folders Codaris may read")
            .count(),
        2,
        "{answer}"
    );
    assert!(!answer.contains("does not exist"), "{answer}");
    let refused = env.gate(json!({"path": "pipe"})).await.unwrap_err();
    assert!(
        refused.to_string().contains("`samplesheet` is required"),
        "{refused}"
    );
    let refused = env
        .gate(json!({"path": "pipe", "samplesheet": 7}))
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("must be a string"),
        "{refused}"
    );
    Ok(())
}
